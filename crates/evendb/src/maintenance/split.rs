//! Splits: replacing a chunk by two or more chunks over parts of its range.
//!
//! **Munk split** (a chunk whose munk outgrew `max_chunk_size`), in two
//! phases as in the paper:
//!
//! 0. With no chunk lock held, create one empty log segment per part and
//!    publish them as extra logs of the chunk (so a crash at any later point
//!    loses nothing: the old chunk's file list covers every record).
//! 1. **Immutable phase**, in memory only: cut a snapshot of the munk's
//!    compacted entries into parts of about equal size and build their
//!    munks while puts go on; then, under the chunk's `rebalance` lock
//!    held exclusively, carry over what puts changed since to the part of
//!    its key (`munk::rebuild`); make one new chunk per part, with the
//!    part as its munk (none for the settled part of time-ordered keys,
//!    see `cut_where_inserts_go`), the old chunk's funk (shared) plus its
//!    own new segment as active log, and the old chunk's counter; retire
//!    the old chunk for them and swap them into the index. Puts waiting on
//!    the old chunk then go to the new ones; readers of the old chunk go
//!    on, since it no longer changes.
//! 2. Publish the manifest with the new chunks (each listing the shared old
//!    files plus its own segment). Then, for each new chunk that reading
//!    back from disk would cost more than `SHARED_READ_LIMIT` times its own
//!    data (shared logs are read whole, a shared table only over the
//!    chunk's range), write its own table from its munk (versions with
//!    counters below the split's cut) and keep its segment as its only log:
//!    no record is copied, and puts go on throughout. The other parts keep
//!    sharing until their own next rebuild, so a split usually writes
//!    nothing. This is the only time a part's shared files are split: munk
//!    loads and other reads never write.
//!
//! **Funk split** (a munk-less chunk whose rebuilt data needs several
//! tables): the rebuild already diverted the chunk's puts to one new
//! segment and wrote one table per part; the parts share that segment as a
//! frozen log (it takes the old chunk's puts until the swap) and each gets
//! its own new active segment. Publish them, then, under the old chunk's
//! `rebalance` lock, retire it and swap the parts into the index.

use super::appends::{InsertionPoints, Stretch};
use super::count;
use super::files::{install, new_segment, record, remove_unreferenced, TableOutput};
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::table::TableReader;
use crate::funk::{Funk, FunkFiles};
use crate::munk::{
    build, keys_at_size, merged, spare_cells, Carried, Munk, MunkEntry, Snapshot, Unsettled,
};
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// How many bytes of shared files a split part may have to read per byte
/// of its own data before it writes its own table: the bound on the read
/// amplification of a chunk read from disk. Higher means fewer rewrites
/// (lower write amplification) and costlier munk loads and scans of the
/// part from disk.
const SHARED_READ_LIMIT: u64 = 6;

/// Splits a chunk with a munk; the caller holds its `funk_change`. Returns
/// false, splitting nothing, if the munk's live data is within the chunk
/// size after all (overwrites): the caller rebalances it in memory.
pub(super) fn munk_split(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    own: MutexGuard<'_, ()>,
) -> Result<bool> {
    let started = Instant::now();
    let max = inner.opts.max_chunk_size;
    let Some(munk) = chunk.munk() else {
        return Ok(true);
    };
    // The munk's data size is an upper bound (overwrites count); measure
    // what is live. Overwrites alone call for neither a split nor a
    // rebuild: puts already cut the chains they make longer, so the
    // estimate is lowered and the munk is rebuilt only if it is full.
    let before = munk.data_bytes();
    let live = munk.live_data();
    let (munk_keys, munk_free) = (munk.keys(), munk.unclaimed());
    if live <= max {
        munk.recount(before, live);
        return Ok(false);
    }
    drop(munk);
    let parts = live.div_ceil(max * 3 / 4).max(2) as usize;
    // Step 0. (Two parts may become three: see `cut_where_inserts_go`.)
    let segments = extra_logs(inner, chunk, if parts == 2 { 3 } else { parts })?;
    let numbers: Vec<u64> = segments.iter().map(|s| s.number).collect();
    crate::failpoint::failpoint!(inner, "munk_split.after_segments");
    // The parts' cell arrays are charged in step 1, while the old munk's
    // is still held by its readers: make room for them now, with no lock
    // held.
    // Each part's cell array, with a slack per part for its fixed parts
    // and the allocator's rounding.
    let arrays = Munk::array_charge(munk_keys + munk_keys / 2 + (64 + munk_free) * parts)
        + parts as u64 * Munk::array_charge(64);
    super::room::room_for(inner, arrays);
    if inner.budget.free() < arrays {
        // No munk left to evict: the budget is held by what cannot be
        // (filters, indexes). The chunk goes on without its munk; a
        // rebalance of its funk splits it.
        super::room::evict_munk(inner, chunk);
        return Ok(true);
    }

    // Step 1, with no chunk lock held while puts go on into the munk: cut
    // its entries into parts and build their munks (one rebuilder of a
    // munk at a time).
    let Some(munk) = chunk.munk() else {
        return Ok(true);
    };
    let one = munk.lock_rebuild();
    let current = || chunk.munk().is_some_and(|m| Arc::ptr_eq(&m, &munk));
    if !current() {
        // Rebalanced meanwhile; its next put asks for the split again.
        return Ok(true);
    }
    let w = inner.versions.refresh_watermark();
    let tombstones = inner.tombstones.load();
    let isolate = super::room::logs_have_room(inner);
    let prepare = || {
        // Puts may add as many keys as the munk has free cells before the
        // carry-over: any part may need room for them all.
        let more = munk.unclaimed();
        let (snapshot, entries) = munk.pruned_snapshot(w, &tombstones);
        let cut = cut_where_inserts_go(entries, parts, &munk.recent_keys(), isolate);
        Prepared::new(snapshot, cut, more, &chunk.min_key, inner)
    };
    let mut prepared = prepare();
    // The active segment's buffered appends are written before the lock
    // is taken, so that the flush under it writes only what came since
    // (see `flush_before_lock`).
    flush_before_lock(inner, chunk)?;
    // Then, with puts stopped, carry over what they changed meanwhile.
    let frozen = chunk.rebalance.write();
    let Some(funk) = chunk.funk().filter(|_| current()) else {
        // Evicted meanwhile: a funk rebuild will split it.
        return Ok(true);
    };
    // The old active segment is shared, frozen, by the parts: write to it
    // what the munk deferred (settled parts read it there), and flush it.
    let deferred = crate::db::log_if_flagged(inner, chunk, &munk, &funk, || {});
    if let Err(e) = deferred.and_then(|()| funk.active.flush()) {
        return inner.poison(e).map(|()| true);
    }
    let carried = prepared.carry_over(&munk).or_else(|| {
        // A part ran out of cells: cut again, from the munk as no put
        // changes it now.
        crate::stats::add(&inner.counters.local().munk_rebalance_retries, 1);
        prepared = prepare();
        prepared.carry_over(&munk)
    });
    let Some(Carried {
        munks,
        changed,
        unowned,
    }) = carried
    else {
        return Ok(true);
    };
    let cut = chunk.counter.load(Ordering::Acquire);
    let mut children: Vec<Arc<Chunk>> = Vec::with_capacity(munks.len());
    let mins = &prepared.mins;
    for (i, m) in munks.into_iter().enumerate() {
        let end = mins.get(i + 1).cloned().or_else(|| chunk.end_key.clone());
        let child_funk = funk.for_part(segments[i].clone(), &mins[i], end.as_deref());
        let child = Arc::new(Chunk::new(
            inner.next_chunk_id(),
            mins[i].clone(),
            end,
            child_funk.files(),
        ));
        child.counter.store(cut, Ordering::Release);
        child.set_funk(Arc::new(child_funk));
        if let Some(m) = m {
            let g = child.rebalance.write();
            child.set_munk(&g, Some(Arc::new(m)));
        }
        children.push(child);
    }
    // Hold the parts' funk_change through phase 2.
    let child_locks: Vec<_> = children.iter().map(|c| c.funk_change.lock_arc()).collect();
    let _settled = inner
        .budget
        .keep(crate::cache::budget::Kind::Munks, unowned);
    chunk.retire(children.clone());
    inner.index.replace(std::slice::from_ref(chunk), &children);
    // Readers that still reach the old chunk read its funk, which has every
    // record up to now; its munk's memory goes as soon as they let go.
    chunk.set_munk(&frozen, None);
    inner.munks.remove(chunk);
    for c in children.iter().filter(|c| c.has_munk()) {
        inner.munks.add(c);
    }
    drop(frozen);
    drop(one);
    drop(own);
    inner.maintenance.retire_munk(munk);
    // Each part's entries as the munk held them at the cut.
    let isolated = prepared.isolated;
    let child_entries: Vec<Vec<MunkEntry>> = std::mem::take(&mut prepared.pieces)
        .into_iter()
        .zip(changed)
        .map(|(piece, changed)| merged(piece, changed))
        .collect();
    // The parts share the old active segment frozen.
    if let Err(e) = funk.active.freeze() {
        return inner.poison(e).map(|()| true);
    }

    // Step 2.
    crate::failpoint::failpoint!(inner, "munk_split.after_swap");
    let records: Vec<_> = children
        .iter()
        .map(|c| record(c, c.files.lock().clone()))
        .collect();
    inner.publish(|m| replace_records(m, &[chunk.id], records))?;
    crate::failpoint::failpoint!(inner, "munk_split.after_publish");
    let mut written = 0;
    for (i, (child, entries)) in children.iter().zip(&child_entries).enumerate() {
        let owned: u64 = entries.iter().map(MunkEntry::data_size).sum();
        // What reading the part back from disk costs: every shared log
        // whole (records are in arrival order) or, of a banded one, the
        // window holding its range, and of the shared table only the
        // blocks of its range (about its own data at most).
        let read = child.funk().map_or(0, |f| {
            f.log_bytes_for(&child.min_key, child.end_key.as_deref())
        }) + owned;
        // A part keeps sharing the old files (writing nothing) unless that
        // is over `SHARED_READ_LIMIT` times its own data: then it writes
        // its own table now. So does a munk-less (settled) part whose
        // unsorted logs are too large to scan, as an evicted munk is
        // flushed (`room::evict_munk`): its entries are at hand.
        let unsorted = !child.has_munk() && super::log_too_large_to_scan(inner, child);
        // A part cut around the chunk's insertion point writes its own
        // table rather than share an unsorted log: else every part split
        // from it later would inherit that log (its keys span the range)
        // and the settled ones would each write a table for it.
        let isolated = isolated == Some(i)
            && child
                .funk()
                .is_some_and(|f| f.frozen.iter().any(|l| !l.is_banded()));
        if unsorted || isolated || read > owned.saturating_mul(SHARED_READ_LIMIT) {
            written += rebuild_from_munk_since(inner, child, entries, cut)?;
        }
    }
    drop(child_locks);
    let unused = FunkFiles {
        table: None,
        logs: numbers[children.len()..].to_vec(),
    };
    remove_unreferenced(inner, &[funk.files(), unused]);
    count(inner, crate::stats::Rebuild::Split, started, written);
    Ok(true)
}

/// How a munk split cuts the munk's entries (see [`cut_where_inserts_go`]).
struct Cut {
    /// The parts in key order, each with whether it goes on without a
    /// munk: it took few of the puts since the munk was built, so it is
    /// expected to take few from now on.
    parts: Vec<(Vec<MunkEntry>, bool)>,
    /// The part cut around the chunk's one insertion point, if any.
    isolated: Option<usize>,
}

impl Cut {
    /// The data size of all the parts' entries.
    fn data(&self) -> u64 {
        self.parts
            .iter()
            .flat_map(|(p, _)| p)
            .map(MunkEntry::data_size)
            .sum()
    }
}

/// A split's parts built from a snapshot of the munk (see
/// [`Snapshot::carry_over`]).
struct Prepared {
    snapshot: Option<Snapshot>,
    /// Each part's new munk; `None` for a part that goes on without one.
    built: Vec<Option<Unsettled>>,
    /// Each part's entries.
    pieces: Vec<Vec<MunkEntry>>,
    /// The part cut around the chunk's one insertion point, if any.
    isolated: Option<usize>,
    /// Each part's first key (the chunk's for the first).
    mins: Vec<Vec<u8>>,
    /// Bytes charged for the entries of the parts without munks, held
    /// until step 2 is done.
    settled: u64,
}

impl Prepared {
    /// The parts `cut` makes, each munk with room for `more` keys besides
    /// its own spare cells: the part taking the chunk's inserts (the one
    /// with a munk beside parts without) for the keys it may take before
    /// its next split, as a munk rebalance sizes a munk that took inserts
    /// (`spare_cells`), the others for half their keys. (Measured in a
    /// sequential load at 256 MiB, alternating: 410-497 munk rebalances a
    /// load against 454-509 with half their keys for every part, about
    /// two per split either way.)
    fn new(snapshot: Snapshot, cut: Cut, more: usize, min_key: &[u8], inner: &DbInner) -> Self {
        let mins = cut
            .parts
            .iter()
            .enumerate()
            .map(|(i, (p, _))| match (i, p.first()) {
                (0, _) | (_, None) => min_key.to_vec(),
                (_, Some(e)) => e.key.to_vec(),
            })
            .collect();
        let inserting = cut.parts.iter().any(|(_, munkless)| *munkless);
        let max = inner.opts.max_chunk_size;
        let room = match inserting {
            true => inserting_room(&cut, max, inner.budget.limit()),
            false => 0,
        };
        let built = cut
            .parts
            .iter()
            .map(|(piece, munkless)| {
                // A part that takes few puts (the settled part of
                // time-ordered keys takes none) goes on without a munk (its
                // funk has all its data, as after an eviction) unless reads
                // heat it. Building one that memory pressure evicts soon
                // after cost the puts up to a fifth of their time in a
                // sequential load (a munk's cells and versions are freed
                // one atomic pointer at a time). Its entries are held until
                // step 2 is done, and their charge with them (`settled`).
                (!munkless).then(|| {
                    let data = piece.iter().map(MunkEntry::data_size).sum();
                    let own = spare_cells(piece.len(), data, inserting, max) + more;
                    let spare = own.max(room.saturating_sub(piece.len()));
                    Unsettled::build(piece.clone(), spare, &inner.budget)
                })
            })
            .collect();
        let settled = cut
            .parts
            .iter()
            .filter(|(_, munkless)| *munkless)
            .flat_map(|(piece, _)| piece)
            .map(MunkEntry::charge)
            .sum();
        Prepared {
            snapshot: Some(snapshot),
            built,
            pieces: cut.parts.into_iter().map(|(p, _)| p).collect(),
            isolated: cut.isolated,
            mins,
            settled,
        }
    }

    /// See [`Snapshot::carry_over`]; `None` once tried.
    fn carry_over(&mut self, old: &Munk) -> Option<Carried> {
        let built = std::mem::take(&mut self.built);
        self.snapshot.take()?.carry_over(
            old,
            built,
            self.mins.get(1..).unwrap_or_default(),
            self.settled,
        )
    }
}

/// Cells for the part of `cut` that takes the chunk's inserts: half again
/// as many keys as the chunk holds at `max_chunk_size` (at the density of
/// all its parts), so that it reaches its next split before its cells run
/// out even when that split starts late, and is never rebuilt in memory
/// before it; at most a sixteenth of the memory budget in cells.
/// Measured reason: sized from the part's own keys (at most three times
/// them), its munk was rebuilt in memory two or three times between
/// splits, and while its split waited for the maintenance thread its puts
/// found it full and rebuilt it themselves, 120-250 times in a load in key
/// order of 4,000,000 100-byte values at a 1 GiB cap (4-7 ms a wait on
/// average, a rebuild 9 ms; the worst puts 25-64 ms); with this room and
/// the cut of [`appends_at_top`], 12-20 times.
fn inserting_room(cut: &Cut, max_chunk_size: u64, budget: u64) -> usize {
    let keys: usize = cut.parts.iter().map(|(p, _)| p.len()).sum();
    let at_split = keys_at_size(keys, cut.data(), max_chunk_size);
    let most = budget / 16 / (Munk::array_charge(1024) / 1024).max(1);
    at_split
        .saturating_add(at_split / 2)
        .min(usize::try_from(most).unwrap_or(usize::MAX))
}

/// Cuts a munk's entries for a split, where the puts since the munk was
/// built (its new keys) say the next ones will go. With two parts due:
///
/// - When a quarter of the new keys or more form one stretch, neighbours
///   in key order that arrived in key order, with older keys above it,
///   the chunk takes time-ordered appends at that place inside its range
///   (the end of one app's events, with the next apps' older events
///   above): cut around that stretch (see [`isolated_run`]). Its part takes those
///   appends alone, so its log comes in key order (banded) and is read in
///   place; with neighbours' keys mixed in, no log of the chunk would be,
///   and every part split from it would inherit its unsorted logs. The
///   parts below and above it go on without munks.
/// - When all new keys sit in the upper part of its range (time-ordered
///   keys, the newest appended at the end), cut two parts at the lowest
///   of them: the lower part holds the settled data and will not change,
///   the upper one takes the new keys. When the new keys came at the very
///   top ([`appends_at_top`]: a load in key order), cut at nine tenths of
///   the data instead, wherever the lowest new key is: the upper part,
///   with its munk, starts small and takes the appends up to the next
///   split (see [`inserting_room`]). (A part with that room is not rebuilt
///   before its split, so its new keys are all it took since the last
///   one: cut at the lowest of them, the lower part held under two fifths,
///   the cut fell to equal parts with munks, and a load of 100-byte values
///   split 100 times instead of 74, its puts waiting 0.9 s for chunk locks
///   instead of 0.6.)
///
/// Otherwise, `parts` parts of equal size, all with munks. `isolate`
/// false leaves out the first case: when log filters are too large for
/// adoptions (`room::logs_have_room`), the part's banded logs would be
/// rebuilt whole rather than adopted.
fn cut_where_inserts_go(
    entries: Vec<MunkEntry>,
    parts: usize,
    recent: &[Arc<[u8]>],
    isolate: bool,
) -> Cut {
    if parts == 2 && !recent.is_empty() {
        let mut recent: Vec<&[u8]> = recent.iter().map(|k| &**k).collect();
        recent.sort_unstable();
        recent.dedup();
        if let Some((from, to)) = isolate.then(|| isolated_run(&entries, &recent)).flatten() {
            let mut lower = entries;
            let mut run = lower.split_off(from);
            let upper = run.split_off(to - from);
            let mut parts = Vec::with_capacity(3);
            if !lower.is_empty() {
                parts.push((lower, true));
            }
            let isolated = parts.len();
            parts.push((run, false));
            parts.push((upper, true));
            return Cut {
                parts,
                isolated: Some(isolated),
            };
        }
        let lowest = recent[0];
        let total: u64 = entries.iter().map(MunkEntry::data_size).sum();
        let mut at = entries.partition_point(|e| *e.key < *lowest);
        if appends_at_top(&entries, &recent) {
            let mut sum = 0;
            at = entries
                .iter()
                .position(|e| {
                    sum += e.data_size();
                    sum * 10 >= total * 9
                })
                .map_or(at, |i| i + 1);
        }
        let below: u64 = entries[..at].iter().map(MunkEntry::data_size).sum();
        let both_sides = at > 0 && at < entries.len();
        // (At least two fifths below: the upper part of a munk split
        // at the same place last time holds half, its new keys.)
        if both_sides && below * 5 >= total * 2 && below * 20 <= total * 19 {
            let mut lower = entries;
            let upper = lower.split_off(at);
            return Cut {
                parts: vec![(lower, true), (upper, false)],
                isolated: None,
            };
        }
    }
    Cut {
        parts: build::cut(entries, parts)
            .into_iter()
            .map(|p| (p, false))
            .collect(),
        isolated: None,
    }
}

/// True if the new keys (`recent`, sorted, not empty) came at the top of
/// the entries: from the twentieth new key up, nine keys of ten are new,
/// and nine old keys of ten lie below it. (The lowest new keys may lie
/// below old ones: a writer that took its key in a load in key order and
/// was descheduled before putting it, while another put thousands above
/// it. Inserts spread over the range leave most old keys above any new
/// one.)
fn appends_at_top(entries: &[MunkEntry], recent: &[&[u8]]) -> bool {
    let (Some(last), Some(&pivot)) = (entries.last(), recent.get(recent.len() / 20)) else {
        return false;
    };
    let at = entries.partition_point(|e| *e.key < *pivot);
    let above = entries.len() - at;
    // Keys put after the snapshot are not among the entries.
    let new = recent.partition_point(|k| *k <= &*last.key);
    let new_above = new.saturating_sub(recent.len() / 20).min(above);
    let old_above = above - new_above;
    let old = entries.len().saturating_sub(new);
    at > 0 && old_above * 10 <= above && old_above * 10 <= old
}

/// The entries `[from, to)` of the longest stretch of new keys (`recent`,
/// sorted) that are neighbours and arrived in key order (see `appends`,
/// with their newest versions' counters; a neighbour app whose every key
/// is new too breaks the arrival order). Returned if it holds a quarter of
/// the new keys and older keys lie above it.
fn isolated_run(entries: &[MunkEntry], recent: &[&[u8]]) -> Option<(usize, usize)> {
    let mut places = InsertionPoints::default();
    let mut r = 0;
    for e in entries {
        while r < recent.len() && recent[r] < &*e.key {
            r += 1;
        }
        if r < recent.len() && recent[r] == &*e.key {
            places.add(&e.key, e.head.as_ref().map_or(0, |h| h.counter()));
        } else {
            places.interrupt(&e.key);
        }
    }
    let news = places.keys();
    // The longest (the first of equals); one reaching the last entry has
    // no older keys above it: the settled cut is the one for it.
    let best = places
        .stretches()
        .into_iter()
        .filter(|s| s.above.is_some())
        .fold(None::<Stretch>, |best, s| match best {
            Some(b) if b.keys >= s.keys => Some(b),
            _ => Some(s),
        })?;
    if best.keys * 4 < news {
        return None;
    }
    let at = |k: &[u8]| entries.partition_point(|e| *e.key < *k);
    Some((at(&best.first), at(best.above.as_deref()?)))
}

/// Commits a funk split: `outputs` (first key, table) per part. The parts
/// share `segment` (the puts that arrived during the rebuild) as a frozen
/// log, and each gets its own new active segment: a shared active segment
/// would grow with every part's puts, and each part would count them all
/// against its own munk-less log limit and be rewritten once per part.
pub(super) fn commit_funk_split(
    inner: &DbInner,
    chunk: &Arc<Chunk>,
    outputs: Vec<(Vec<u8>, Arc<TableReader>)>,
    segment: Arc<LogSegment>,
) -> Result<()> {
    crate::failpoint::failpoint!(inner, "split.after_tables");
    let n = outputs.len();
    let mut actives = Vec::with_capacity(n);
    for _ in 0..n {
        actives.push(new_segment(inner)?);
    }
    let mut children = Vec::with_capacity(n);
    let mins: Vec<Vec<u8>> = outputs
        .iter()
        .enumerate()
        .map(|(i, (k, _))| {
            if i == 0 {
                chunk.min_key.clone()
            } else {
                k.clone()
            }
        })
        .collect();
    for (i, ((_, table), active)) in outputs.into_iter().zip(actives).enumerate() {
        let end = mins.get(i + 1).cloned().or_else(|| chunk.end_key.clone());
        let funk = Funk {
            table: Some(table),
            frozen: vec![segment.clone()],
            active,
        };
        let child = Arc::new(Chunk::new(
            inner.next_chunk_id(),
            mins[i].clone(),
            end,
            funk.files(),
        ));
        child.set_funk(Arc::new(funk));
        children.push(child);
    }
    let records: Vec<_> = children
        .iter()
        .map(|c| record(c, c.files.lock().clone()))
        .collect();
    inner.publish(|m| replace_records(m, &[chunk.id], records))?;
    crate::failpoint::failpoint!(inner, "split.after_publish");
    let frozen = chunk.rebalance.write();
    let cut = chunk.counter.load(Ordering::Acquire);
    for c in &children {
        c.counter.store(cut, Ordering::Release);
    }
    chunk.retire(children.clone());
    inner.index.replace(std::slice::from_ref(chunk), &children);
    drop(frozen);
    // The parts share it frozen; no put reaches it any more.
    segment.freeze()?;
    Ok(())
}

/// Splits a munk-less chunk whose logs were adopted or sorted into runs
/// (see `rebuild`) at the keys `at` (ascending, strictly inside its
/// range), writing nothing: each part keeps the chunk's table and
/// those of its (frozen) segments that may hold its keys, and gets its own
/// new active segment. The protocol is the munk split's: the parts' new
/// segments are published as extra logs of the chunk first, so a crash at
/// any point loses nothing; then, under the chunk's `rebalance` lock, the
/// parts replace it; then the manifest lists them. The caller holds the
/// chunk's `funk_change` and has diverted its puts (every segment but the
/// active one is final).
pub(super) fn adopt_split(inner: &DbInner, chunk: &Arc<Chunk>, at: Vec<Vec<u8>>) -> Result<()> {
    let started = Instant::now();
    let segments = extra_logs(inner, chunk, at.len() + 1)?;
    crate::failpoint::failpoint!(inner, "adopt_split.after_segments");
    flush_before_lock(inner, chunk)?;
    let frozen = chunk.rebalance.write();
    if chunk.has_munk() || chunk.is_retired() {
        return Ok(()); // A munk load won the chunk meanwhile.
    }
    let Some(funk) = chunk.funk() else {
        return Ok(());
    };
    if let Err(e) = funk.active.flush() {
        return inner.poison(e);
    }
    let cut = chunk.counter.load(Ordering::Acquire);
    let mut froms = vec![chunk.min_key.clone()];
    froms.extend(at);
    let mut tos: Vec<Option<Vec<u8>>> = froms[1..].iter().cloned().map(Some).collect();
    tos.push(chunk.end_key.clone());
    let ranges = froms.into_iter().zip(tos);
    let mut children = Vec::with_capacity(segments.len());
    for ((from, to), segment) in ranges.into_iter().zip(segments) {
        let part = funk.for_part(segment, &from, to.as_deref());
        let child = Arc::new(Chunk::new(inner.next_chunk_id(), from, to, part.files()));
        child.counter.store(cut, Ordering::Release);
        child.set_funk(Arc::new(part));
        children.push(child);
    }
    chunk.retire(children.clone());
    inner.index.replace(std::slice::from_ref(chunk), &children);
    drop(frozen);
    funk.active.freeze()?;
    crate::failpoint::failpoint!(inner, "adopt_split.after_swap");
    let records: Vec<_> = children
        .iter()
        .map(|c| record(c, c.files.lock().clone()))
        .collect();
    inner.publish(|m| replace_records(m, &[chunk.id], records))?;
    remove_unreferenced(inner, &[funk.files()]);
    count(inner, crate::stats::Rebuild::Split, started, 0);
    Ok(())
}

/// Writes the buffered appends of `chunk`'s active segment to its file
/// with no chunk lock held; a split then flushes it again under the lock,
/// which writes only what puts appended in between. Measured reason: in
/// P zipf-composite at 8x a 64 MiB budget an adopted split held the lock
/// (and every put to the chunk) up to 24 ms, its flush the only I/O under
/// it: a write into the page cache of a cgroup at its limit.
fn flush_before_lock(inner: &DbInner, chunk: &Chunk) -> Result<()> {
    match chunk.funk().map(|f| f.active.flush()) {
        Some(Err(e)) => inner.poison(e),
        _ => Ok(()),
    }
}

/// Creates `n` empty segments and publishes them as extra logs of `chunk`
/// (step 0 of a split: from here on a crash loses nothing, the chunk's
/// file list covering every record the parts will take).
fn extra_logs(inner: &DbInner, chunk: &Chunk, n: usize) -> Result<Vec<Arc<LogSegment>>> {
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        segments.push(new_segment(inner)?);
    }
    let numbers: Vec<u64> = segments.iter().map(|s| s.number).collect();
    inner.publish(|m| {
        if let Some(c) = m.chunks.iter_mut().find(|c| c.id == chunk.id) {
            c.files.logs.extend(&numbers);
        }
    })?;
    chunk.files.lock().logs.extend(&numbers);
    Ok(segments)
}

/// Replaces the records of the adjacent chunks `old` (in key order) by
/// `new`, at their position.
pub(super) fn replace_records(
    m: &mut crate::manifest::Manifest,
    old: &[u64],
    new: Vec<crate::manifest::ChunkRecord>,
) {
    let pos = m
        .chunks
        .iter()
        .position(|c| old.contains(&c.id))
        .unwrap_or(m.chunks.len());
    m.chunks.retain(|c| !old.contains(&c.id));
    for (k, r) in new.into_iter().enumerate() {
        m.chunks.insert(pos + k, r);
    }
}

/// Rebuilds a chunk from its munk with the counter cut of its creation:
/// the second phase of a split (see `split`). Its active segment holds
/// exactly the puts since the cut, so it stays the active segment and no
/// divert is needed. Returns the bytes of table written.
fn rebuild_from_munk_since(
    inner: &DbInner,
    chunk: &Chunk,
    entries: &[MunkEntry],
    cut: u64,
) -> Result<u64> {
    let w = inner.versions.refresh_watermark();
    let mut out = TableOutput::new(inner, u64::MAX);
    for e in entries {
        for entry in e.table_entries(cut, w) {
            out.add(&entry)?;
        }
    }
    let table = out.finish()?.into_iter().next().map(|(_, t)| t);
    let written = table.as_ref().map_or(0, |t| t.file_size);
    crate::failpoint::failpoint!(inner, "split_part.after_table");
    let old = chunk
        .funk()
        .ok_or_else(|| Error::InvalidArgument("a split part without a funk".into()))?;
    let funk = Funk {
        table,
        frozen: Vec::new(),
        active: old.active.clone(),
    };
    install(inner, chunk, funk)?;
    crate::failpoint::failpoint!(inner, "split_part.before_cleanup");
    remove_unreferenced(inner, &[old.files()]);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::munk::Version;

    type Key = (u32, u64);

    /// Entries for keys `app | seq` (4 + 8 bytes, big-endian) with 100-byte
    /// values: the old ones put first (counter 1), then `new` in the order
    /// given (counters from 100), in key order.
    fn entries(old: &[Key], new: &[Key]) -> Vec<MunkEntry> {
        let mut all: Vec<(Key, u64)> = old.iter().map(|&k| (k, 1)).collect();
        all.extend(new.iter().enumerate().map(|(i, &k)| (k, 100 + i as u64)));
        all.sort_unstable();
        all.into_iter()
            .map(|(k, c)| MunkEntry {
                key: key(k),
                head: Some(Arc::new(Version::new(Some(&[7; 100]), 1, c))),
            })
            .collect()
    }

    fn key((app, seq): Key) -> Arc<[u8]> {
        let mut k = app.to_be_bytes().to_vec();
        k.extend_from_slice(&seq.to_be_bytes());
        k.into()
    }

    fn recent(new: &[Key]) -> Vec<Arc<[u8]>> {
        new.iter().map(|&k| key(k)).collect()
    }

    fn cut(old: &[Key], new: &[Key]) -> Cut {
        cut_where_inserts_go(entries(old, new), 2, &recent(new), true)
    }

    fn sizes(cut: &Cut) -> Vec<(usize, bool)> {
        cut.parts.iter().map(|(p, m)| (p.len(), *m)).collect()
    }

    #[test]
    fn one_insertion_point_inside_the_range_gets_a_part_of_its_own() {
        // App 5's older events and apps 6..9's; then 200 new events of
        // app 5, with one of app 8 put halfway through.
        let mut old: Vec<Key> = (0..300).map(|s| (5, s)).collect();
        old.extend((6..10).flat_map(|a| (0..50).map(move |s| (a, s))));
        let mut new: Vec<Key> = (300..400).map(|s| (5, s)).collect();
        new.push((8, 1000));
        new.extend((400..500).map(|s| (5, s)));
        let cut = cut(&old, &new);
        assert_eq!(sizes(&cut), vec![(300, true), (200, false), (201, true)]);
        assert_eq!(cut.isolated, Some(1));
        // The isolated part ends where app 6 begins: app 5's next events
        // land in it.
        assert_eq!(*cut.parts[2].0[0].key, *key((6, 0)));
    }

    #[test]
    fn a_neighbour_whose_keys_are_all_new_stays_out_of_the_part() {
        // App 6 has no older keys: its three events, put at random times
        // during app 5's, are new keys right above app 5's.
        let old: Vec<Key> = (0..100)
            .map(|s| (5, s))
            .chain((0..100).map(|s| (7, s)))
            .collect();
        let mut new: Vec<Key> = (100..200).map(|s| (5, s)).collect();
        new.insert(10, (6, 0));
        new.insert(50, (6, 1));
        new.insert(90, (6, 2));
        let cut = cut(&old, &new);
        assert_eq!(sizes(&cut), vec![(100, true), (100, false), (103, true)]);
        assert_eq!(*cut.parts[2].0[0].key, *key((6, 0)));
    }

    #[test]
    fn a_run_at_the_start_of_the_range_has_no_lower_part() {
        let old: Vec<Key> = (0..100).map(|s| (6, s)).collect();
        let new: Vec<Key> = (0..100).map(|s| (5, s)).collect();
        let cut = cut(&old, &new);
        assert_eq!(sizes(&cut), vec![(100, false), (100, true)]);
        assert_eq!(cut.isolated, Some(0));
    }

    #[test]
    fn new_keys_at_the_end_of_the_range_cut_off_the_settled_part() {
        // App 5's new events above its old ones, app 6's old ones above
        // them: the new keys are not the range's top.
        let old: Vec<Key> = (0..600)
            .map(|s| (5, s))
            .chain((0..100).map(|s| (6, s)))
            .collect();
        let new: Vec<Key> = (600..1000).map(|s| (5, s)).collect();
        let cut = cut_where_inserts_go(entries(&old, &new), 2, &recent(&new), false);
        assert_eq!(sizes(&cut), vec![(600, true), (500, false)]);
        assert_eq!(cut.isolated, None);
    }

    /// Keys of app 5 with these sequence numbers.
    fn app5(seqs: impl IntoIterator<Item = u64>) -> Vec<Key> {
        seqs.into_iter().map(|s| (5, s)).collect()
    }

    /// Asserts the cut of a load in key order: nine tenths settled, without
    /// a munk, and a tenth with one, taking the appends.
    fn assert_cut_at_nine_tenths(old: &[Key], new: &[Key]) {
        assert_eq!(sizes(&cut(old, new)), vec![(900, true), (100, false)]);
    }

    #[test]
    fn a_load_in_key_order_leaves_the_upper_part_a_tenth() {
        // The part the last split left the load: 100 keys, then 900
        // appended above them. Cut at the lowest new key, the upper part
        // would hold nine tenths; cut in equal parts, half.
        assert_cut_at_nine_tenths(&app5(0..100), &app5(100..1000));
        // New keys only in the top twentieth: still nine tenths below.
        assert_cut_at_nine_tenths(&app5(0..950), &app5(950..1000));
    }

    #[test]
    fn two_writers_a_little_apart_still_append_at_the_top() {
        // Old keys up to 520, of which 500..520 every other one: the
        // other writer's keys of that stretch came after the munk was
        // built.
        let old = app5((0..500).chain((500..520).step_by(2)));
        assert_cut_at_nine_tenths(&old, &app5((501..520).step_by(2).chain(520..1000)));
    }

    #[test]
    fn a_late_key_of_a_descheduled_writer_does_not_hide_the_appends() {
        // Key 500 was taken before the munk was built and put after it,
        // once the other writer had put 501..600.
        let old = app5((0..500).chain(501..600));
        assert_cut_at_nine_tenths(&old, &app5(std::iter::once(500).chain(600..1000)));
    }

    #[test]
    fn inserts_spread_over_a_small_munk_are_not_appends_at_the_top() {
        // A munk built with every tenth key, then puts of the others in
        // random order: nine keys of ten are new, but the old ones lie
        // all over the range, not below the new ones.
        let old: Vec<Key> = (0..1000).step_by(10).map(|s| (5, s)).collect();
        let mut new: Vec<Key> = (0..1000).filter(|s| s % 10 != 0).map(|s| (5, s)).collect();
        new.reverse();
        let cut = cut_where_inserts_go(entries(&old, &new), 2, &recent(&new), false);
        assert_eq!(sizes(&cut), vec![(500, false), (500, false)]);
    }

    #[test]
    fn the_part_taking_inserts_has_room_up_to_half_again_a_chunk() {
        let c = cut(&app5(0..100), &app5(100..1000));
        let data = c.data();
        // A chunk twice this size holds 2,000 keys: room for 3,000.
        assert_eq!(inserting_room(&c, 2 * data, 1 << 30), 3_000);
        // At most a sixteenth of the budget in cells.
        let budget = 16 * Munk::array_charge(1024);
        let most = inserting_room(&c, 2 * data, budget);
        assert!((1000..=1100).contains(&most), "{most}");
    }

    #[test]
    fn scattered_new_keys_cut_equal_parts_with_munks() {
        // Every third key new: no stretch, nowhere settled.
        let old: Vec<Key> = (0..900).filter(|s| s % 3 != 0).map(|s| (5, s)).collect();
        let new: Vec<Key> = (0..900).step_by(3).map(|s| (5, s)).collect();
        let cut = cut(&old, &new);
        assert_eq!(sizes(&cut), vec![(450, false), (450, false)]);
        assert_eq!(cut.isolated, None);
    }

    #[test]
    fn new_keys_that_did_not_arrive_in_key_order_are_not_isolated() {
        // Random puts into a gap of the key space: new neighbours, but not
        // appends.
        let old: Vec<Key> = (0..100).chain(300..400).map(|s| (5, s)).collect();
        let new: Vec<Key> = (100..300).rev().map(|s| (5, s)).collect();
        let cut = cut(&old, &new);
        assert_eq!(cut.isolated, None);
    }
}
