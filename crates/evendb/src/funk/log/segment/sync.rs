//! Syncing a segment: group commit (see the invariants of `segment`).

use super::*;

/// The durable end of a segment and whether a thread is syncing it (one
/// at a time: two syncs of a segment at once were slower with 8 and 32
/// writers, 20.8K against 22-24K and 51K against 59-65K puts/s, and wrote
/// more).
#[derive(Debug)]
pub(super) struct SyncState {
    pub(super) mark: DurableMark,
    pub(super) busy: bool,
    /// A sync failed: every later one fails too.
    pub(super) failed: bool,
}

impl LogSegment {
    /// Makes the log durable at least up to offset `upto`. Returns true if
    /// this call synced the file (false: already durable).
    pub fn sync_to(&self, upto: u64) -> Result<bool> {
        let mut state = self.synced.lock();
        loop {
            if state.mark.len >= upto {
                return Ok(false);
            }
            if state.failed {
                // A failed fsync may have dropped the dirty pages it
                // reported: a later one succeeding proves nothing.
                return Err(Error::io(
                    &self.path,
                    std::io::Error::other("an earlier sync of this log failed"),
                ));
            }
            if !state.busy {
                break;
            }
            self.sync_done.wait(&mut state);
        }
        state.busy = true;
        drop(state);
        // Everything appended until now, this thread's record and those of
        // the threads waiting, goes into this sync.
        let synced = self.flush_mark().and_then(|mark| {
            self.file.sync().map_err(|e| Error::io(&self.path, e))?;
            Ok(mark)
        });
        let mut state = self.synced.lock();
        state.busy = false;
        match &synced {
            Ok(mark) => {
                if mark.len > state.mark.len {
                    state.mark = *mark;
                }
            }
            Err(_) => state.failed = true,
        }
        drop(state);
        if let Ok(mark) = &synced {
            // Under the append lock, which an append holds while it marks
            // the log dirty: read outside it, a record appended after the
            // mark could have its flag cleared, and a checkpoint would
            // then skip syncing it (and drop the journal that holds it).
            let a = self.append.lock();
            if a.len == mark.len {
                self.dirty.store(false, Ordering::Release);
            }
        }
        // The waiters this sync covered return; one of the others syncs.
        self.sync_done.notify_all();
        synced.map(|_| true)
    }
}
