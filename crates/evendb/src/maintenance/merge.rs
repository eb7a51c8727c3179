//! Merging a small chunk with a small neighbor (after mass deletes).
//!
//! 1. Hold both chunks' `funk_change` (try_lock; busy chunks are skipped),
//!    and drop their munks (a merge is for cold, emptied chunks).
//! 2. Divert each chunk's puts to a new segment (see `rebuild`).
//! 3. With no lock held, write one table from both frozen funks.
//! 4. Publish the manifest with the merged chunk: the new table, and both
//!    diverted segments as its logs. Puts still arriving at the old chunks
//!    land in those segments, so nothing is copied.
//! 5. Under both chunks' `rebalance` locks (in key order), make the merged
//!    chunk (its counter above both), retire the two for it and swap it
//!    into the index.
//! 6. Remove files no chunk refers to any more.

use super::files::{record, remove_unreferenced, TableOutput};
use super::rebuild::divert;
use super::split::replace_records;
use super::{count, evict_munk, gc_group};
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::Result;
use crate::funk::Funk;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Merges `chunk` with a neighbor if both are small. Returns true if merged.
pub(crate) fn merge(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    inner.check_poison()?;
    let started = Instant::now();
    let max = inner.opts.max_chunk_size;
    let size = |c: &Chunk| c.funk().map_or(u64::MAX, |f| f.size_bytes());
    let Some(own) = chunk.funk_change.try_lock() else {
        return Ok(false);
    };
    if chunk.is_retired() {
        return Ok(false);
    }
    inner.open_funk(chunk)?;
    if size(chunk) >= max / 4 {
        return Ok(false);
    }
    let idx = inner.index.load();
    let i = idx.position(&chunk.min_key);
    if !idx.chunks.get(i).is_some_and(|c| Arc::ptr_eq(c, chunk)) {
        return Ok(false);
    }
    let right = idx.chunks.get(i + 1).cloned();
    let left = i.checked_sub(1).and_then(|j| idx.chunks.get(j)).cloned();
    drop(idx);
    for (neighbor, is_right) in [(right, true), (left, false)] {
        let Some(neighbor) = neighbor else {
            continue;
        };
        let Some(theirs) = neighbor.funk_change.try_lock_arc() else {
            continue;
        };
        if neighbor.is_retired() {
            continue;
        }
        inner.open_funk(&neighbor)?;
        if size(chunk) + size(&neighbor) >= max / 2 {
            continue;
        }
        let (a, b) = if is_right {
            (chunk.clone(), neighbor.clone())
        } else {
            (neighbor.clone(), chunk.clone())
        };
        evict_munk(inner, &a);
        evict_munk(inner, &b);
        // An eviction that failed (its munk may hold `Sync` writes no log
        // has yet) poisons the store and leaves the munk: merge nothing.
        inner.check_poison()?;
        if a.has_munk() || b.has_munk() {
            continue;
        }
        let (frozen_a, _, seg_a) = divert(inner, &a, &own)?;
        crate::failpoint::failpoint!(inner, "merge.between_diverts");
        let (frozen_b, _, seg_b) = divert(inner, &b, &own)?;
        let w = inner.versions.refresh_watermark();
        // (Each chunk's images read whole take at most half the room.)
        let cap = super::room::images_cap(inner) / 2;
        let images: u64 = [(&a, &frozen_a), (&b, &frozen_b)]
            .iter()
            .map(|(c, f)| f.merge_memory(&c.min_key, c.end_key.as_deref(), cap))
            .sum();
        let _images = super::room::hold_work(inner, images);
        let mut out = TableOutput::new(inner, u64::MAX);
        for (c, frozen) in [(&a, &frozen_a), (&b, &frozen_b)] {
            let groups =
                frozen.key_groups(&c.min_key, c.end_key.as_deref(), None, &inner.recovery, cap)?;
            let ts = inner.tombstones.load();
            for group in groups {
                let (_, versions) = group?;
                for e in gc_group(super::apply_tombstones(versions, &ts, w), w) {
                    out.add(&e)?;
                }
            }
        }
        let table = out.finish()?.into_iter().next().map(|(_, t)| t);
        let written = table.as_ref().map_or(0, |t| t.file_size);
        let funk = Funk {
            table,
            frozen: vec![seg_a],
            active: seg_b,
        };
        let merged = Arc::new(Chunk::new(
            inner.next_chunk_id(),
            a.min_key.clone(),
            b.end_key.clone(),
            funk.files(),
        ));
        merged.set_funk(Arc::new(funk));
        crate::failpoint::failpoint!(inner, "merge.after_table");
        let rec = record(&merged, merged.files.lock().clone());
        inner.publish(|m| replace_records(m, &[a.id, b.id], vec![rec]))?;
        crate::failpoint::failpoint!(inner, "merge.after_publish");
        {
            let ga = a.rebalance.write();
            let gb = b.rebalance.write();
            let counter = a
                .counter
                .load(Ordering::Acquire)
                .max(b.counter.load(Ordering::Acquire));
            merged.counter.store(counter, Ordering::Release);
            a.retire(vec![merged.clone()]);
            b.retire(vec![merged.clone()]);
            inner
                .index
                .replace(&[a.clone(), b.clone()], std::slice::from_ref(&merged));
            drop(gb);
            drop(ga);
        }
        drop(theirs);
        crate::failpoint::failpoint!(inner, "merge.before_cleanup");
        remove_unreferenced(inner, &[frozen_a.files(), frozen_b.files()]);
        count(inner, crate::stats::Rebuild::Merge, started, written);
        return Ok(true);
    }
    Ok(false)
}
