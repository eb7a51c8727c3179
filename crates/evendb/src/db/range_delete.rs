//! Range and prefix deletes.
//!
//! 1. Check the bounds (before any I/O); an empty range is a no-op.
//! 2. Announce the range as a batch does and take a version no other
//!    write has (`Versions::begin_batch`): readers at or above it wait.
//! 3. Publish the range tombstone in the manifest (the commit point; a
//!    failure poisons the store), then in memory, where every read applies
//!    it from then on (`tombstones`); bump the generation of the chunks
//!    over the range so the row cache serves none of their old values.
//! 4. Clear the announcement. Once no reader needs what the tombstone
//!    deleted (checked now and after each checkpoint), queue a rebuild
//!    (`task::RECLAIM`) of each chunk over the range, which drops it: the
//!    space comes back.
//!
//! The call costs one manifest store and a pass over the chunk index:
//! proportional to the number of chunks, not of keys.

use super::DbInner;
use crate::chunk::task;
use crate::error::Result;
use crate::stats;
use crate::tombstones::RangeTombstone;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl DbInner {
    /// Deletes every key in `[lo, hi)` (`hi = None`: to the end). Returns
    /// the delete's version (0 for an empty range).
    pub(crate) fn delete_range(&self, lo: Vec<u8>, hi: Option<Vec<u8>>) -> Result<u64> {
        super::write::check_key(&lo)?;
        if let Some(h) = &hi {
            super::write::check_key(h)?;
        }
        self.refuse_if_read_only()?;
        self.check_poison()?;
        if hi.as_ref().is_some_and(|h| *h <= lo) {
            return Ok(0);
        }
        let ticket = self.versions.begin_batch(&lo, hi.as_deref());
        let t = RangeTombstone {
            lo,
            hi,
            version: ticket.version,
        };
        if let Err(e) = self.publish_tombstone(&t) {
            self.poison_with(format!("a range delete failed: {e}"));
            return Err(e);
        }
        self.tombstones.rcu(|cur| Arc::new(cur.with(t.clone())));
        for c in &self.chunks_over(&t) {
            c.generation.fetch_add(1, Ordering::AcqRel);
        }
        drop(ticket);
        stats::add(&self.counters.local().range_deletes, 1);
        self.reclaims.lock().push(t.clone());
        crate::failpoint::failpoint!(self, "range_delete.after_publish");
        self.schedule_reclaims()?;
        Ok(t.version)
    }

    /// Queues a rebuild (`task::RECLAIM`) of the chunks over each range
    /// delete no reader needs the data of any more (at or below the oldest
    /// needed version, which in `Buffered` mode is at or below the last
    /// checkpoint). Run after each range delete and each checkpoint.
    pub(crate) fn schedule_reclaims(&self) -> Result<()> {
        let ready: Vec<RangeTombstone> = {
            let mut pending = self.reclaims.lock();
            if pending.is_empty() {
                return Ok(());
            }
            let w = self.versions.refresh_watermark();
            let (ready, wait) = pending.drain(..).partition(|t| t.version <= w);
            *pending = wait;
            ready
        };
        for t in ready {
            for c in &self.chunks_over(&t) {
                self.schedule(c, task::RECLAIM)?;
            }
        }
        Ok(())
    }

    /// The live chunks over a tombstone's range.
    fn chunks_over(&self, t: &RangeTombstone) -> Vec<Arc<crate::chunk::Chunk>> {
        self.index
            .load()
            .chunks
            .iter()
            .filter(|c| t.overlaps(&c.min_key, c.end_key.as_deref()))
            .cloned()
            .collect()
    }

    /// Step 3's commit point: the manifest with the tombstone.
    fn publish_tombstone(&self, t: &RangeTombstone) -> Result<()> {
        crate::failpoint::failpoint!(self, "range_delete.before_publish");
        self.publish(|m| m.tombstones.push(t.clone()))
    }
}
