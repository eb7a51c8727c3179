//! Write batches: many puts and deletes, all or nothing.
//!
//! 1. Check every key and value and the batch's size (before any I/O).
//!    Sort the operations by key; of two on one key, the later wins.
//! 2. Announce the batch's key range in the pending-operations array and
//!    take a version no other write or snapshot has
//!    (`Versions::begin_batch`). From here until step 5, a scan or
//!    snapshot at or above that version waits for the batch, and a get of
//!    a key in the range reads from such a snapshot (`DbInner::get_at`).
//! 3. In `Sync` mode, record the batch's intent in `BATCHES`, synced.
//! 4. Apply every operation through the one write path with the batch's
//!    version (`DbInner::apply`): each record goes to its chunk's log and
//!    munk. Any failure poisons the store before step 5, so no checkpoint
//!    can record a version at or past the batch's.
//! 5. Clear the announcement: readers see the whole batch at once.
//! 6. In `Sync` mode, sync every log the batch touched, then record its
//!    commit in `BATCHES`, synced; a crash before that hides the batch at
//!    the next open (`recovery::batches`). In `Buffered` mode a checkpoint
//!    at or above the version waited for the batch, so recovery keeps all
//!    of it or none.
//! 7. Queue the maintenance each touched chunk needs.

use super::DbInner;
use crate::batch::MAX_BATCH_SIZE;
use crate::entry::MAX_VALUE_SIZE;
use crate::error::{Error, Result};
use crate::options::Durability;
use crate::stats;
use std::sync::Arc;

impl DbInner {
    /// Returns the batch's version (0 for an empty batch).
    pub(crate) fn write_batch(&self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<u64> {
        let mut bytes = 0usize;
        for (key, value) in ops {
            super::write::check_key(key)?;
            let value_len = value.as_ref().map_or(0, Vec::len);
            if value_len > MAX_VALUE_SIZE {
                return Err(Error::InvalidArgument(format!(
                    "value of {value_len} bytes exceeds the limit of {MAX_VALUE_SIZE}"
                )));
            }
            bytes += key.len() + value_len;
        }
        if bytes > MAX_BATCH_SIZE {
            return Err(Error::InvalidArgument(format!(
                "batch of {bytes} bytes exceeds the limit of {MAX_BATCH_SIZE}"
            )));
        }
        self.refuse_if_read_only()?;
        self.check_poison()?;
        // Sorted by key, the last operation on each key kept.
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by(|&a, &b| ops[a].0.cmp(&ops[b].0).then(a.cmp(&b)));
        order.dedup_by(|later, earlier| {
            let same = ops[*later].0 == ops[*earlier].0;
            if same {
                *earlier = *later;
            }
            same
        });
        let (Some(&first), Some(&last)) = (order.first(), order.last()) else {
            return Ok(0);
        };
        let sync = self.opts.durability == Durability::Sync;
        let ticket = self.versions.begin_batch(&ops[first].0, Some(&ops[last].0));
        let version = ticket.version;
        let mut applied = Vec::with_capacity(order.len());
        let run = (|| {
            if sync {
                self.batch_log.intent(self.storage.as_ref(), version)?;
            }
            crate::failpoint::failpoint!(self, "batch.after_intent");
            for (n, &i) in order.iter().enumerate() {
                let (key, value) = &ops[i];
                applied.push(self.apply(key, value.as_deref(), Some(version))?);
                if n == 0 {
                    crate::failpoint::failpoint!(self, "batch.after_first_record");
                }
            }
            Ok(())
        })();
        if let Err(e) = run {
            // Poisoned before the announcement clears: no checkpoint
            // records this version, and readers see the batch's part only
            // until the store is reopened, which hides it.
            self.poison_with(format!("a write batch failed part way: {e}"));
            drop(ticket);
            return Err(e);
        }
        drop(ticket);

        // One entry per touched chunk: its funk and the furthest record end.
        let mut touched: Vec<&super::write::Applied> = Vec::new();
        let mut ends: Vec<u64> = Vec::new();
        for a in &applied {
            match touched.iter().position(|t| Arc::ptr_eq(&t.funk, &a.funk)) {
                Some(p) => ends[p] = ends[p].max(a.end),
                None => {
                    touched.push(a);
                    ends.push(a.end);
                }
            }
        }
        if sync {
            self.sync_touched(&touched, &ends)?;
            crate::failpoint::failpoint!(self, "batch.before_commit");
            if let Err(e) = self.batch_log.commit(self.storage.as_ref(), version) {
                return self.poison(e);
            }
        }
        stats::add(&self.counters.local().batches, 1);
        for t in touched {
            self.after_apply(t);
        }
        Ok(version)
    }

    /// Syncs the logs a `Sync` batch touched, up to its records. Several
    /// are synced at once from up to `SYNC_THREADS` threads: concurrent
    /// fsyncs of files on one file system share its journal commits.
    fn sync_touched(&self, touched: &[&super::write::Applied], ends: &[u64]) -> Result<()> {
        let work: Vec<(&crate::funk::Funk, u64)> = touched
            .iter()
            .map(|t| &*t.funk)
            .zip(ends.iter().copied())
            .collect();
        let threads = SYNC_THREADS.min(work.len());
        if threads <= 1 {
            for (funk, end) in work {
                self.sync_applied(funk, end)?;
            }
            return Ok(());
        }
        let per = work.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = work
                .chunks(per)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .try_for_each(|&(funk, end)| self.sync_applied(funk, end))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidArgument("sync thread panicked".into()))
                    })
                })
                .collect::<Result<Vec<()>>>()
                .map(|_| ())
        })
    }
}

/// Threads a `Sync` batch syncs its logs from.
const SYNC_THREADS: usize = 8;
