//! Deferred log records of `Sync` puts to chunks with munks.
//!
//! In `Sync` mode a single put is durable through the commit journal
//! (`recovery/journal.rs`). To a chunk with a munk it writes nothing else:
//! its version goes into the munk marked unlogged ([`Version::unlogged`])
//! and the chunk is flagged ([`Chunk::unlogged`]). The chunk's log gets the
//! record later, from the munk, at one of three points, each before the
//! journal or the munk could let go of it:
//!
//! - the checkpointer's round ([`DbInner::log_deferred`]): after sealing
//!   the journal's open segment, before syncing the logs and dropping the
//!   sealed segments. A record in a sealed segment was journaled after its
//!   version entered the munk, so the round finds it;
//! - a munk eviction, and a munk split, under the chunk's `rebalance` lock
//!   held exclusively, before the munk goes (reads of the chunk then go to
//!   its funk; a split's settled parts read the shared log).
//!
//! Of a key's unlogged versions only those readers may still need are
//! written (see [`Munk::each_unlogged`]): a hot key put many times between
//! two rounds costs one log record, where every put used to write one, and
//! so a small hot key set is written about once, to the journal, as a
//! memtable and its write-ahead log would. A tombstone is not pruned from
//! a munk while unlogged (`munk::build::prune_chain`): dropped, an older
//! value in the log would come back. Funk rebalances from the munk need
//! nothing more: a table cut at counter `cut` holds the unlogged versions
//! below it, and those at or above it reach the new active segment later.
//! A version written to a table and then to the log too reads the same
//! (one version, one value).
//!
//! [`Version::unlogged`]: crate::munk::Version::unlogged
//! [`Chunk::unlogged`]: crate::chunk::Chunk::unlogged
//! [`Munk::each_unlogged`]: crate::munk::Munk::each_unlogged

use super::DbInner;
use crate::cache::budget::Kind;
use crate::chunk::Chunk;
use crate::error::Result;
use crate::funk::Funk;
use crate::munk::Munk;
use crate::stats;
use std::sync::atomic::Ordering;

/// Budget bytes a deferred put charges for the log directory its record
/// takes once written (an entry of 16 bytes in a list that grows by
/// doubling), so that writing a munk's deferred records in bulk does not
/// take the budget past its limit.
pub(crate) const DEFERRED_DIRECTORY: u64 = 32;

impl DbInner {
    /// Writes the unlogged versions of every flagged chunk's munk to its
    /// log (buffered; the caller syncs the logs next). The caller holds
    /// `checkpoints.serial`, so that when this returns every flag cleared
    /// before has its records written. A failure poisons the store (see
    /// [`log_unlogged`]); the chunk stays flagged and the journal keeps the
    /// writes.
    pub(crate) fn log_deferred(&self) -> Result<()> {
        let idx = self.index.load();
        for chunk in idx.chunks.iter() {
            if !chunk.unlogged.load(Ordering::Acquire) {
                continue;
            }
            let _shared = chunk.rebalance.read();
            // A chunk retired or without its munk now had its versions
            // written by the split or eviction that took the munk.
            if chunk.is_retired() {
                continue;
            }
            if let (Some(munk), Some(funk)) = (chunk.munk(), chunk.funk()) {
                log_if_flagged(self, chunk, &munk, &funk, || {})?;
            }
        }
        Ok(())
    }
}

/// Writes the munk's deferred records if the chunk is flagged (a flag
/// cleared means they are written: whoever clears it writes them under
/// the chunk's `rebalance` lock, which the caller holds), running `before`
/// first. On failure the chunk stays flagged. Rounds, evictions and
/// splits all come through here; a munk of a chunk never flagged (every
/// munk in `Buffered` mode) is not walked.
pub(crate) fn log_if_flagged(
    inner: &DbInner,
    chunk: &Chunk,
    munk: &Munk,
    funk: &Funk,
    before: impl FnOnce(),
) -> Result<()> {
    if !chunk.unlogged.swap(false, Ordering::AcqRel) {
        return Ok(());
    }
    before();
    log_unlogged(inner, chunk, munk, funk)
        .inspect_err(|_| chunk.unlogged.store(true, Ordering::Release))
}

/// Appends the versions of `munk` not yet in the log to the active segment
/// of `funk` (the chunk's), oldest first per key, keys in order, and marks
/// them logged. The caller holds the chunk's `rebalance` lock, shared or
/// exclusively: no divert, split or eviction runs meanwhile. A failure of
/// any kind poisons the store: the journal is then the only copy of what
/// was not written, and no later round may trim it.
fn log_unlogged(inner: &DbInner, chunk: &Chunk, munk: &Munk, funk: &Funk) -> Result<()> {
    append_unlogged(inner, chunk, munk, funk).inspect_err(|e| {
        inner.poison_with(format!("writing deferred Sync records to a log: {e}"));
    })
}

fn append_unlogged(inner: &DbInner, chunk: &Chunk, munk: &Munk, funk: &Funk) -> Result<()> {
    // Buffered, as puts' records are, while the budget has the write
    // buffers' share free; else each record goes to the file at once, so
    // that a walk over a large munk cannot take the budget past its limit
    // (the munk, about to be evicted or synced, still holds the data).
    let budget = &inner.budget;
    let write_through = budget.free() < budget.write_buffer_share();
    // What the deferred puts charged for the directory goes back as the
    // walk grows it (puts coming in meanwhile charge their own).
    let charged = chunk.deferred_directory.swap(0, Ordering::AcqRel);
    budget.release(Kind::Filters, charged);
    // The exact one: the cached watermark lags, and every version above
    // it would be written.
    let watermark = inner.versions.refresh_watermark();
    let (mut records, mut bytes) = (0, 0);
    munk.each_unlogged(watermark, |key, versions| {
        for v in versions {
            let value = v.value.as_deref();
            let appended =
                funk.active
                    .append(key, value, v.version, &chunk.counter, write_through)?;
            v.mark_logged();
            records += 1;
            bytes += appended.ptr.record_len();
            if records == 1 {
                // A walk failing part way (a log write, when the buffer
                // passes its share of the budget).
                crate::failpoint::failpoint!(inner, "deferred.after_first_record");
            }
        }
        Ok(())
    })?;
    let c = inner.counters.local();
    stats::add(&c.deferred_logged, records);
    stats::add(&c.log_bytes_written, bytes);
    Ok(())
}
