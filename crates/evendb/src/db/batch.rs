//! Write batches: many puts and deletes, all or nothing.
//!
//! 1. Check every key and value and the batch's size (before any I/O).
//!    Sort the operations by key; of two on one key, the later wins.
//! 2. Announce the batch's key range in the pending-operations array and
//!    take a version no other write or snapshot has
//!    (`Versions::begin_batch`). From here until step 5, a scan or
//!    snapshot at or above that version waits for the batch, and a get of
//!    a key in the range reads from such a snapshot (`DbInner::get_at`).
//! 3. In `Sync` mode, append the whole batch to the commit journal and
//!    wait for its (shared) fsync (`recovery::journal`).
//! 4. Apply every operation through the one write path with the batch's
//!    version (`DbInner::apply`): each record goes to its chunk's log and
//!    munk. Any failure poisons the store before step 5, so no checkpoint
//!    can record a version at or past the batch's.
//! 5. Clear the announcement: readers see the whole batch at once.
//! 6. `Sync`: the journal holds the batch durably, so an open after a
//!    crash replays it whole; the logs are synced later, by the
//!    checkpointer. `Buffered`: a checkpoint at or above the version
//!    waited for the batch, so recovery keeps all of it or none.
//! 7. Queue the maintenance each touched chunk needs.

use super::DbInner;
use crate::batch::MAX_BATCH_SIZE;
use crate::error::{Error, Result};
use crate::stats;
use std::sync::Arc;

impl DbInner {
    /// Returns the batch's version (0 for an empty batch).
    pub(crate) fn write_batch(&self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<u64> {
        let mut bytes = 0usize;
        for (key, value) in ops {
            super::write::check_key(key)?;
            super::write::check_value(value.as_deref())?;
            bytes += key.len() + value.as_ref().map_or(0, Vec::len);
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
        let ticket = self.versions.begin_batch(&ops[first].0, Some(&ops[last].0));
        let version = ticket.version;
        let mut applied = Vec::with_capacity(order.len());
        let mut journaled = None;
        let run = (|| {
            if let Some(j) = &self.journal {
                // The whole batch is durable before any record of it is
                // in a log: an open replays it whole after a crash.
                let list: Vec<(&[u8], Option<&[u8]>)> = order
                    .iter()
                    .map(|&i| (ops[i].0.as_slice(), ops[i].1.as_deref()))
                    .collect();
                let t = j.append(self.storage.as_ref(), version, &list)?;
                journaled = Some(t);
                if j.sync(t)? {
                    stats::add(&self.counters.local().journal_syncs, 1);
                }
            }
            crate::failpoint::failpoint!(self, "batch.after_journal");
            for (n, &i) in order.iter().enumerate() {
                let (key, value) = &ops[i];
                applied.push(self.apply(
                    key,
                    value.as_deref(),
                    super::write::Stamp::Given(version),
                )?);
                if n == 0 {
                    crate::failpoint::failpoint!(self, "batch.after_first_record");
                }
            }
            Ok(())
        })();
        if let Err(e) = run {
            // Poisoned before the announcement clears: no checkpoint
            // records this version (`Buffered`), and the journal, if the
            // batch reached it, replays it whole at the next open (`Sync`).
            // Readers of this process may see part of it until then.
            self.poison_with(format!("a write batch failed part way: {e}"));
            drop(ticket);
            return Err(e);
        }
        if let (Some(j), Some(t)) = (&self.journal, journaled) {
            j.applied(t);
        }
        drop(ticket);

        // One entry per touched chunk, for the maintenance it needs.
        let mut touched: Vec<&super::write::Applied> = Vec::new();
        for a in &applied {
            if !touched.iter().any(|t| Arc::ptr_eq(&t.funk, &a.funk)) {
                touched.push(a);
            }
        }
        stats::add(&self.counters.local().batches, 1);
        for t in touched {
            self.after_apply(t);
        }
        Ok(version)
    }
}
