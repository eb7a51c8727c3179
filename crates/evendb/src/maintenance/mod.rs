//! Background maintenance: munk loads and evictions, munk rebalances,
//! funk rebalances, splits and merges, run by a small pool of threads.
//!
//! Invariants:
//! - Work is queued per chunk with `Chunk::queued` bits, so a chunk waits
//!   in the queue at most once per kind of work.
//! - Whatever changes a chunk's files (funk rebalance, split, merge, munk
//!   load) holds the chunk's `funk_change` mutex, taken with `try_lock`: a
//!   thread that fails leaves the work to the holder and never repeats its
//!   I/O. Only holders of `funk_change` retire a chunk.
//! - No long I/O happens under a chunk's `rebalance` lock held exclusively:
//!   files are created and published before the lock is taken, tables are
//!   written after it is released, and readers go on throughout.
//! - A panic in a maintenance task poisons the store (writes then fail with
//!   `Poisoned`, naming the panic) instead of killing the thread silently or
//!   leaving waiters hanging; the thread keeps serving shutdown.
//! - With no maintenance threads, the operation that needs the work runs it
//!   before returning (deterministic, for tests and one-shot tools).

mod appends;
mod files;
mod idle;
mod merge;
mod munks;
pub(crate) mod queue;
mod rebuild;
mod reclaim;
mod room;
mod split;

pub(crate) use idle::store_is_idle;
pub(crate) use merge::merge;
pub(crate) use munks::munk_rebalance;
pub(crate) use rebuild::{funk_rebalance, overdue};
pub(crate) use room::{
    evict_munk, keep_floor, keeper_margin_used, make_room, memory_keeper, room_for,
};

use crate::chunk::{task, Chunk};
use crate::db::DbInner;
use crate::entry::Entry;
use crate::error::Result;
use crate::stats;
use std::sync::Arc;
use std::time::Duration;

/// Loop of a maintenance thread.
pub(crate) fn worker(inner: &Arc<DbInner>) {
    room::set_may_flush(true);
    while let Some(next) = inner.maintenance.next(Duration::from_millis(250), false) {
        guarded(inner, || match &next {
            Some((chunk, bits)) => {
                run_task(inner, chunk, *bits).and_then(|()| compact_if_idle(inner))
            }
            None => idle_work(inner),
        });
    }
}

/// Loop of the thread that takes urgent tasks: chunks whose puts are
/// paced because their logs are far past their limits (`db/write.rs`).
/// When the regular threads fall behind, it does the work on the core the
/// paced writers leave idle. While the store serves mostly reads
/// (`queue::OperationMix`) it takes the other queued tasks too, so that a
/// write phase's backlog drains on two threads; it sleeps otherwise.
pub(crate) fn urgent_worker(inner: &Arc<DbInner>) {
    room::set_may_flush(true);
    loop {
        let reads_mostly = inner.mix.reads_mostly(
            inner.counters.writes(),
            inner.counters.reads(),
            std::time::Instant::now(),
        );
        let Some(next) = inner.maintenance.next(queue::MIX_WINDOW, !reads_mostly) else {
            return;
        };
        if let Some((chunk, bits)) = next {
            let since = std::time::Instant::now();
            guarded(inner, || run_task(inner, &chunk, bits));
            if reads_mostly && bits & task::URGENT == 0 {
                let c = inner.counters.local();
                stats::add(&c.helper_tasks, 1);
                stats::add(&c.helper_task_micros, stats::micros(since));
            }
        }
    }
}

/// Runs one turn of a maintenance thread: logs its failure, and poisons
/// the store if it panics (the thread goes on serving shutdown). Then
/// closes the removed files that only the list of removed files still
/// holds (`OpenFiles::close_removed`): the turn that removed them held
/// them itself while it ran, and they go now rather than at the memory
/// keeper's next look.
fn guarded(inner: &DbInner, turn: impl FnOnce() -> Result<()>) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(turn));
    inner.open_files.close_removed();
    if let Some(took) = inner.trimmer.maybe_trim(&inner.budget) {
        let c = inner.counters.local();
        stats::add(&c.memory_trims, 1);
        stats::add(&c.memory_trim_micros, took.as_micros() as u64);
    }
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => log::error!("maintenance of {} failed: {e}", inner.dir.display()),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            inner.poison_with(format!("a maintenance thread panicked: {what}"));
        }
    }
}

/// Work done when the queue is empty: keep memory within the budget.
fn idle_work(inner: &DbInner) -> Result<()> {
    inner.versions.refresh_watermark();
    if inner.budget.over() {
        make_room(inner, 0, None);
    }
    compact_if_idle(inner)
}

/// Rebuilds chunks whose data a write phase left spread over several logs,
/// once the store takes no writes and the queue is empty (see `idle`). An
/// I/O failure poisons the store, as in any task.
fn compact_if_idle(inner: &DbInner) -> Result<()> {
    if inner.maintenance.has_tasks() || inner.check_poison().is_err() {
        return Ok(());
    }
    idle::compact_idle_chunks(inner).or_else(|e| inner.poison(e))
}

/// Runs the work `bits` asks for on `chunk`.
/// An I/O failure poisons the store: maintenance failed to write, so no
/// later write is acknowledged until a reopen shows what is on disk.
pub(crate) fn run_task(inner: &DbInner, chunk: &Arc<Chunk>, bits: u8) -> Result<()> {
    run_task_unpoisoned(inner, chunk, bits).or_else(|e| inner.poison(e))
}

fn run_task_unpoisoned(inner: &DbInner, chunk: &Arc<Chunk>, bits: u8) -> Result<()> {
    chunk.clear_queued(bits);
    if chunk.is_retired() {
        return Ok(());
    }
    if bits & task::MUNK_REBALANCE != 0 {
        munk_rebalance(inner, chunk, true)?;
    }
    if bits & task::FUNK_REBALANCE != 0 && !chunk.is_retired() {
        funk_rebalance(inner, chunk)?;
        if !chunk.is_retired() && small(inner, chunk) {
            merge(inner, chunk)?;
        }
    }
    if bits & task::COMPACT_LOG != 0
        && !chunk.is_retired()
        && !chunk.has_munk()
        && costly_to_scan(inner, chunk)
    {
        rebuild::compact_log(inner, chunk)?;
    }
    if bits & task::RECLAIM != 0 && !chunk.is_retired() && !reclaim::drop_deleted_run(inner, chunk)?
    {
        compact_unpoisoned(inner, chunk)?;
    }
    if bits & task::MERGE != 0 && !chunk.is_retired() {
        merge(inner, chunk)?;
    }
    if bits & task::MUNK_LOAD != 0 && !chunk.is_retired() && !chunk.has_munk() {
        if munks::load_if_worth(inner, chunk)? || chunk.has_munk() {
            chunk
                .load_refused
                .store(0, std::sync::atomic::Ordering::Relaxed);
        } else {
            // Refused (no room, or the chunk was busy): ask again only once
            // the chunk is twice as hot or after a while (`may_ask_again`).
            inner.refuse_load(chunk);
        }
    }
    Ok(())
}

/// Rebuilds the chunk's funk from its munk (see `room::evict_munk`), unless
/// another thread is changing the chunk, or the munk outgrew the chunk
/// size (its rebalance splits it; a flush would write one table too
/// large). A failure poisons the store.
fn flush_munk(inner: &DbInner, chunk: &Arc<Chunk>) {
    let Some(own) = chunk.funk_change.try_lock() else {
        return;
    };
    let fits = chunk
        .munk()
        .is_some_and(|m| m.data_bytes() <= inner.opts.max_chunk_size);
    if chunk.is_retired() || !fits {
        return;
    }
    room::set_may_flush(false);
    let flushed = rebuild::rebuild_locked(inner, chunk, &own, stats::Rebuild::Rebalance);
    room::set_may_flush(true);
    match flushed {
        Ok(()) => stats::add(&inner.counters.local().munk_evictions_flushed, 1),
        Err(e) => {
            let _ = inner.poison::<()>(e);
        }
    }
}

/// Banded segments (runs, adopted logs) of a munk-less chunk past which
/// its scans ask for its rebuild (task `COMPACT_LOG`): a scan reads a
/// piece of each in turn, however few of its records it returns. Writes
/// let a chunk keep up to `ADOPTED_MAX` (8) before a rebalance merges them.
/// Measured reason: YCSB E100 right after P at 8x the memory spent 58% of
/// its time reading banded pieces (and 16% in malloc, for the records
/// copied out of them).
pub(crate) const SCAN_RUNS_MAX: usize = 4;

/// True if scans of the munk-less `chunk` cost much more than a table's:
/// its shape says so ([`costly_shape`]), or one of its unsorted logs had
/// to be read whole more than once for its sorted index
/// ([`indexed_again`]).
pub(crate) fn costly_to_scan(inner: &DbInner, chunk: &Chunk) -> bool {
    costly_shape(inner, chunk) || indexed_again(chunk)
}

/// True if the munk-less `chunk`'s unsorted logs are too large
/// ([`log_too_large_to_scan`]) or it has more than [`SCAN_RUNS_MAX`]
/// banded segments.
pub(crate) fn costly_shape(inner: &DbInner, chunk: &Chunk) -> bool {
    chunk.funk().is_some_and(|f| {
        let (banded, unsorted) = f.log_shape();
        too_many_runs(banded) || too_large(inner, unsorted)
    })
}

/// True if one of the chunk's unsorted logs, large enough to be a run,
/// had to be read whole more than once for its sorted index: the budget
/// could not keep the index (`LogSegment::index_rebuilt`). Sorting the
/// log into a run costs one write of it; each such build, a read of all
/// of it. (A smaller log costs little to index again, and asking for it
/// would rebuild the whole chunk.)
pub(crate) fn indexed_again(chunk: &Chunk) -> bool {
    chunk.funk().is_some_and(|f| {
        f.logs().any(|l| {
            !l.is_banded()
                && l.index_rebuilt()
                && l.appended() >= rebuild::RUN_SECTIONS * l.section_bytes()
        })
    })
}

/// True if the chunk has more than [`SCAN_RUNS_MAX`] banded segments.
pub(crate) fn too_many_runs_to_scan(chunk: &Chunk) -> bool {
    chunk.funk().is_some_and(|f| too_many_runs(f.log_shape().0))
}

/// True if scans of the munk-less `chunk` would read (or index) more log
/// than twice the munk-less log limit: what a munk left behind. (Banded
/// segments are scanned in place, a window at a time.)
pub(crate) fn log_too_large_to_scan(inner: &DbInner, chunk: &Chunk) -> bool {
    chunk
        .funk()
        .is_some_and(|f| too_large(inner, f.log_shape().1))
}

fn too_many_runs(banded: usize) -> bool {
    banded > SCAN_RUNS_MAX
}

fn too_large(inner: &DbInner, unsorted: u64) -> bool {
    unsorted > 2 * inner.opts.max_log_size
}

/// Rebuilds `chunk` now and merges it with a neighbor if it is small
/// (`Db::compact`).
pub(crate) fn compact_chunk(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    compact_unpoisoned(inner, chunk).or_else(|e| inner.poison(e))
}

/// Drops from a chunk's munk the cells range deletes removed, which its
/// scans would still walk: a munk of a chunk one delete took whole goes
/// (its data is in the funk, which the rebuild after this empties); one a
/// delete took in part is rebuilt without them.
fn drop_deleted_cells(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    let tombstones = inner.tombstones.load();
    if !chunk.has_munk() || tombstones.is_empty() {
        return Ok(());
    }
    let w = inner.versions.refresh_watermark();
    let (lo, hi) = (&chunk.min_key, chunk.end_key.as_deref());
    if tombstones.cover(lo, hi, w) {
        evict_munk(inner, chunk);
    } else if tombstones.overlaps_below(lo, hi, w) {
        munks::rebalance_munk(inner, chunk, false, true)?;
    }
    Ok(())
}

fn compact_unpoisoned(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    drop_deleted_cells(inner, chunk)?;
    // Every live chunk over `chunk`'s range, in key order: maintenance
    // may split or replace them meanwhile (then the parts are compacted
    // in turn).
    let end = chunk.end_key.clone();
    let mut key = chunk.min_key.clone();
    let mut tries = 0;
    loop {
        let live = chunk.resolve(&key);
        let done = !live.is_retired() && rebuild::rebuild_now(inner, &live)?;
        // Not rebuilt (replaced first, or its munk split): try what holds
        // the key now, a bounded number of times.
        tries += 1;
        if !done && tries < 64 {
            inner.check_poison()?;
            continue;
        }
        tries = 0;
        // A funk split replaced it by rebuilt parts; else it may be small.
        let next = live.end_key.clone();
        let live = live.resolve(&live.min_key);
        if !live.is_retired() && small(inner, &live) {
            merge(inner, &live)?;
        }
        match next {
            Some(k) if end.as_ref().is_none_or(|e| k < *e) => key = k,
            _ => return Ok(()),
        }
    }
}

/// True when the chunk's data is small enough to merge with a neighbor.
fn small(inner: &DbInner, chunk: &Chunk) -> bool {
    chunk
        .funk()
        .is_some_and(|f| f.size_bytes() < inner.opts.max_chunk_size / 4)
}

/// Applies range deletes to one key's versions (newest first) before they
/// are kept or dropped: once a tombstone covering the key is at or below
/// `oldest_needed`, no reader needs the versions below it, so they go and
/// a delete at the tombstone's version stands in for them (dropped at the
/// bottom level like any oldest tombstone, kept in a run over a table).
pub(crate) fn apply_tombstones(
    mut versions: Vec<Entry>,
    tombstones: &crate::tombstones::Tombstones,
    oldest_needed: u64,
) -> Vec<Entry> {
    if tombstones.is_empty() {
        return versions;
    }
    let Some(first) = versions.first() else {
        return versions;
    };
    let floor = tombstones.floor(&first.key, oldest_needed);
    if floor == 0 {
        return versions;
    }
    if let Some(cut) = versions.iter().position(|e| e.version < floor) {
        let key = versions[cut].key.clone();
        versions.truncate(cut);
        versions.push(Entry {
            key,
            value: None,
            version: floor,
            counter: 0,
        });
    }
    versions
}

/// Keeps, of one key's versions (newest first), those a reader may need:
/// every version above `oldest_needed` (one per version), plus the newest at
/// or below it. A tombstone left oldest is dropped: the table is the bottom
/// level, so "deleted" and "absent" read the same.
pub(crate) fn gc_group(versions: Vec<Entry>, oldest_needed: u64) -> Vec<Entry> {
    let mut kept = gc_versions(versions, oldest_needed);
    while kept.last().is_some_and(|e| e.value.is_none()) {
        kept.pop();
    }
    kept
}

/// [`gc_group`] for data above the bottom (a run over a table): the oldest
/// kept version stays even if it is a tombstone, since it hides older
/// values below.
pub(crate) fn gc_versions(versions: Vec<Entry>, oldest_needed: u64) -> Vec<Entry> {
    let mut kept: Vec<Entry> = Vec::with_capacity(versions.len());
    for e in versions {
        if kept.last().is_some_and(|l| l.version == e.version) {
            continue;
        }
        let below = e.version <= oldest_needed;
        kept.push(e);
        if below {
            break;
        }
    }
    kept
}

/// Counts a finished rebuild of `kind` that started at `since` and wrote
/// `table_bytes` of tables.
fn count(inner: &DbInner, kind: stats::Rebuild, since: std::time::Instant, table_bytes: u64) {
    stats::rebuilt(inner.counters.local(), kind, since, table_bytes);
}

impl crate::db::Db {
    /// Rebuilds every chunk now: writes each chunk's data as a new table
    /// (from its munk, or merging its table and logs), splitting and merging
    /// chunks as their sizes ask. Normally this happens in the background as
    /// logs fill; call it to reclaim space after mass deletes. Range deletes
    /// no reader needs to look past are applied, and those no chunk holds a
    /// record of any more then leave the manifest (see
    /// [`Db::delete_range`](crate::Db::delete_range)).
    ///
    /// # Errors
    /// I/O and corruption errors; [`Error::ReadOnly`](crate::Error::ReadOnly) through a read-only
    /// open.
    pub fn compact(&self) -> Result<()> {
        self.inner.refuse_if_read_only()?;
        for chunk in self.inner.index.load().chunks.iter() {
            compact_chunk(&self.inner, chunk)?;
        }
        self.inner.retire_swept()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: &str, value: Option<&str>, version: u64) -> Entry {
        Entry {
            key: key.as_bytes().to_vec(),
            value: value.map(|v| v.as_bytes().to_vec()),
            version,
            counter: version,
        }
    }

    #[test]
    fn gc_keeps_newest_at_or_below_the_oldest_snapshot() {
        let g = gc_group(
            vec![
                e("k", Some("c"), 9),
                e("k", Some("b"), 5),
                e("k", Some("a"), 3),
            ],
            6,
        );
        assert_eq!(g, vec![e("k", Some("c"), 9), e("k", Some("b"), 5)]);
    }

    #[test]
    fn gc_drops_a_bottom_tombstone_but_keeps_newer_values() {
        assert!(gc_group(vec![e("k", None, 5), e("k", Some("a"), 3)], 6).is_empty());
        // A range delete at 5 over "k": below it nothing survives once no
        // reader needs it; a newer version does.
        let ts = crate::tombstones::Tombstones::new(vec![crate::tombstones::RangeTombstone {
            lo: b"a".to_vec(),
            hi: Some(b"m".to_vec()),
            version: 5,
        }]);
        let old = vec![e("k", Some("b"), 4), e("k", Some("a"), 3)];
        assert!(gc_group(apply_tombstones(old.clone(), &ts, 6), 6).is_empty());
        assert_eq!(
            apply_tombstones(old.clone(), &ts, 4),
            old,
            "a reader at 4 needs them"
        );
        let g = gc_group(
            apply_tombstones(vec![e("k", Some("n"), 9), e("k", Some("a"), 3)], &ts, 6),
            6,
        );
        assert_eq!(
            g,
            vec![e("k", Some("n"), 9)],
            "the bottom drops the delete too"
        );
        let run = gc_versions(apply_tombstones(old, &ts, 6), 6);
        assert_eq!(run.len(), 1, "a run keeps the delete over the table");
        assert!(run[0].value.is_none() && run[0].version == 5);
        let g = gc_group(vec![e("k", Some("n"), 9), e("k", None, 5)], 6);
        assert_eq!(g, vec![e("k", Some("n"), 9)]);
        let g = gc_group(vec![e("k", None, 9), e("k", Some("a"), 5)], 6);
        assert_eq!(g.len(), 2, "a snapshot at 6 still needs the value at 5");
    }

    #[test]
    fn gc_keeps_one_entry_per_version() {
        let mut newer = e("k", Some("b"), 9);
        newer.counter = 20;
        let g = gc_group(vec![newer.clone(), e("k", Some("a"), 9)], 6);
        assert_eq!(g, vec![newer]);
    }
}
