//! Room in the memory budget: evicting munks (the only memory that can be
//! given back at will) for growth that cannot wait, and keeping the floor
//! the budget leaves for growth that cannot be refused.

use crate::cache::budget::Kind;
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::stats;
use std::cell::Cell;
use std::sync::Arc;

thread_local! {
    /// True on a maintenance thread while it may flush a victim's munk
    /// before evicting it (see [`evict_munk`]); false during that flush,
    /// so the evictions the flush itself makes room with are plain.
    static MAY_FLUSH: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as a maintenance thread: its evictions may
/// take the time to flush (see [`evict_munk`]); `false` while a flush runs.
pub(crate) fn set_may_flush(may: bool) {
    MAY_FLUSH.set(may);
}

/// Removes the chunk's munk, if any. Its buffered log records are written
/// out first, and the records of `Sync` puts it deferred
/// (`db::deferred`): reads of the chunk go back to the log.
///
/// On a maintenance thread, a munk whose chunk's unsorted log is too
/// large to scan is first flushed: the chunk's table is rebuilt from the
/// munk (which holds all its data, sorted) and its log emptied, as a munk
/// chunk's rebalance does. Evicted as it was, the log would become the
/// chunk's read path and be read whole into memory to be sorted (a munk
/// lets its log grow to [`crate::Options`]'s munk log limit, 16 MiB by
/// default, and further while puts are paced). Measured reason: in P at
/// 8x a 64 MiB budget, evictions to make room for such a sort evicted 189
/// MiB of munk-era logs in 33 evictions (up to 32 MiB each), each then
/// sorted in turn, and the process's heap peaked at 103 MiB, 56 of it
/// those logs' images. Other threads (puts, scans) evict at once: they
/// must not wait for a table write.
pub(crate) fn evict_munk(inner: &DbInner, chunk: &Arc<Chunk>) {
    if MAY_FLUSH.get()
        && inner.check_poison().is_ok()
        && chunk.has_munk()
        && super::log_too_large_to_scan(inner, chunk)
    {
        super::flush_munk(inner, chunk);
        if inner.check_poison().is_err() {
            return;
        }
    }
    let frozen = chunk.rebalance.write();
    if let Some(f) = chunk.funk() {
        // Deferred `Sync` records first: reads go to the log from now on.
        // (The munk goes in this critical section: its charge makes room
        // for what the log takes now.)
        let deferred = match chunk.munk() {
            Some(m) => crate::db::log_if_flagged(inner, chunk, &m, &f, || m.give_back()),
            None => Ok(()),
        };
        if let Err(e) = deferred.and_then(|()| f.active.flush()) {
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
    if let Some(old) = old {
        inner.maintenance.retire_munk(old);
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

/// Makes room, by evicting munks, for `n` bytes of growth that cannot be
/// refused, if the budget does not have it free.
pub(crate) fn room_for(inner: &DbInner, n: u64) {
    while inner.budget.free() < n {
        let before = inner.budget.free();
        if make_room(inner, n, None) || inner.budget.free() <= before {
            break;
        }
    }
    // Munks gone and still short: the row cache gives way too. Then
    // growth that cannot be refused goes on (what was evicted may still
    // be held by readers).
    while inner.budget.free() < n && inner.row_cache.shrink() > 0 {
        stats::add(&inner.counters.local().row_cache_shrinks, 1);
    }
}

/// The most a merge or a run reads whole (the rest through indexes, see
/// `funk::index_threshold`): working memory's share of the budget, which
/// no reservation takes. Measured reason: with no bound, a rebuild at the
/// start of the analytics stream at a 64 MiB budget held 60 MiB of images
/// and the charge peaked at 66-76 MiB (RSS up to 115 MiB); with the share
/// (8 MiB), 59-63 MiB (RSS 84-101) for ingestion 8-10% slower. With the share
/// plus whatever the budget had free when the merge began, the charge
/// still passed the budget (65 MiB): merges overlap.
pub(crate) fn images_cap(inner: &DbInner) -> u64 {
    inner.budget.work_share()
}

/// Working memory of a merge or a run, charged until dropped.
pub(crate) struct WorkHold<'a> {
    _held: crate::cache::budget::Held<'a>,
    _gate: Option<parking_lot::MutexGuard<'a, ()>>,
}

/// How long a merge or a run whose working memory does not fit waits for
/// the one that went past the budget before it (then it goes on too).
const WORK_GATE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Charges `n` bytes of working memory (the unsorted logs a merge or a
/// run holds), making room first (munks, then the row cache). Growth that
/// cannot wait may still not fit: then only one holder at a time goes past
/// the budget, the others waiting for it up to [`WORK_GATE_WAIT`].
pub(crate) fn hold_work(inner: &DbInner, n: u64) -> WorkHold<'_> {
    // What working memory does not use of its share is free for it.
    let beyond = |inner: &DbInner| n.saturating_sub(inner.budget.unused_share(Kind::Work));
    room_for(inner, beyond(inner));
    let gate = if inner.budget.free() < beyond(inner) {
        let g = inner.work_gate.try_lock_for(WORK_GATE_WAIT);
        room_for(inner, beyond(inner));
        g
    } else {
        None
    };
    WorkHold {
        _held: inner.budget.hold(Kind::Work, n),
        _gate: gate,
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
pub(super) fn shrink_cold_row_cache(inner: &DbInner, heat: u64, bytes: u64, target: u64) {
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

/// What of the budget, beyond the headroom munk puts keep, the memory
/// keeper keeps free while writes dominate: a 32nd (8 MiB of a 256 MiB
/// budget, 2 MiB of 64 MiB).
fn keeper_margin(inner: &DbInner) -> u64 {
    inner.budget.limit() / 32
}

/// True when less than the headroom munk puts keep plus
/// [`keeper_margin`] is free: what wakes the memory keeper (from a put)
/// and what it restores.
pub(crate) fn keeper_margin_used(inner: &DbInner) -> bool {
    inner.budget.free() < inner.munk_headroom() + keeper_margin(inner)
}

/// Loop of the memory keeper thread: while writes dominate
/// (`queue::OperationMix`), keeps [`keeper_margin`] of the budget free
/// beyond the headroom, by evicting the coldest munks, so that puts to
/// munks seldom find the budget full and evict munks themselves (the put
/// waits while the evicted munk's log buffer is written and its memory
/// freed). It looks when a put finds the margin used
/// (`Maintenance::wake_keeper`) and every [`KEEP_EVERY`]. In a read
/// phase it does nothing: munk loads would fill the margin and be
/// evicted again. Its evictions never flush a munk (as a put's): a
/// munk whose log is too large to scan has that log compacted after.
/// Measured reason: with munk rebalances taken ahead of rebuilds, 31 of
/// the 32 puts that waited over 10 ms in stream ingestion (5M events, 1
/// GiB and 256 MiB caps) were evicting munks, for up to 25 ms, nearly
/// all of it freeing the munk. With the keeper, puts' memory waits fell
/// from 69-73 to 4-5 an ingestion at 1 GiB (0.6-0.7 s to 0.05-0.11 s)
/// and from 20-35 to 4-12 at 256 MiB, where the worst put fell from a
/// median of 27.4 ms to 18.5 ms (nine alternating runs each). It also
/// frees the munks that rebuilds retired, and closes removed files no one
/// holds any more (`OpenFiles::close_removed`), so that no put waits for
/// either.
pub(crate) fn memory_keeper(inner: &Arc<DbInner>) {
    set_may_flush(false);
    inner.open_files.set_closer_runs(true);
    while inner.maintenance.keeper_wait(KEEP_EVERY) {
        drop(inner.maintenance.take_retired());
        inner.open_files.close_removed();
        let reads_mostly = inner.mix.reads_mostly(
            inner.counters.writes(),
            inner.counters.reads(),
            std::time::Instant::now(),
        );
        if !reads_mostly {
            super::guarded(inner, || {
                keep_free(inner);
                Ok(())
            });
        }
    }
    inner.maintenance.set_keeper_runs(false);
    inner.open_files.set_closer_runs(false);
    drop(inner.maintenance.take_retired());
}

/// One look of the memory keeper: evicts the coldest munks if the
/// margin is used ([`keeper_margin_used`]).
fn keep_free(inner: &DbInner) {
    if keeper_margin_used(inner) {
        make_room(inner, keeper_margin(inner), None);
    }
}

/// How often the memory keeper looks at the budget unasked.
const KEEP_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

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
                // No munk left to evict: log indexes go last, the least
                // recently used first (they are rebuilt on demand, but
                // each rebuild reads a whole log).
                inner
                    .open_files
                    .drop_log_indexes(|| inner.budget.free() >= target);
                break;
            }
        }
    }
    inner.budget.free() >= target
}

/// True while log filters and indexes (which cannot be evicted) take under
/// a third of the memory budget: past that, rebalances merge logs into
/// tables (whose indexes are smaller) instead of adopting more of them.
/// (At 8x the memory, 2 GiB of adopted logs take 22 MiB of a 64 MiB
/// budget, so adoptions stop there; half the budget let them, and runs,
/// go on, but the process was then killed by its 256 MiB cgroup in one
/// run of two, before munk-era logs were flushed at eviction and merged
/// through indexes.)
pub(super) fn logs_have_room(inner: &DbInner) -> bool {
    inner.budget.kind_used(Kind::Filters) < inner.budget.limit() / 3
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
    fn the_memory_keeper_restores_its_margin_by_evicting_munks() {
        let db = Options::default()
            .storage(Arc::new(MemFs::new()))
            .max_chunk_size(64 << 10)
            .max_log_size(16 << 10)
            .memory_budget(1 << 20)
            .maintenance_threads(0)
            .open("/db")
            .expect("open");
        let inner = &db.inner;
        let keep = inner.munk_headroom() + keeper_margin(inner);
        // Puts fill munks until the margin is used (with no maintenance
        // threads no keeper runs, and puts evict for themselves).
        let mut n = 0u32;
        while inner.budget.free() >= keep || inner.munks.coldest(None).is_none() {
            db.put(key(n % 2_000), [n as u8; 200]).expect("put");
            n += 1;
            assert!(n < 200_000, "the munks never used the margin");
        }
        let evicted = db.stats().munk_evictions;
        keep_free(inner);
        assert!(
            inner.budget.free() >= keep,
            "free {} < {keep}",
            inner.budget.free()
        );
        let after = db.stats().munk_evictions;
        assert!(after > evicted);
        // Nothing more is evicted while the margin is free.
        keep_free(inner);
        assert_eq!(db.stats().munk_evictions, after);
        // An eviction loses nothing: the last value of each key is read
        // back from the logs.
        for k in 0..2_000u32 {
            let last = (0..n).rev().find(|i| i % 2_000 == k).expect("written");
            assert_eq!(db.get(key(k)).expect("get"), Some(vec![last as u8; 200]));
        }
    }

    /// A retired munk is freed by the keeper when one runs, at once when
    /// none does, and never lost track of: its charge goes back to the
    /// budget when it is freed.
    #[test]
    fn retired_munks_are_freed_by_the_keeper_or_at_once_without_one() {
        use crate::munk::{Charge, Munk};
        for threads in [0, 1] {
            let db = Options::default()
                .storage(Arc::new(MemFs::new()))
                .maintenance_threads(threads)
                .open("/db")
                .expect("open");
            let inner = &db.inner;
            let before = inner.budget.kind_used(Kind::Munks);
            let munk = Arc::new(Munk::build(
                Vec::new(),
                10_000,
                &inner.budget,
                Charge::ArrayOnly,
            ));
            let charged = inner.budget.kind_used(Kind::Munks) - before;
            assert!(charged >= Munk::array_charge(10_000));
            let gone = Arc::downgrade(&munk);
            inner.maintenance.retire_munk(munk);
            if threads == 0 {
                assert!(gone.upgrade().is_none(), "no keeper: freed at once");
            } else {
                let start = std::time::Instant::now();
                while gone.upgrade().is_some() {
                    assert!(
                        start.elapsed() < std::time::Duration::from_secs(10),
                        "the keeper never freed the munk"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            assert_eq!(
                inner.budget.kind_used(Kind::Munks),
                before,
                "threads {threads}"
            );
        }
    }

    #[test]
    fn a_maintenance_eviction_flushes_a_munk_whose_log_is_too_large_to_scan() {
        let fs = MemFs::new();
        let db = Options::default()
            .storage(Arc::new(fs.clone()))
            .max_chunk_size(64 << 10)
            .max_log_size(4 << 10)
            .block_size(256)
            .maintenance_threads(0)
            .open("/db")
            .expect("open");
        let inner = &db.inner;
        // A few keys overwritten again and again: the munk absorbs them
        // and the chunk's log grows (a munk's log limit is twice the
        // chunk size, far above what a scan may read).
        let mut round = 0u8;
        let chunk = loop {
            for k in 0..20 {
                db.put(key(k), [round; 100]).expect("put");
            }
            let chunk = inner.chunk_for(&key(0)).expect("chunk");
            if chunk.has_munk() && crate::maintenance::log_too_large_to_scan(inner, &chunk) {
                break chunk;
            }
            round += 1;
            assert!(round < 200, "the munk's log never grew past the scan limit");
        };
        // A user thread's eviction would leave that log as the read path;
        // a maintenance thread's rebuilds the table from the munk first.
        set_may_flush(true);
        evict_munk(inner, &chunk);
        set_may_flush(false);
        assert!(!chunk.has_munk());
        assert!(!crate::maintenance::log_too_large_to_scan(inner, &chunk));
        let s = db.stats();
        assert_eq!((s.munk_evictions, s.munk_evictions_flushed), (1, 1));
        for k in 0..20 {
            assert_eq!(db.get(key(k)).expect("get"), Some(vec![round; 100]));
        }
        drop(db);
        let db = Options::default()
            .storage(Arc::new(fs))
            .open("/db")
            .expect("reopen");
        for k in 0..20 {
            assert_eq!(db.get(key(k)).expect("get"), Some(vec![round; 100]));
        }
    }
}
