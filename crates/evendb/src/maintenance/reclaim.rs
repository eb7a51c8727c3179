//! Dropping the chunks a range delete took whole, without reading them.
//!
//! A chunk wholly inside a range delete that no reader can look past (at
//! or below the oldest needed version), whose files hold no version as
//! new as the delete's, holds nothing readable: every record of it lies
//! under the delete. Such chunks, adjacent in key order, are replaced by
//! one empty chunk:
//!
//! 1. Hold each chunk's `funk_change` (try_lock: the run stops at a busy
//!    one), check its funk's largest version (table footer, segments'
//!    version ranges) is below the delete's, and drop its munk.
//! 2. Create one segment and publish it as an extra log of every chunk of
//!    the run: a put arriving from step 3 on lands in it, and a crash
//!    before step 4 finds it under each old chunk (reads keep a chunk's
//!    keys only).
//! 3. Under every chunk's `rebalance` lock (key order), check again (a put
//!    may have come since step 1), then swap in the empty chunk (its
//!    counter above theirs, its `funk_change` held until step 4) and
//!    retire the old ones for it.
//! 4. Publish the manifest with the empty chunk in place of the run.
//! 5. Remove the files no chunk refers to any more.
//!
//! Two manifest stores and no data read, however many chunks and keys the
//! run holds; a boundary chunk (the delete takes part of it) is rebuilt
//! instead (`task::RECLAIM`).

use super::evict_munk;
use super::files::{new_segment, record, remove_unreferenced};
use super::split::replace_records;
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::Result;
use crate::funk::{Funk, FunkFiles};
use crate::tombstones::RangeTombstone;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Drops `chunk` and the chunks after it that the same range delete took
/// whole (see the module docs). Returns false if `chunk` was not dropped:
/// no delete no reader needs to look past takes it whole, it holds a
/// version as new as the delete's, or it is busy.
pub(crate) fn drop_deleted_run(inner: &DbInner, chunk: &Arc<Chunk>) -> Result<bool> {
    inner.check_poison()?;
    let w = inner.versions.refresh_watermark();
    let Some(t) = inner
        .tombstones
        .load()
        .covering(&chunk.min_key, chunk.end_key.as_deref(), w)
        .cloned()
    else {
        return Ok(false);
    };
    // Step 1.
    let idx = inner.index.load();
    let first = idx.position(&chunk.min_key);
    if !idx.chunks.get(first).is_some_and(|c| Arc::ptr_eq(c, chunk)) {
        return Ok(false);
    }
    let mut run: Vec<Arc<Chunk>> = Vec::new();
    let mut owned = Vec::new();
    for c in idx.chunks.iter().skip(first) {
        if !t.contains(&c.min_key, c.end_key.as_deref()) {
            break;
        }
        let Some(own) = c.funk_change.try_lock_arc() else {
            break;
        };
        if c.is_retired() {
            break;
        }
        if c.max_version(&*inner.open_funk(c)?) >= t.version {
            break;
        }
        // (Its munk's data is in its funk: nothing is lost.)
        evict_munk(inner, c);
        // A put may have come in before the eviction.
        if c.has_munk() || c.max_version(&*inner.open_funk(c)?) >= t.version {
            break;
        }
        run.push(c.clone());
        owned.push(own);
    }
    drop(idx);
    if run.is_empty() {
        return Ok(false);
    }
    // Step 2.
    let segment = new_segment(inner)?;
    let number = segment.number;
    let ids: Vec<u64> = run.iter().map(|c| c.id).collect();
    inner.publish(|m| {
        for c in m.chunks.iter_mut().filter(|c| ids.contains(&c.id)) {
            c.files.logs.push(number);
        }
    })?;
    for c in &run {
        c.files.lock().logs.push(number);
    }
    crate::failpoint::failpoint!(inner, "drop_run.after_segment");
    // Step 3.
    let frozen: Vec<_> = run.iter().map(|c| c.rebalance.write()).collect();
    if !run.iter().all(|c| holds_only_deleted(c, &t)) {
        // A put came meanwhile; the extra log stays listed until the
        // chunk's next rebuild publishes its files.
        return Ok(false);
    }
    let files = FunkFiles {
        table: None,
        logs: vec![number],
    };
    let last = run.last().map_or(chunk, |c| c);
    let empty = Arc::new(Chunk::new(
        inner.next_chunk_id(),
        chunk.min_key.clone(),
        last.end_key.clone(),
        files.clone(),
    ));
    let _own_empty = empty.funk_change.try_lock_arc();
    empty.set_funk(Arc::new(Funk {
        table: None,
        frozen: Vec::new(),
        active: segment,
    }));
    let counter = run
        .iter()
        .map(|c| c.counter.load(Ordering::Acquire))
        .max()
        .unwrap_or(0);
    empty.counter.store(counter, Ordering::Release);
    for c in &run {
        c.retire(vec![empty.clone()]);
    }
    inner.index.replace(&run, std::slice::from_ref(&empty));
    drop(frozen);
    crate::failpoint::failpoint!(inner, "drop_run.after_swap");
    // Step 4.
    inner.publish(|m| replace_records(m, &ids, vec![record(&empty, files.clone())]))?;
    crate::failpoint::failpoint!(inner, "drop_run.after_publish");
    drop(owned);
    // Step 5.
    let old: Vec<FunkFiles> = run.iter().map(|c| c.files.lock().clone()).collect();
    remove_unreferenced(inner, &old);
    crate::stats::add(&inner.counters.local().chunks_dropped, run.len() as u64);
    Ok(true)
}

/// True if every record of the chunk lies under `t`: no munk, and no
/// version of its funk as new as `t`'s. The caller holds its `rebalance`
/// lock, so no put is halfway in.
fn holds_only_deleted(c: &Chunk, t: &RangeTombstone) -> bool {
    !c.is_retired() && !c.has_munk() && c.funk().is_some_and(|f| c.max_version(&f) < t.version)
}
