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
//!    deleted (checked now and after each checkpoint), queue
//!    `task::RECLAIM` for each chunk over the range: chunks the range holds
//!    whole are dropped without being read (`maintenance/reclaim.rs`), the
//!    others rebuilt without what it deleted. The space comes back.
//! 5. After a later checkpoint, once no chunk holds a record the tombstone
//!    deletes (`retire_swept`), remove it from the manifest and from
//!    memory: reads stop checking it.
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

    /// Step 5 (after each checkpoint and flush): removes from the manifest, then from memory, the range
    /// deletes no chunk holds a record of any more. A delete qualifies once
    /// its reclaim was queued, no reader needs what it deleted, and no
    /// chunk over its range is still queued for reclaiming; then each such
    /// chunk's munk and funk are read over the range, as of just below the
    /// delete (its records only: newer ones are skipped in place), and must
    /// hold no value. A chunk that still does (a reopen forgot the queued
    /// reclaims) is queued again.
    ///
    /// No write below the delete may still be on its way: a snapshot is
    /// taken (it waits for the puts that read an older version), and in
    /// `Sync` mode the journal is trimmed first, so that no replay brings
    /// such a write back once the tombstone is gone.
    pub(crate) fn retire_swept(&self) -> Result<()> {
        let ts = self.tombstones.load_full();
        if ts.is_empty() || self.opts.read_only {
            return Ok(());
        }
        let w = self.versions.refresh_watermark();
        let candidates: Vec<RangeTombstone> = {
            let pending = self.reclaims.lock();
            ts.list()
                .iter()
                .filter(|t| t.version <= w && !pending.contains(t))
                .filter(|t| {
                    self.chunks_over(t)
                        .iter()
                        .all(|c| c.queued.load(Ordering::Acquire) & task::RECLAIM == 0)
                })
                .cloned()
                .collect()
        };
        if candidates.is_empty() {
            return Ok(());
        }
        let v = self.versions.acquire_snapshot(&[], None);
        self.versions.release(v);
        if self.journal.is_some() {
            let _serial = self.checkpoints.serial.lock();
            self.sync_journaled()?;
        }
        let mut gone = Vec::new();
        for t in candidates {
            let mut swept = true;
            for c in &self.chunks_over(&t) {
                if self.holds_deleted(c, &t)? {
                    swept = false;
                    self.schedule(c, task::RECLAIM)?;
                }
            }
            if swept {
                gone.push(t);
            }
        }
        if gone.is_empty() {
            return Ok(());
        }
        crate::failpoint::failpoint!(self, "range_delete.before_retire");
        self.publish(|m| m.tombstones.retain(|t| !gone.contains(t)))?;
        self.tombstones.rcu(|cur| Arc::new(cur.without(&gone)));
        stats::add(
            &self.counters.local().range_deletes_retired,
            gone.len() as u64,
        );
        Ok(())
    }

    /// True if `chunk` holds a value `t` deletes: one in its munk or its
    /// funk, in `t`'s range, older than `t`, and not deleted already.
    fn holds_deleted(&self, chunk: &crate::chunk::Chunk, t: &RangeTombstone) -> Result<bool> {
        let lo = chunk.min_key.as_slice().max(t.lo.as_slice());
        let hi = match (chunk.end_key.as_deref(), t.hi.as_deref()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let below = t.version - 1;
        if let Some(m) = chunk.munk() {
            let mut next = m.seek(lo);
            while let Some((cell, after)) = m.at(next) {
                if hi.is_some_and(|h| *cell.key >= *h) {
                    break;
                }
                if cell.read_from(below, 0).flatten().is_some() {
                    return Ok(true);
                }
                next = after;
            }
        }
        let funk = self.open_funk(chunk)?;
        let room = |n| crate::maintenance::room_for(self, n);
        let none = Arc::new(crate::tombstones::Tombstones::default());
        for group in funk.scan(lo, hi, below, &self.recovery, none, &room)? {
            if group?.1.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
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
