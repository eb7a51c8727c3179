//! Rebuilding chunks: funk rebalance, split and merge, one procedure.
//!
//! `rebuild` takes one chunk (or two adjacent ones, to merge), and:
//!
//! 1. takes each chunk's `rebuilding` lock with `try_lock` (a chunk already
//!    being rebuilt is left to that thread);
//! 2. diverts each chunk's puts to a new, empty log segment, and publishes
//!    the segment in the manifest before any put can land in it;
//! 3. reads the frozen table and segments without holding any chunk lock,
//!    keeping per key the versions readers may still need (`gc_group`);
//! 4. writes the new table(s), synced: one table if the data fits in
//!    `max_chunk_size`, several (a split) if not;
//! 5. takes the chunks' write locks (puts wait, reads go on), carries the
//!    diverted records into the new logs (a single-chunk rebalance simply
//!    keeps the diverted segment as its log), publishes the new manifest —
//!    the commit point — and installs the new funks and chunks;
//! 6. removes the files no longer referenced.
//!
//! A crash before step 5's publish leaves the old chunks (with the diverted
//! segment, if step 2 was published); after it, the new ones. Unreferenced
//! files of either are removed at the next open.

use crate::chunk::{Chunk, ChunkList};
use crate::db::DbInner;
use crate::entry::Entry;
use crate::error::Result;
use crate::funk::log::LogSegment;
use crate::funk::table::format::ENTRY_HEADER_LEN;
use crate::funk::table::TableReader;
use crate::funk::{Candidate, Funk, FunkFiles};
use crate::manifest::ChunkRecord;
use crate::stats;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Loop of a maintenance thread: rebuild queued chunks until shutdown.
pub(crate) fn worker(inner: &Arc<DbInner>) {
    loop {
        let chunk = {
            let mut q = inner.queue.lock();
            loop {
                if inner.shutdown.load(Ordering::Acquire) {
                    return;
                }
                if let Some(c) = q.pop_front() {
                    break c;
                }
                inner.queue_cv.wait(&mut q);
            }
        };
        chunk.queued.store(false, Ordering::Release);
        if let Err(e) = rebuild_and_merge(inner, &chunk) {
            log::error!("rebuild of chunk {} failed: {e}", chunk.id);
        }
    }
}

/// Keeps, of one key's versions (newest first), those a reader may need:
/// every version above `oldest_needed`, plus the newest at or below it.
/// A tombstone left oldest is dropped: the table is the bottom level, so
/// "deleted" and "absent" read the same.
pub(crate) fn gc_group(mut versions: Vec<Entry>, oldest_needed: u64) -> Vec<Entry> {
    if let Some(cut) = versions.iter().position(|e| e.version <= oldest_needed) {
        versions.truncate(cut + 1);
    }
    while versions.last().is_some_and(|e| e.value.is_none()) {
        versions.pop();
    }
    versions
}

/// What a rebuild may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Rebalance, split as needed, and merge with a small neighbor.
    Any,
    /// Rebalance and split only.
    RebalanceOnly,
    /// Merge with a small neighbor, or do nothing.
    MergeOnly,
}

/// Rebuilds and, if it asks for it, merges `chunk`: what callers outside
/// this module use.
pub(crate) fn rebuild_and_merge(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<()> {
    if rebuild(inner, chunk, Mode::Any)? && !chunk.is_retired() {
        rebuild(inner, chunk, Mode::MergeOnly)?;
    }
    Ok(())
}

/// Rebuilds `chunk` (with a small neighbor, to merge, when `mode` allows).
/// Does nothing if another thread is rebuilding it or it has been replaced.
/// Returns true when the chunk came out small enough to try a merge.
pub(crate) fn rebuild(inner: &DbInner, chunk: &Arc<Chunk>, mode: Mode) -> Result<bool> {
    inner.check_poison()?;
    let started = Instant::now();
    let Some(_own) = chunk.rebuilding.try_lock() else {
        return Ok(false);
    };
    if chunk.is_retired() {
        return Ok(false);
    }
    inner.ensure_open(chunk)?;
    let max = inner.opts.max_chunk_size;
    let size_of = |c: &Chunk| c.state.read().funk.as_ref().map_or(0, Funk::size_bytes);

    // Merge candidates: this chunk and a neighbor, both small. Targets stay
    // in key order.
    let mut targets = vec![chunk.clone()];
    let mut neighbor_guard = None;
    if mode != Mode::RebalanceOnly && size_of(chunk) < max / 4 {
        let list = inner.chunk_list();
        let i = list.position(&chunk.min_key);
        let is_self = list.chunks.get(i).is_some_and(|c| Arc::ptr_eq(c, chunk));
        let right = list.chunks.get(i + 1).cloned();
        let left = i.checked_sub(1).and_then(|j| list.chunks.get(j)).cloned();
        for (next, is_right) in [(right, true), (left, false)] {
            let Some(next) = next.filter(|_| is_self) else {
                continue;
            };
            let Some(g) = next.rebuilding.try_lock_arc() else {
                continue;
            };
            inner.ensure_open(&next)?;
            if !next.is_retired() && size_of(chunk) + size_of(&next) < max / 2 {
                if is_right {
                    targets.push(next);
                } else {
                    targets.insert(0, next);
                }
                neighbor_guard = Some(g);
                break;
            }
        }
    }
    if mode == Mode::MergeOnly && targets.len() == 1 {
        return Ok(false);
    }

    // Step 2: divert puts to fresh segments, published before use.
    for c in &targets {
        let number = inner.next_file_number();
        let segment = Arc::new(LogSegment::create(
            inner.storage.as_ref(),
            &inner.dir,
            number,
        )?);
        let mut st = c.state.write();
        let Some(funk) = st.funk.as_mut() else {
            return Ok(false);
        };
        let frozen = funk.divert(segment);
        st.frozen = Some(frozen);
        let files = st.funk.as_ref().map(Funk::files).unwrap_or_default();
        st.files = files.clone();
        if let Err(e) = publish_files(inner, c.id, files) {
            return inner.poison(e);
        }
    }

    // Step 3: read and garbage-collect the frozen data, no chunk lock held.
    let oldest_needed = inner.versions.oldest_needed();
    let mut entries = Vec::new();
    for c in &targets {
        let st = c.state.read();
        let Some(funk) = st.funk.as_ref() else {
            return Ok(false);
        };
        let frozen = st.frozen.unwrap_or(funk.logs.len());
        // Copy out what the frozen segments hold; values are read below.
        let groups: Vec<_> = funk
            .key_groups(&c.min_key, 0..frozen)
            .collect::<Result<Vec<_>>>()?;
        for (key, candidates) in groups {
            let mut versions = Vec::with_capacity(candidates.len());
            for cand in candidates {
                versions.push(match cand {
                    Candidate::Table(e) => e,
                    Candidate::Log(r) => Entry {
                        key: key.clone(),
                        value: funk.read_log(&r)?,
                        version: r.ptr.version,
                        counter: r.ptr.counter,
                    },
                });
            }
            entries.extend(gc_group(versions, oldest_needed));
        }
    }

    // Step 4: write the new table(s).
    let total: u64 = entries.iter().map(entry_bytes).sum();
    let parts = if total > max {
        (total.div_ceil(max * 3 / 4)).max(2)
    } else {
        1
    };
    let mut outputs = split_entries(entries, parts, total);
    // The first output keeps the first target's min key.
    let mut tables = Vec::new();
    for (min_key, part) in &mut outputs {
        if tables.is_empty() {
            *min_key = targets[0].min_key.clone();
        }
        if part.is_empty() {
            tables.push(None);
            continue;
        }
        let number = inner.next_file_number();
        let mut w = inner.table_writer(number)?;
        for e in part.iter() {
            w.add(e)?;
        }
        let size = match w.finish() {
            Ok(s) => s,
            Err(e) => return inner.poison(e),
        };
        stats::add(&inner.counters.table_bytes_written, size);
        tables.push(Some(Arc::new(TableReader::open(
            inner.storage.as_ref(),
            &inner.dir,
            number,
        )?)));
    }
    for (_, part) in &mut outputs {
        *part = Vec::new(); // written; free the memory before the swap
    }

    // Step 5: swap, with puts to the targets blocked.
    let mut guards: Vec<_> = targets.iter().map(|c| c.state.write()).collect();
    let old_files: Vec<FunkFiles> = guards.iter().map(|g| g.files.clone()).collect();
    let next_counter = guards.iter().map(|g| g.next_counter).max().unwrap_or(0);
    let single = targets.len() == 1 && outputs.len() == 1;
    let mut new_funks = Vec::new();
    if single {
        let g = &guards[0];
        let Some(funk) = g.funk.as_ref() else {
            return Ok(false);
        };
        let frozen = g.frozen.unwrap_or(funk.logs.len() - 1);
        let log = funk.logs[frozen].clone();
        let records = funk.diverted_records(frozen);
        new_funks.push(Funk::from_parts(tables[0].clone(), log, records));
    } else {
        let mut diverted = Vec::new();
        for g in &guards {
            if let Some(funk) = g.funk.as_ref() {
                let frozen = g.frozen.unwrap_or(funk.logs.len() - 1);
                diverted.extend(funk.diverted_entries(frozen)?);
            }
        }
        for (i, (min_key, _)) in outputs.iter().enumerate() {
            let upper = outputs.get(i + 1).map(|(k, _)| k.clone());
            let number = inner.next_file_number();
            let log = Arc::new(LogSegment::create(
                inner.storage.as_ref(),
                &inner.dir,
                number,
            )?);
            let mut records = Vec::new();
            for e in diverted
                .iter()
                .filter(|e| e.key >= *min_key && upper.as_ref().is_none_or(|u| e.key < *u))
            {
                let (ptr, _) = log.append(&e.key, e.value.as_deref(), e.version, e.counter)?;
                stats::add(&inner.counters.log_bytes_copied, ptr.record_len());
                records.push((e.key.clone(), ptr));
            }
            if let Err(e) = log.sync_all() {
                return inner.poison(e);
            }
            new_funks.push(Funk::from_parts(tables[i].clone(), log, records));
        }
    }

    // The commit point.
    let ids: Vec<u64> = targets.iter().map(|c| c.id).collect();
    let mut published = inner.published.lock();
    let new_ids: Vec<u64> = if single {
        vec![chunk.id]
    } else {
        (0..new_funks.len())
            .map(|_| {
                let id = published.manifest.next_chunk_id;
                published.manifest.next_chunk_id += 1;
                id
            })
            .collect()
    };
    let records: Vec<ChunkRecord> = outputs
        .iter()
        .zip(&new_funks)
        .zip(&new_ids)
        .map(|(((min_key, _), funk), &id)| ChunkRecord {
            id,
            min_key: min_key.clone(),
            files: funk.files(),
        })
        .collect();
    let mut manifest = published.manifest.clone();
    let pos = manifest
        .chunks
        .iter()
        .position(|c| c.id == ids[0])
        .unwrap_or(0);
    manifest.chunks.retain(|c| !ids.contains(&c.id));
    for (k, r) in records.iter().enumerate() {
        manifest.chunks.insert(pos + k, r.clone());
    }
    if let Err(e) = manifest.store(inner.storage.as_ref(), &inner.dir) {
        return inner.poison(e);
    }
    published.manifest = manifest;
    drop(published);

    // Install in memory.
    if single {
        let g = &mut guards[0];
        let funk = new_funks.pop();
        g.files = funk.as_ref().map(Funk::files).unwrap_or_default();
        g.funk = funk;
        g.frozen = None;
        stats::add(&inner.counters.rebalances, 1);
    } else {
        let new_chunks: Vec<Arc<Chunk>> = records
            .into_iter()
            .zip(new_funks)
            .map(|(r, f)| Arc::new(Chunk::new(r.id, r.min_key, r.files, Some(f), next_counter)))
            .collect();
        {
            let mut list_slot = inner.chunks.write();
            let mut chunks: Vec<Arc<Chunk>> =
                Vec::with_capacity(list_slot.chunks.len() + new_chunks.len());
            let mut inserted = false;
            for c in &list_slot.chunks {
                if ids.contains(&c.id) {
                    if !inserted {
                        chunks.extend(new_chunks.iter().cloned());
                        inserted = true;
                    }
                } else {
                    chunks.push(c.clone());
                }
            }
            *list_slot = Arc::new(ChunkList { chunks });
        }
        for c in &targets {
            c.retired.store(true, Ordering::Release);
        }
        if targets.len() > 1 {
            stats::add(&inner.counters.merges, 1);
        } else {
            stats::add(&inner.counters.splits, 1);
        }
    }
    let wants_merge = single
        && guards[0]
            .funk
            .as_ref()
            .is_some_and(|f| f.size_bytes() < max / 4);
    drop(guards);
    drop(neighbor_guard);

    // Step 6: remove what is no longer referenced.
    let live: std::collections::HashSet<u64> =
        inner.published.lock().manifest.live_files().collect();
    for f in &old_files {
        for n in f.table.iter().chain(f.logs.iter()) {
            if !live.contains(n) {
                remove_file(inner, *n);
            }
        }
    }
    stats::add(
        &inner.counters.rebuild_micros,
        started.elapsed().as_micros() as u64,
    );
    Ok(wants_merge)
}

fn remove_file(inner: &DbInner, number: u64) {
    for name in [
        crate::funk::table::TableWriter::file_name(number),
        LogSegment::file_name(number),
    ] {
        let p = inner.dir.join(name);
        if inner.storage.exists(&p).unwrap_or(false) {
            if let Err(e) = inner.storage.remove(&p) {
                log::warn!("could not remove {}: {e}", p.display());
            }
        }
    }
}

/// Publishes a chunk's new file list (after diverting its log).
fn publish_files(inner: &DbInner, chunk_id: u64, files: FunkFiles) -> Result<()> {
    let mut published = inner.published.lock();
    let mut manifest = published.manifest.clone();
    if let Some(c) = manifest.chunks.iter_mut().find(|c| c.id == chunk_id) {
        c.files = files;
    }
    manifest.store(inner.storage.as_ref(), &inner.dir)?;
    published.manifest = manifest;
    Ok(())
}

/// Bytes an entry takes in a table.
fn entry_bytes(e: &Entry) -> u64 {
    e.user_bytes() + ENTRY_HEADER_LEN as u64
}

/// Cuts sorted entries into `parts` runs of about equal bytes, never
/// between two versions of one key. Returns (first key, entries) per run.
fn split_entries(entries: Vec<Entry>, parts: u64, total: u64) -> Vec<(Vec<u8>, Vec<Entry>)> {
    let target = total.div_ceil(parts.max(1)).max(1);
    let mut out: Vec<(Vec<u8>, Vec<Entry>)> = Vec::new();
    let mut current: Vec<Entry> = Vec::new();
    let mut bytes = 0u64;
    for e in entries {
        let boundary = bytes >= target
            && current.last().is_some_and(|l| l.key != e.key)
            && (out.len() as u64) < parts - 1;
        if boundary {
            let first = current.first().map(|f| f.key.clone()).unwrap_or_default();
            out.push((first, std::mem::take(&mut current)));
            bytes = 0;
        }
        bytes += entry_bytes(&e);
        current.push(e);
    }
    let first = current.first().map(|f| f.key.clone()).unwrap_or_default();
    out.push((first, current));
    out
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
        let g = gc_group(vec![e("k", Some("n"), 9), e("k", None, 5)], 6);
        assert_eq!(g, vec![e("k", Some("n"), 9)]);
        let g = gc_group(vec![e("k", None, 9), e("k", Some("a"), 5)], 6);
        assert_eq!(g.len(), 2, "a snapshot at 6 still needs the value at 5");
    }

    #[test]
    fn split_never_separates_versions_of_one_key() {
        let entries = vec![
            e("a", Some("1"), 2),
            e("a", Some("0"), 1),
            e("b", Some("1"), 1),
            e("c", Some("1"), 1),
        ];
        let parts = split_entries(entries, 2, 4 * 27);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|(_, p)| !p.is_empty()));
        let keys: Vec<&[u8]> = parts[0].1.iter().map(|e| e.key.as_slice()).collect();
        assert!(keys.iter().all(|k| *k == b"a") || keys.ends_with(&[b"b"]));
    }
}
