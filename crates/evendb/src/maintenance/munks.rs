//! Munk load, eviction and rebalance (in-memory compaction).
//!
//! **Load** (a munk-less chunk became hot), holding `funk_change`:
//! 1. note each log segment's length, and read the funk up to them (table
//!    plus logs, keys of the chunk's range), keeping per key the versions
//!    readers may need; build the munk, if the budget has room;
//! 2. under `rebalance` held exclusively, add the records appended since
//!    step 1 (a few, read from the page cache), install the munk.
//!
//! A load only reads: it writes no table, whatever the layout of the
//! chunk's files.
//!
//! **Eviction**: under `rebalance` held exclusively, remove the munk; the
//! funk has every record, so reads simply go back to it. Memory returns to
//! the budget when the last reader of the munk lets go of it. The length of
//! the active segment then is noted: the munk-less log limit that triggers
//! a funk rebalance counts only the bytes appended after it.
//!
//! **Munk rebalance**: under `rebalance` held exclusively (puts wait; gets
//! and scans read the old munk, which no put changes now), build a sorted,
//! compacted munk from the old one — sharing keys and version chains, so
//! nothing is copied but the cell array — and swap it in. A munk over
//! `max_chunk_size` is split instead (see `split`).

use super::split::munk_split;
use crate::cache::budget::Kind;
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::Result;
use crate::munk::{build, Charge, Munk, MunkEntry, Version};
use crate::stats;
use std::sync::Arc;

/// Loads a munk for `chunk` if the budget has room or colder munks can make
/// it. Returns true if the chunk has a munk afterwards.
pub(crate) fn load_if_worth(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    let Some(own) = chunk.funk_change.try_lock() else {
        return Ok(false);
    };
    load_if_worth_locked(inner, chunk, &own)
}

/// [`load_if_worth`] for a caller that holds the chunk's `funk_change`.
pub(crate) fn load_if_worth_locked(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    own: &parking_lot::MutexGuard<'_, ()>,
) -> Result<bool> {
    if chunk.is_retired() || chunk.has_munk() {
        return Ok(chunk.has_munk());
    }
    keep_floor(inner);
    let funk = inner.open_funk(chunk)?;
    // The load holds the log images it reads and, at the end, the munk:
    // about the chunk's data plus per-entry overhead. Files shared since a
    // split hold more than the chunk's data; a chunk holds at most about
    // twice `max_chunk_size` before it is split.
    let data = funk.size_bytes().min(inner.opts.max_chunk_size * 2);
    let need = funk.log_bytes() + data + data / 4;
    let heat = chunk.heat.load(std::sync::atomic::Ordering::Relaxed);
    let room = need + inner.munk_headroom();
    if inner.budget.free() < room {
        shrink_cold_row_cache(inner, u64::from(heat), need, room);
    }
    let free = inner.budget.free();
    if free < room {
        let Some(victims) = inner.munks.victims(chunk, heat, room - free) else {
            return Ok(false);
        };
        for v in &victims {
            evict_munk(inner, v);
        }
    }
    load_munk(inner, chunk, own)
}

/// Builds and installs a munk for `chunk` (see the module doc). The caller
/// holds `funk_change`. Returns false if the budget had no room. A load
/// only reads: it never writes a table, however the chunk's files are laid
/// out (a split gives each part its own files when it must, see `split`).
pub(crate) fn load_munk(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    _own: &parking_lot::MutexGuard<'_, ()>,
) -> Result<bool> {
    if chunk.has_munk() {
        return Ok(true);
    }
    let funk = inner.open_funk(chunk)?;
    let limits: Vec<u64> = funk.logs().map(|l| l.len()).collect();
    let w = inner.versions.refresh_watermark();
    // Everything the load holds in memory is charged before it is taken:
    // the log images it reads, then each entry as it is built; a refusal
    // ends the load with nothing kept.
    let budget = &inner.budget;
    let headroom = inner.munk_headroom();
    let images: u64 = limits.iter().sum();
    if !budget.try_reserve(Kind::Munks, images, headroom) {
        return Ok(false);
    }
    let mut charged = 0u64;
    let mut entries = Vec::new();
    let built: Result<bool> = (|| {
        for group in funk.key_groups(
            &chunk.min_key,
            chunk.end_key.as_deref(),
            Some(&limits),
            &inner.recovery,
        )? {
            let (key, versions) = group?;
            if let Some(e) = MunkEntry::from_versions(&key, versions, w) {
                if !budget.try_reserve(Kind::Munks, e.charge(), headroom) {
                    return Ok(false);
                }
                charged += e.charge();
                entries.push(e);
            }
        }
        Ok(true)
    })();
    budget.release(Kind::Munks, images);
    let spare = entries.len() / 2 + 64;
    let array = Munk::array_charge(entries.len() + spare);
    if matches!(built, Ok(true)) && !budget.try_reserve(Kind::Munks, array, headroom) {
        budget.release(Kind::Munks, charged);
        return Ok(false);
    }
    if !matches!(built, Ok(true)) {
        budget.release(Kind::Munks, charged);
        return built;
    }
    let munk = Munk::build(entries, spare, budget, Charge::Inherit(charged + array));
    let frozen = chunk.rebalance.write();
    for (log, &limit) in funk.logs().zip(&limits) {
        if let Err(e) = log.flush() {
            return inner.poison(e);
        }
        if log.len() <= limit {
            continue;
        }
        let image = log.image_range(limit, log.len())?;
        for r in &image.records {
            let key = image.key(r);
            if !chunk.contains(key) || !inner.recovery.visible(r.version) {
                continue;
            }
            let value = image.value(r);
            let Ok(res) = munk.reserve(key, value.map_or(0, <[u8]>::len), 0) else {
                return Ok(false);
            };
            munk.insert(res, key, Version::new(value, r.version, r.counter), w);
        }
    }
    chunk.set_munk(&frozen, Some(Arc::new(munk)));
    drop(frozen);
    inner.munks.add(chunk);
    stats::add(&inner.counters.local().munk_loads, 1);
    Ok(true)
}

/// Removes the chunk's munk, if any. Its buffered log records are written
/// out first: reads of the chunk go back to the log.
pub(crate) fn evict_munk(inner: &DbInner, chunk: &Arc<Chunk>) {
    let frozen = chunk.rebalance.write();
    if let Some(f) = chunk.funk() {
        if let Err(e) = f.active.flush() {
            // The munk stays (it holds the data the log could not take).
            let _ = inner.poison::<()>(e);
            return;
        }
    }
    let old = chunk.set_munk(&frozen, None);
    if old.is_some() {
        if let Some(f) = chunk.funk() {
            // What the active segment holds now was written while the munk
            // served the chunk's reads; the munk-less log limit counts only
            // what comes after (see `cache::munks`).
            inner
                .munks
                .note_munk_log(chunk, f.active.number, f.active.appended());
        }
    }
    drop(frozen);
    inner.munks.remove(chunk);
    if old.is_some() {
        stats::add(&inner.counters.local().munk_evictions, 1);
        if inner.opts.maintenance_threads > 0 && super::log_too_large_to_scan(inner, chunk) {
            // The log the munk let grow is now the chunk's read path:
            // rebuild it into a table in the background. (Without
            // maintenance threads this would run inside whatever is
            // making room; the chunk's next scan asks for it instead.)
            let _ = inner.schedule(chunk, crate::chunk::task::COMPACT_LOG);
        }
    }
}

/// Compacts the chunk's munk in memory; with `may_split`, splits the chunk
/// instead if its munk is over `max_chunk_size` (a split does I/O, so puts
/// pass false and leave it to maintenance).
pub(crate) fn munk_rebalance(inner: &DbInner, chunk: &Arc<Chunk>, may_split: bool) -> Result<()> {
    keep_floor(inner);
    let Some(m) = chunk.munk() else {
        return Ok(());
    };
    if may_split && m.data_bytes() > inner.opts.max_chunk_size {
        if let Some(own) = chunk.funk_change.try_lock() {
            if !chunk.is_retired() {
                return munk_split(inner, chunk, own);
            }
            return Ok(());
        }
    }
    // The new cell array is charged before the old one is released (when
    // its last reader lets go): make room for it first, with no lock held.
    let array = Munk::array_charge(m.keys() + m.keys() / 2 + 64);
    drop(m);
    if inner.budget.free() < array {
        make_room(inner, array, Some(chunk));
    }
    let frozen = chunk.rebalance.write();
    let started = std::time::Instant::now();
    if chunk.is_retired() {
        return Ok(());
    }
    let Some(m) = chunk.munk() else {
        return Ok(());
    };
    if !m.wants_rebalance() && m.data_bytes() <= inner.opts.max_chunk_size {
        // Rebalanced by another thread meanwhile.
        return Ok(());
    }
    let w = inner.versions.refresh_watermark();
    let entries = build::pruned(m.entries(), w);
    let spare = entries.len() / 2 + 64;
    let new = Munk::build(
        entries,
        spare,
        &inner.budget,
        Charge::Inherit(m.hand_over()),
    );
    chunk.set_munk(&frozen, Some(Arc::new(new)));
    let (c, us) = (inner.counters.local(), stats::micros(started));
    stats::add(&c.munk_rebalances, 1);
    stats::add(&c.munk_rebalance_micros, us);
    c.munk_rebalance_max_micros
        .fetch_max(us, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Makes room, by evicting munks, for `n` bytes of growth that cannot be
/// refused, if the budget does not have it free.
pub(crate) fn room_for(inner: &DbInner, n: u64) {
    while inner.budget.free() < n {
        let before = inner.budget.free();
        if make_room(inner, n, None) || inner.budget.free() <= before {
            // Room made, or nothing more to evict (or what was evicted is
            // still held by readers): growth that cannot be refused goes on.
            break;
        }
    }
}

/// How many times less per byte the row cache must be worth than a munk
/// to give it memory: wide, because a chunk's heat counts accesses to any
/// of its keys and the row cache's heat only its hits, so only a row cache
/// nobody reads any more gives way.
const ROW_CACHE_MARGIN: u128 = 16;

/// Takes memory from the row cache while it is worth much less per byte
/// ([`ROW_CACHE_MARGIN`]) than a use that is `heat` hot for `bytes` (a munk
/// about to load), until `target` bytes are free. The row cache grows back
/// through the budget's floor when gets come back (see `keep_floor`).
/// Measured reason: after a run of gets, YCSB E100 at 2x the memory kept
/// 55 MiB of row cache no scan reads, while scans read two chunks in three
/// from disk.
fn shrink_cold_row_cache(inner: &DbInner, heat: u64, bytes: u64, target: u64) {
    let rc = &inner.row_cache;
    while inner.budget.free() < target {
        let held = inner.budget.kind_used(Kind::RowCache);
        // Hits per byte of the row cache, times the margin, below heat per
        // byte of the candidate.
        let cold = u128::from(rc.heat()) * u128::from(bytes) * ROW_CACHE_MARGIN
            < u128::from(heat) * u128::from(held);
        if held == 0 || !cold || rc.shrink() == 0 {
            break;
        }
        stats::add(&inner.counters.local().row_cache_shrinks, 1);
    }
}

/// Gives back to the growth that cannot be refused (log filters, table
/// indexes) the floor of the budget that every reservation leaves free, if
/// that growth has used half of it: without this, filters growing with the
/// puts to munk-less chunks could take accounted memory past the limit.
pub(crate) fn keep_floor(inner: &DbInner) {
    if inner.budget.free() < inner.budget.floor() / 2 {
        // To the headroom munk puts keep (the floor, for budgets from
        // 256 MiB), no further: each munk evicted here is a hot chunk
        // writing through and reloaded soon.
        make_room(inner, 0, None);
    }
}

/// Evicts the coldest munks (never `except`'s) until `n` bytes fit in the
/// budget besides the headroom, or nothing colder is left. Evicts a few at
/// most per call: memory returns when readers let go of the munks, so a
/// call cannot always see its effect at once. Returns whether `n` fits.
pub(crate) fn make_room(inner: &DbInner, n: u64, except: Option<&Arc<Chunk>>) -> bool {
    let target = n + inner.munk_headroom();
    for _ in 0..4 {
        if inner.budget.free() >= target && !inner.budget.over() {
            return true;
        }
        match inner.munks.coldest(except) {
            Some(victim) => evict_munk(inner, &victim),
            None => {
                // No munk left to evict: log indexes go last (they are
                // rebuilt on demand, but each rebuild reads a whole log).
                inner.open_files.drop_log_indexes();
                break;
            }
        }
    }
    inner.budget.free() >= target
}
