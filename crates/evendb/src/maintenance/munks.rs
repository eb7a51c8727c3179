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
//! **Munk rebalance**: with no chunk lock held, while puts go on, build a
//! sorted, compacted munk from a snapshot of the old one — sharing keys and
//! version chains, so nothing is copied but the cell array; then, under
//! `rebalance` held exclusively (puts wait; gets and scans read the old
//! munk), carry over what puts changed since (`munk::rebuild`) and swap it
//! in. A munk over `max_chunk_size` is split instead (see `split`).

use super::room::{evict_munk, keep_floor, make_room, shrink_cold_row_cache};
use super::split::munk_split;
use crate::cache::budget::Kind;
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::Result;
use crate::funk::Funk;
use crate::munk::{spare_cells, Charge, Munk, MunkEntry, Unsettled, Version};
use crate::stats;
use std::sync::Arc;

/// Loads a munk for `chunk` if the budget has room or colder munks can make
/// it. Returns true if the chunk has a munk afterwards.
pub(crate) fn load_if_worth(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    let Some(own) = chunk.funk_change.try_lock() else {
        return Ok(false);
    };
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
    load_munk(inner, chunk, &own)
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
    let mut limits: Vec<u64> = funk.logs().map(|l| l.len()).collect();
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
    let tombstones = inner.tombstones.load_full();
    let built: Result<bool> = (|| {
        for group in funk.key_groups(
            &chunk.min_key,
            chunk.end_key.as_deref(),
            Some(&limits),
            &inner.recovery,
            // (Charged to munks, reserved above: read whole as before.)
            u64::MAX,
        )? {
            let (key, versions) = group?;
            let versions = super::apply_tombstones(versions, &tombstones, w);
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
    // What puts appended while the munk was built goes into it in two
    // passes: most of it before the chunk's lock is taken, the rest,
    // appended meanwhile, under it, where no put appends. Measured
    // reason: with all of it under the lock, munk loads held it up to
    // 7.4-9.6 ms (379-391 ms in all) in a sequential load of 2.6 million
    // records at a 64 MiB budget, the longest holds of that lock there;
    // with the first pass, up to 2.4 ms, and the load's puts waited for
    // chunk locks 45% less (docs/results/2026-11-28-lock-holds).
    if !catch_up(inner, chunk, &funk, &munk, &mut limits, w)? {
        return Ok(false);
    }
    let frozen = chunk.rebalance.write();
    if !catch_up(inner, chunk, &funk, &munk, &mut limits, w)? {
        return Ok(false);
    }
    chunk.set_munk(&frozen, Some(Arc::new(munk)));
    drop(frozen);
    inner.munks.add(chunk);
    stats::add(&inner.counters.local().munk_loads, 1);
    Ok(true)
}

/// Adds to `munk` the records the chunk's logs took past `limits` (one
/// length per log of `funk`), and moves the limits to the logs' ends.
/// False if the munk had no room for them (a load then gives up).
fn catch_up(
    inner: &DbInner,
    chunk: &Chunk,
    funk: &Funk,
    munk: &Munk,
    limits: &mut [u64],
    w: u64,
) -> Result<bool> {
    for (log, limit) in funk.logs().zip(limits.iter_mut()) {
        if let Err(e) = log.flush() {
            return inner.poison(e);
        }
        let end = log.len();
        if end <= *limit {
            continue;
        }
        let image = log.image_range(*limit, end)?;
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
        *limit = end;
    }
    Ok(true)
}

/// Compacts the chunk's munk in memory; with `may_split`, splits the chunk
/// instead if its munk is over `max_chunk_size` (a split does I/O, so puts
/// pass false and leave it to maintenance).
pub(crate) fn munk_rebalance(inner: &DbInner, chunk: &Arc<Chunk>, may_split: bool) -> Result<()> {
    rebalance_munk(inner, chunk, may_split, false)
}

/// True if new keys used up most of `m`'s spare cells (see
/// [`spare_cells`]); never for a forced rebuild, which drops cells.
fn filled(m: &Munk, force: bool) -> bool {
    !force && m.new_keys() >= m.spare() / 2
}

/// [`munk_rebalance`], also when the munk does not ask for it (`force`):
/// a range delete's reclaiming drops the deleted cells.
pub(crate) fn rebalance_munk(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    may_split: bool,
    force: bool,
) -> Result<()> {
    keep_floor(inner);
    let Some(m) = chunk.munk() else {
        return Ok(());
    };
    if may_split && m.data_bytes() > inner.opts.max_chunk_size {
        if let Some(own) = chunk.funk_change.try_lock() {
            // Split, unless retired meanwhile, or its live data fits after
            // all: then it is rebalanced in memory below.
            if chunk.is_retired() || munk_split(inner, chunk, own)? {
                return Ok(());
            }
        }
    }
    // The new cell array is charged before the old one is released (when
    // its last reader lets go): make room for it first, with no lock held.
    let max = inner.opts.max_chunk_size;
    let cells = m.keys() + spare_cells(m.keys(), m.data_bytes(), filled(&m, force), max);
    let array = Munk::array_charge(cells);
    if inner.budget.free() < array {
        make_room(inner, array, Some(chunk));
    }
    // One rebuild at a time; whoever waited finds the munk replaced.
    let one = m.lock_rebuild();
    let current =
        |m: &Arc<Munk>| !chunk.is_retired() && chunk.munk().is_some_and(|c| Arc::ptr_eq(&c, m));
    if !current(&m) || !force && !m.wants_rebalance() && m.data_bytes() <= inner.opts.max_chunk_size
    {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let w = inner.versions.refresh_watermark();
    let tombstones = inner.tombstones.load();
    let full = filled(&m, force);
    // Sized for what is left after pruning, within the room made above.
    let build = || {
        let (snapshot, entries) = m.pruned_snapshot(w, &tombstones);
        let data = entries.iter().map(MunkEntry::data_size).sum();
        let spare = spare_cells(entries.len(), data, full, max)
            .min(cells.saturating_sub(entries.len()).max(64));
        (snapshot, Unsettled::build(entries, spare, &inner.budget))
    };
    // Build the new munk while puts go on, then stop them and carry over
    // what they changed meanwhile.
    let (snapshot, part) = build();
    let frozen = chunk.rebalance.write();
    let locked = std::time::Instant::now();
    if !current(&m) {
        return Ok(());
    }
    let c = inner.counters.local();
    let carried = snapshot
        .carry_over(&m, vec![Some(part)], &[], 0)
        .or_else(|| {
            // Puts added more keys than the new munk has room for: build it
            // again from the old one, which no put changes now.
            stats::add(&c.munk_rebalance_retries, 1);
            let (snapshot, part) = build();
            snapshot.carry_over(&m, vec![Some(part)], &[], 0)
        });
    let Some(new) = carried.and_then(|c| c.munks.into_iter().next().flatten()) else {
        return Ok(());
    };
    chunk.set_munk(&frozen, Some(Arc::new(new)));
    let held = stats::micros(locked);
    // Puts wait for the lock; the old munk, which this is likely the last
    // reference to, is freed after it, by the memory keeper (freeing every
    // cell took a tenth of a sequential load's samples, while puts waited).
    drop(frozen);
    drop(one);
    inner.maintenance.retire_munk(m);
    let us = stats::micros(started);
    stats::add(&c.munk_rebalances, 1);
    stats::add(&c.munk_rebalance_micros, us);
    stats::add(&c.munk_rebalance_locked_micros, held);
    c.munk_rebalance_max_micros
        .fetch_max(us, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemFs;
    use crate::Options;

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:04}").into_bytes()
    }

    #[test]
    fn a_load_catches_up_with_what_was_appended_since_each_pass() {
        let db = Options::default()
            .storage(Arc::new(MemFs::new()))
            .memory_budget(8 << 20)
            .maintenance_threads(0)
            .open("/db")
            .expect("open");
        let inner = &db.inner;
        for i in 0..50 {
            db.put(key(i), b"v1").expect("put");
        }
        let chunk = inner.chunk_for(&key(0)).expect("chunk");
        let funk = inner.open_funk(&chunk).expect("funk");
        // As a load notes the logs' lengths before it reads the funk (with
        // the first records written out: held appends are not readable, so
        // a load's first pass would take them).
        for log in funk.logs() {
            log.flush().expect("flush");
        }
        let mut limits: Vec<u64> = funk.logs().map(|l| l.len()).collect();
        for i in 0..10 {
            db.put(key(i), b"v2").expect("put");
        }
        let munk = Munk::build(Vec::new(), 100, &inner.budget, Charge::Inherit(0));
        let w = inner.versions.refresh_watermark();
        assert!(catch_up(inner, &chunk, &funk, &munk, &mut limits, w).expect("first pass"));
        let after_first = limits.clone();
        for i in 5..15 {
            db.put(key(i), b"v3").expect("put");
        }
        assert!(catch_up(inner, &chunk, &funk, &munk, &mut limits, w).expect("second pass"));
        assert!(limits
            .iter()
            .zip(&after_first)
            .any(|(now, then)| now > then));
        let ends: Vec<u64> = funk.logs().map(|l| l.len()).collect();
        assert_eq!(limits, ends, "the limits move to the logs' ends");
        // Each pass took the records appended since the last one: the
        // munk holds the keys put after the first limits, newest value,
        // and none of the records before them.
        assert_eq!(munk.keys(), 15);
        for i in 0..50 {
            let want: Option<&[u8]> = match i {
                0..=4 => Some(b"v2"),
                5..=14 => Some(b"v3"),
                _ => None,
            };
            assert_eq!(munk.read(&key(i), u64::MAX).as_deref(), want, "key {i}");
        }
        // A pass with nothing appended since adds nothing.
        assert!(catch_up(inner, &chunk, &funk, &munk, &mut limits, w).expect("third pass"));
        assert_eq!(munk.keys(), 15);
    }
}
