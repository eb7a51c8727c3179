//! Syncing a segment (group commit: see `crate::group_commit`).

use super::*;

impl LogSegment {
    /// The whole pages below `synced` of a banded log stored as records
    /// (not in blocks) that its last drop left cached, once they are
    /// [`LOG_BYTES_PER_CACHE_DROP`] or more: the range to let go from the
    /// page cache, marked as let go. The last, partial page stays (the
    /// next write rewrites it).
    fn cache_to_drop(&self, a: &mut AppendState, synced: u64) -> Option<(u64, u64)> {
        let end = synced & !4095;
        if self.blocks.is_some()
            || !a.span.banded
            || end < a.cache_dropped + LOG_BYTES_PER_CACHE_DROP
        {
            return None;
        }
        let from = std::mem::replace(&mut a.cache_dropped, end);
        Some((from, end - from))
    }

    /// Makes the log durable at least up to offset `upto`. Returns true if
    /// this call synced the file (false: already durable, or covered by
    /// another thread's sync). Everything appended until then, this
    /// thread's record and those of the threads waiting, goes into one
    /// sync. (One at a time: two syncs of a segment at once were slower
    /// with 8 and 32 writers, 20.8K against 22-24K and 51K against 59-65K
    /// puts/s, and wrote more.)
    pub fn sync_to(&self, upto: u64) -> Result<bool> {
        let synced = self.synced.commit(
            DurableMark {
                len: upto,
                counter: 0,
            },
            || {
                let mark = self.flush_mark()?;
                self.file.sync().map_err(|e| Error::io(&self.path, e))?;
                Ok(mark)
            },
            || {
                // A failed fsync may have dropped the dirty pages it
                // reported: a later one succeeding proves nothing.
                Error::io(
                    &self.path,
                    std::io::Error::other("an earlier sync of this log failed"),
                )
            },
        )?;
        let Some(mark) = synced else {
            return Ok(false);
        };
        // Under the append lock, which an append holds while it marks the
        // log dirty: read outside it, a record appended after the mark
        // could have its flag cleared, and a checkpoint would then skip
        // syncing it (and drop the journal that holds it).
        let mut a = self.append.lock();
        if a.len == mark.len {
            self.dirty.store(false, Ordering::Release);
        }
        // The last page went to the device: the next write rewrites it
        // whole (see `write_pages`).
        a.last_page_write = None;
        let to_drop = self.cache_to_drop(&mut a, mark.len);
        drop(a);
        if let Some((from, len)) = to_drop {
            self.file.drop_cached(from, len);
        }
        Ok(true)
    }
}
