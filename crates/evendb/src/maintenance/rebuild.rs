//! Funk rebalance: rewrite a chunk's data as a new table, from its munk if
//! it has one, else by merging its table and logs, splitting the chunk when
//! the data has outgrown it.
//!
//! 1. Hold `funk_change` (try_lock; a busy chunk is left to the holder).
//! 2. **Divert**: create an empty segment, publish the manifest listing it
//!    as the chunk's newest log, then — holding `rebalance` exclusively for
//!    a pointer swap only — make it the active segment and note the chunk's
//!    counter `cut`. Every put before has a counter below `cut` and is in a
//!    frozen segment; every put after lands in the new one.
//! 3. With no lock held, write the new table(s): from the munk (versions
//!    with counters below `cut`), or from the frozen funk (table and
//!    frozen segments, keys of the chunk's range), keeping what readers may
//!    need (`gc_group`).
//! 4. Publish the manifest with the new files (the commit point), then swap
//!    the funk in (the active segment is the same object, so no put is
//!    blocked), or, for a split, retire the chunk for its parts.
//! 5. Remove files no chunk refers to any more.
//!
//! A crash before 4's publish leaves the chunk with its old files and the
//! (maybe empty) diverted segment; after it, the new ones. Unreferenced
//! files are removed at the next open.

use super::files::{install, new_segment, remove_unreferenced, TableOutput};
use super::{count, gc_group, split};
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::{Funk, FunkFiles};
use crate::stats::{self, Rebuild};
use parking_lot::MutexGuard;
use std::sync::Arc;
use std::time::Instant;

/// Rebuilds the chunk's funk (splitting it if it grew too large) if its log
/// is still over its limit: the limit of a chunk with a munk, or, for a
/// munk-less chunk, the munk-less limit counted from when it lost its munk
/// (see `cache::munks`). A request queued before the chunk's state changed
/// (a munk loaded or evicted since, a rebuild done) does nothing.
///
/// A munk-less chunk over its limit is not given a munk here: its logs are
/// adopted, sorted into a run or rebuilt, and a munk comes only from its
/// reads' and writes' heat (`MUNK_LOAD`). A load here read the whole chunk
/// and, in a budget too small for the chunks a write phase keeps hot,
/// evicted another munk to do it, whose log the next rebalance then sorted
/// (docs/design.md §7, "Funk rebalance", step 0).
pub(crate) fn funk_rebalance(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    rebalance_if(inner, chunk, false).map(|_| ())
}

/// Rebuilds the chunk's funk now, whatever its log (`Db::compact`).
/// Returns false if it did not: the chunk was replaced first, or its munk
/// was split instead (the parts may share files); the caller goes on with
/// what replaced it.
pub(crate) fn rebuild_now(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    rebalance_if(inner, chunk, true)
}

/// How far the chunk's active log is over the limit that triggers its
/// rebuild, as a multiple of that limit (0 when under it). A munk-less
/// chunk's log does not count what it took while it had a munk.
pub(crate) fn overdue(inner: &DbInner, chunk: &Chunk) -> u64 {
    let Some(funk) = chunk.funk() else {
        return 0;
    };
    let log = funk.active.appended();
    let (log, limit) = if chunk.has_munk() {
        (log, inner.opts.munk_log_limit())
    } else {
        let munk_era = inner.munks.munk_log(chunk, funk.active.number);
        (log.saturating_sub(munk_era), inner.opts.max_log_size)
    };
    log / limit.max(1)
}

fn rebalance_if(inner: &DbInner, chunk: &Arc<Chunk>, always: bool) -> Result<bool> {
    inner.check_poison()?;
    super::room::keep_floor(inner);
    let own = match chunk.funk_change.try_lock() {
        Some(own) => own,
        // The caller holds no lock (see `maintenance`), so waiting here
        // cannot deadlock. `Db::compact` waits: it must not skip a chunk a
        // maintenance thread is busy with. Puts never come here (with
        // maintenance threads): they are paced instead (`db/write.rs`).
        None if always => chunk.funk_change.lock(),
        None => return Ok(false),
    };
    if chunk.is_retired() {
        return Ok(false);
    }
    inner.open_funk(chunk)?;
    if let Some(m) = chunk.munk() {
        if m.data_bytes() > inner.opts.max_chunk_size {
            drop(m);
            if !split::munk_split(inner, chunk, own)? {
                super::munk_rebalance(inner, chunk, false)?;
            }
            return Ok(false);
        }
    }
    if !always {
        if overdue(inner, chunk) == 0 {
            return Ok(false);
        }
        if adoptable(inner, chunk) {
            // Its log came in key order: keep it as it is, a sorted run
            // that gets and scans read in place, and divert the chunk's
            // puts to a new segment. Nothing is rewritten.
            let (old, _, _) = divert(inner, chunk, &own)?;
            for log in old.logs() {
                log.freeze()?;
            }
            crate::failpoint::failpoint!(inner, "adopt.after_divert");
            stats::add(&inner.counters.local().log_adoptions, 1);
            split_if_large(inner, chunk)?;
            // The new segments' filters are growth the budget cannot
            // refuse.
            super::room::keep_floor(inner);
            return Ok(false);
        }
        if (sortable(inner, chunk) || adoptable_after_sorting(inner, chunk))
            && !super::store_is_idle(inner)
        {
            // Its new log is unsorted, the older ones are runs: write the
            // new one again in key order, a run like them, instead of
            // rewriting the whole chunk. (Or its new log is banded, and
            // the run sorts only what a split left unsorted.) (Once the writes have stopped, a
            // table is what the reads to come want: see `idle`.)
            run_and_split(inner, chunk, &own)?;
            return Ok(false);
        }
    }
    rebuild_locked(inner, chunk, &own, Rebuild::Rebalance).map(|()| true)
}

/// Rebuilds a munk-less chunk into a table unless another thread is
/// changing it or it gained a munk (idle compaction, see `idle`). Returns
/// whether it did.
pub(crate) fn rebuild_idle(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    inner.check_poison()?;
    let Some(own) = chunk.funk_change.try_lock() else {
        return Ok(false);
    };
    if chunk.is_retired() || chunk.has_munk() || chunk.funk().is_none() {
        return Ok(false);
    }
    super::room::keep_floor(inner);
    rebuild_locked(inner, chunk, &own, Rebuild::Rebalance)?;
    Ok(true)
}

/// Cuts a munk-less chunk whose frozen logs (adopted or runs) grew past
/// its size in two, sharing them (nothing is written; see
/// `split::adopt_split`). Its logs' bytes in its range count: a table
/// shared with a neighbour would count whole.
fn split_if_large(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    let (from, to) = (&chunk.min_key, chunk.end_key.as_deref());
    let at = chunk
        .funk()
        .filter(|f| f.log_bytes_for(from, to) > inner.opts.max_chunk_size)
        .and_then(|f| {
            f.frozen
                .iter()
                .max_by_key(|l| l.window(from, to, u64::MAX).bytes())
                .and_then(|l| l.middle_key(from, to))
        });
    match at {
        Some(at) => split::adopt_split(inner, chunk, vec![at]),
        None => Ok(()),
    }
}

/// True if a munk-less chunk's rebalance may write its active log as a
/// sorted run (see [`write_run`]): the log is not banded and spans a few
/// sections, every other segment is banded, it has fewer than
/// [`ADOPTED_MAX`], and its logs' bytes in its range are under twice
/// `max_chunk_size` (past that, runs of updates over a table are merged
/// into it). A chunk whose logs outgrow it is split after the run, sharing
/// them, like an adopting one.
///
/// Unlike an adoption, a run is not refused when log filters are large
/// (`room::logs_have_room`): it replaces the unsorted log's directory (12
/// bytes a record) with a smaller filter and block index (a log shared
/// by split parts keeps its directory until the last of them lets go).
/// Measured reason: at 8x the memory, with the filters past their third
/// of a 64 MiB budget, the rebalances P queued rewrote whole chunks
/// (11 MiB of table for 4 MiB of log) and E100 right after P paid for
/// them: 400-490 scans/s and P 180-190K puts/s with the gate, 1,590-1,650
/// and 234-255K without (peak RSS 159 MiB against 176-183).
fn sortable(inner: &DbInner, chunk: &Chunk) -> bool {
    let (from, to) = (&chunk.min_key, chunk.end_key.as_deref());
    chunk.funk().is_some_and(|f| {
        // (The active log is not banded: the banded ones are frozen.)
        let (banded, unsorted) = f.log_shape();
        !chunk.has_munk()
            && banded < ADOPTED_MAX
            && !f.active.is_banded()
            && unsorted >= RUN_SECTIONS * f.active.section_bytes()
            && f.log_bytes_for(from, to) <= 2 * inner.opts.max_chunk_size
    })
}

/// The work a scan asks for on a munk-less chunk whose unsorted logs grew
/// too large to scan (task `COMPACT_LOG`): sorts them into a run if
/// [`sortable`], else rebuilds the chunk.
pub(crate) fn compact_log(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    let Some(own) = chunk.funk_change.try_lock() else {
        return Ok(()); // Another thread is changing it.
    };
    if chunk.is_retired() || chunk.has_munk() {
        return Ok(());
    }
    inner.open_funk(chunk)?;
    // Another run would make the scans that asked for this costlier.
    if sortable(inner, chunk)
        && !super::store_is_idle(inner)
        && !super::too_many_runs_to_scan(chunk)
    {
        return run_and_split(inner, chunk, &own);
    }
    rebuild_locked(inner, chunk, &own, Rebuild::Rebalance)
}

/// [`write_run`], then a split around the chunk's insertion point if the
/// run found one, else [`split_if_large`]; the new segments' filters are
/// growth the budget cannot refuse.
fn run_and_split(inner: &DbInner, chunk: &Arc<Chunk>, own: &MutexGuard<'_, ()>) -> Result<()> {
    let cuts = write_run(inner, chunk, own)?;
    if cuts.is_empty() {
        split_if_large(inner, chunk)?;
    } else {
        split::adopt_split(inner, chunk, cuts)?;
    }
    super::room::keep_floor(inner);
    Ok(())
}

/// Diverts the chunk's puts, then writes the records of its range in its
/// unsorted segments (the diverted one, and munk-era logs left by a munk)
/// to a new segment in key order, keeping
/// the versions readers may need (tombstones too: older values lie below),
/// each with its version and counter; syncs and freezes it (it is banded)
/// and publishes it in place of the diverted one.
///
/// Returns where to cut the chunk (none if nowhere) so that each of its
/// places taking time-ordered appends has a part of its own, if the run
/// shows such places inside its range (see `appends`): such a part's next
/// logs come in key order and are adopted as they are, where every log
/// of the chunk, mixing the keys of several places, would have to be
/// sorted again.
fn write_run(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    own: &MutexGuard<'_, ()>,
) -> Result<Vec<Vec<u8>>> {
    let started = Instant::now();
    let (_, _, _) = divert(inner, chunk, own)?;
    let now = chunk
        .funk()
        .ok_or_else(|| Error::InvalidArgument("a run of a chunk whose funk is closed".into()))?;
    let (from, to) = (&chunk.min_key, chunk.end_key.as_deref());
    let unsorted: Vec<Arc<LogSegment>> = now
        .frozen
        .iter()
        .filter(|l| !l.is_banded())
        .cloned()
        .collect();
    if unsorted.is_empty() {
        return Ok(Vec::new());
    }
    let w = inner.versions.refresh_watermark();
    // The images read, and what the run's directory, filters and span take
    // while it is written (growth that cannot be refused): under 40 bytes
    // a record.
    // (Large logs, and the largest past working memory's share, are read
    // through an index: `funk::index_threshold`.)
    let threshold = crate::funk::index_threshold(
        unsorted.iter().map(|l| l.appended()),
        super::room::images_cap(inner),
    );
    let image_bytes: u64 = unsorted
        .iter()
        .map(|l| crate::funk::unsorted_memory(l, l.appended(), threshold))
        .sum();
    let records: u64 = unsorted.iter().map(|l| l.records()).sum();
    super::room::room_for(inner, image_bytes + records * 40 + 4096);
    let _image = super::room::hold_work(inner, image_bytes);
    let mut inputs = crate::funk::LogInputs::with_threshold(threshold);
    for l in &unsorted {
        inputs.add(l, 0, u64::MAX)?;
    }
    let view = inputs.view(from, to, &inner.recovery);
    let run = super::files::new_run(inner)?;
    let mut pos = 0;
    let mut synced = 0;
    let tombstones = inner.tombstones.load();
    let mut places = super::appends::InsertionPoints::default();
    while let Some(key) = view.key(pos).map(<[u8]>::to_vec) {
        // Paced writeback, as tables do (`BYTES_PER_SYNC`), of what is
        // written (a block being filled stays in the buffer).
        if run.appended() >= synced + crate::funk::table::BYTES_PER_SYNC {
            run.sync_written()?;
            synced = run.appended();
        }
        let mut versions = Vec::new();
        while view.key(pos) == Some(key.as_slice()) {
            versions.extend(view.entry(pos)?);
            pos += 1;
        }
        // Newest first; appended oldest first, as they came.
        if let Some(newest) = versions.iter().map(|e| e.counter).max() {
            places.add(&key, newest);
        }
        let versions = super::apply_tombstones(versions, &tombstones, w);
        for e in super::gc_versions(versions, w).into_iter().rev() {
            let counter = std::sync::atomic::AtomicU64::new(e.counter);
            run.append(&e.key, e.value.as_deref(), e.version, &counter, false)?;
        }
    }
    run.sync_all()?;
    run.freeze()?;
    crate::failpoint::failpoint!(inner, "run.after_write");
    let mut frozen: Vec<Arc<LogSegment>> = now
        .frozen
        .iter()
        .filter(|l| l.is_banded())
        .cloned()
        .collect();
    frozen.push(run.clone());
    let funk = Funk {
        table: now.table.clone(),
        frozen,
        active: now.active.clone(),
    };
    install(inner, chunk, funk)?;
    crate::failpoint::failpoint!(inner, "run.after_publish");
    remove_unreferenced(
        inner,
        &[FunkFiles {
            table: None,
            logs: unsorted.iter().map(|l| l.number).collect(),
        }],
    );
    let c = inner.counters.local();
    stats::add(&c.log_runs, 1);
    stats::add(&c.run_bytes_written, run.file_bytes());
    stats::add(&c.run_record_bytes, run.appended());
    stats::add(&c.rebuild_micros, stats::micros(started));
    if !super::room::logs_have_room(inner) {
        // The parts' banded logs could not be adopted: each would be
        // rebuilt whole instead of sorted into a run.
        return Ok(Vec::new());
    }
    // Each stretch's part ends at the first key of the chunk above it:
    // the run's next key may lie above other apps' older keys, whose next
    // events the part would then take too.
    let funk = chunk
        .funk()
        .ok_or_else(|| Error::InvalidArgument("a run of a chunk whose funk is closed".into()))?;
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    for s in places.stretches() {
        if cuts.last() != Some(&s.first) {
            cuts.push(s.first);
        }
        if let Some(above) = s.above {
            cuts.push(next_key(inner, &funk, &s.last, &above)?.unwrap_or(above));
        }
    }
    // (Cut only strictly inside the chunk's range.)
    let (from, to) = (&chunk.min_key, chunk.end_key.as_deref());
    cuts.retain(|k| k.as_slice() > from.as_slice() && to.is_none_or(|t| k.as_slice() < t));
    Ok(cuts)
}

/// The smallest live key of `funk` above `after` and below `below`.
fn next_key(inner: &DbInner, funk: &Funk, after: &[u8], below: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut from = after.to_vec();
    from.push(0);
    let room = |n| super::room::room_for(inner, n);
    let mut keys = funk.scan(
        &from,
        Some(below),
        u64::MAX,
        &inner.recovery,
        inner.tombstones.load_full(),
        &room,
    )?;
    keys.next().transpose().map(|k| k.map(|(k, _)| k))
}

/// Band sections a log must span to be written as a run: fewer, and
/// tiny logs would make many tiny files.
pub(crate) const RUN_SECTIONS: u64 = 2;

/// Banded segments a munk-less chunk may keep as they are (adopted)
/// before a rebalance merges them into a table: each one a gets and
/// scans consult in turn.
const ADOPTED_MAX: usize = 8;

/// True if a munk-less chunk's rebalance may adopt its new log (banded,
/// over enough sections to tell) once a run sorts the few unsorted bytes
/// its frozen logs hold, at most a quarter of `max_log_size`: what a part
/// cut around an insertion point inherits of the log that took the
/// chunk's puts while its run was written (see [`write_run`]). Without
/// this, that part would rewrite its whole data at its next rebalance.
/// Refused, like an adoption, when log filters are large. (Measured: with
/// [`sortable`]'s bounds instead, a 5M-event stream at 256 MiB took its
/// log filters and indexes to 94 MiB of a 64 MiB budget, and ingestion
/// fell from 157K to 12K events/s.)
fn adoptable_after_sorting(inner: &DbInner, chunk: &Chunk) -> bool {
    keeps_logs(inner, chunk, |f| {
        let unsorted: u64 = f
            .frozen
            .iter()
            .filter(|l| !l.is_banded())
            .map(|l| l.appended())
            .sum();
        unsorted <= inner.opts.max_log_size / 4
    })
}

/// True if a munk-less chunk's rebalance may adopt its logs instead of
/// rebuilding: every segment is banded (see `funk::log`), the active one
/// over enough sections to tell, and it has fewer than [`ADOPTED_MAX`].
fn adoptable(inner: &DbInner, chunk: &Chunk) -> bool {
    keeps_logs(inner, chunk, |f| f.logs().all(|l| l.is_banded()))
}

/// What [`adoptable`] and [`adoptable_after_sorting`] share: log filters
/// have room, the chunk has no munk and fewer than [`ADOPTED_MAX`] frozen
/// segments, its active one is banded over enough sections to tell, and
/// `logs` accepts the rest.
fn keeps_logs(inner: &DbInner, chunk: &Chunk, logs: impl Fn(&Funk) -> bool) -> bool {
    super::room::logs_have_room(inner)
        && chunk.funk().is_some_and(|f| {
            f.frozen.len() < ADOPTED_MAX
                && !chunk.has_munk()
                && f.active.is_tested_banded()
                && logs(&f)
        })
}

/// Step 2: diverts the chunk's puts to a new segment. Returns the funk as
/// it was (now frozen whole), the counter cut and the new segment.
pub(super) fn divert(
    inner: &DbInner,
    chunk: &Chunk,
    _own: &MutexGuard<'_, ()>,
) -> Result<(Arc<Funk>, u64, Arc<LogSegment>)> {
    let segment = new_segment(inner)?;
    let number = segment.number;
    inner.publish(|m| {
        if let Some(c) = m.chunks.iter_mut().find(|c| c.id == chunk.id) {
            c.files.logs.push(number);
        }
    })?;
    chunk.files.lock().logs.push(number);
    let frozen = chunk.rebalance.write();
    let old = chunk
        .funk()
        .ok_or_else(|| Error::InvalidArgument("diverting a chunk whose funk is not open".into()))?;
    // The segment being frozen is read by the rebuild: no record may stay
    // buffered.
    if let Err(e) = old.active.flush() {
        return inner.poison(e);
    }
    chunk.set_funk(Arc::new(old.with_segment(segment.clone())));
    let cut = chunk.counter.load(std::sync::atomic::Ordering::Acquire);
    drop(frozen);
    Ok((old, cut, segment))
}

/// True if a range delete no reader can look past (at or below `w`)
/// covers the chunk and is newer than every record of its `frozen` funk
/// (and of its munk): the rebuild then writes nothing, and reads nothing.
fn deleted_whole(inner: &DbInner, chunk: &Chunk, frozen: &Funk, w: u64) -> bool {
    inner
        .tombstones
        .load()
        .covering(&chunk.min_key, chunk.end_key.as_deref(), w)
        .is_some_and(|t| chunk.max_version(frozen) < t.version)
}

/// Steps 2–5 for a chunk whose `funk_change` the caller holds; counted as
/// `kind` unless it splits.
pub(super) fn rebuild_locked(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    own: &MutexGuard<'_, ()>,
    kind: Rebuild,
) -> Result<()> {
    let started = Instant::now();
    let (frozen, cut, segment) = divert(inner, chunk, own)?;
    crate::failpoint::failpoint!(inner, "rebalance.after_divert");
    let w = inner.versions.refresh_watermark();
    let max = inner.opts.max_chunk_size;
    // Deferred `Sync` versions the table will hold (`db::deferred`): marked
    // logged once it is published, so that no round writes them again.
    // Only a flagged chunk has any below the cut: every put before the
    // divert set the flag before it let go of the chunk's lock, and a
    // round that cleared it writes and marks them itself. (So `Buffered`
    // stores never walk the chains twice here.)
    let deferred = chunk.unlogged.load(std::sync::atomic::Ordering::Acquire);
    let mut in_table = Vec::new();
    let outputs = match chunk.munk() {
        Some(m) => {
            let mut out = TableOutput::new(inner, u64::MAX);
            let ts = inner.tombstones.load();
            for e in m.entries() {
                if deferred {
                    e.unlogged_below(cut, &mut in_table);
                }
                // `table_entries` already keeps what readers need; the
                // range deletes' stand-ins go like any bottom tombstone.
                let entries = super::apply_tombstones(e.table_entries(cut, w), &ts, w);
                for entry in gc_group(entries, w) {
                    out.add(&entry)?;
                }
            }
            out.finish()?
        }
        None if deleted_whole(inner, chunk, &frozen, w) => Vec::new(),
        None => {
            // The merge holds the unsorted logs read whole and a few
            // blocks of each banded one: charge it, after evicting munks
            // to make room for it if need be.
            let cap = super::room::images_cap(inner);
            let images = frozen.merge_memory(&chunk.min_key, chunk.end_key.as_deref(), cap);
            let _images = super::room::hold_work(inner, images);
            let mut out = TableOutput::new(inner, max * 3 / 4);
            frozen.prefetch(&chunk.min_key, chunk.end_key.as_deref());
            let groups = frozen.key_groups(
                &chunk.min_key,
                chunk.end_key.as_deref(),
                None,
                &inner.recovery,
                cap,
            )?;
            let ts = inner.tombstones.load();
            for group in groups {
                let (_, versions) = group?;
                for entry in gc_group(super::apply_tombstones(versions, &ts, w), w) {
                    out.add(&entry)?;
                }
            }
            out.finish()?
        }
    };
    let old_files = frozen.files();
    let written: u64 = outputs.iter().map(|(_, t)| t.file_size).sum();
    crate::failpoint::failpoint!(inner, "rebalance.after_tables");
    if outputs.len() <= 1 {
        let table = outputs.into_iter().next().map(|(_, t)| t);
        let funk = Funk {
            table,
            frozen: Vec::new(),
            active: segment,
        };
        install(inner, chunk, funk)?;
        in_table.iter().for_each(|v| v.mark_logged());
        count(inner, kind, started, written);
    } else {
        split::commit_funk_split(inner, chunk, outputs, segment)?;
        count(inner, Rebuild::Split, started, written);
    }
    crate::failpoint::failpoint!(inner, "rebalance.before_cleanup");
    remove_unreferenced(inner, &[old_files]);
    Ok(())
}
