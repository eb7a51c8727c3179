//! Snapshots and scans.
//!
//! A scan reads at one snapshot version; it collects a batch of pairs from
//! one chunk at a time under that chunk's read lock and resumes after the
//! last key it returned. Versions at or below the snapshot never change
//! (rebuilds keep what registered snapshots need), so batches read from
//! different chunks, or from a chunk and its replacement, are consistent.

use crate::db::DbInner;
use crate::error::Result;
use crate::funk::Candidate;
use crate::stats;
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// A registered snapshot version; released when the last user drops it.
pub(crate) struct SnapshotGuard {
    pub inner: Arc<DbInner>,
    pub version: u64,
}

impl SnapshotGuard {
    /// A snapshot for reads of `[lo, hi)` (`hi = None`: unbounded).
    pub fn new(inner: Arc<DbInner>, lo: &[u8], hi: Option<&[u8]>) -> Self {
        let version = inner.versions.acquire_snapshot(lo, hi);
        SnapshotGuard { inner, version }
    }
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        self.inner.versions.release(self.version);
    }
}

/// A consistent, read-only view of the store at one point in time; see
/// [`Db::snapshot`](crate::Db::snapshot).
pub struct Snapshot {
    guard: Arc<SnapshotGuard>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("version", &self.guard.version)
            .finish()
    }
}

impl Snapshot {
    pub(crate) fn new(guard: Arc<SnapshotGuard>) -> Self {
        Snapshot { guard }
    }

    /// The value of `key` as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        stats::add(&self.guard.inner.counters.gets, 1);
        self.guard.inner.get_at(key.as_ref(), self.guard.version)
    }

    /// Pairs in `range` as of the snapshot, in key order.
    pub fn scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Scan {
        stats::add(&self.guard.inner.counters.scans, 1);
        Scan::new(self.guard.clone(), &range)
    }

    /// Pairs whose keys start with `prefix` as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Scan {
        stats::add(&self.guard.inner.counters.scans, 1);
        Scan::prefix(self.guard.clone(), prefix.as_ref())
    }
}

/// An iterator over key-value pairs in key order, at one snapshot.
///
/// Yields `Result`s: a read error ends the scan after being returned once.
pub struct Scan {
    snap: Arc<SnapshotGuard>,
    cursor: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    batch: usize,
    done: bool,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("version", &self.snap.version)
            .finish()
    }
}

const FIRST_BATCH: usize = 16;
const MAX_BATCH: usize = 1024;

fn owned(b: Bound<&impl AsRef<[u8]>>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The range a scan announces in the pending-operations array: `[lo, hi)`
/// covering `range` (a superset is fine; it only widens what it waits for).
pub(crate) fn announced_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: &R,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let lo = match range.start_bound() {
        Bound::Included(k) | Bound::Excluded(k) => k.as_ref().to_vec(),
        Bound::Unbounded => Vec::new(),
    };
    let hi = match range.end_bound() {
        Bound::Included(k) => Some([k.as_ref(), &[0u8]].concat()),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    (lo, hi)
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl Scan {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        snap: Arc<SnapshotGuard>,
        range: &R,
    ) -> Scan {
        Scan {
            snap,
            cursor: owned(range.start_bound()),
            end: owned(range.end_bound()),
            buf: VecDeque::new(),
            batch: FIRST_BATCH,
            done: false,
        }
    }

    pub(crate) fn prefix(snap: Arc<SnapshotGuard>, prefix: &[u8]) -> Scan {
        let end = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        Scan {
            snap,
            cursor: Bound::Included(prefix.to_vec()),
            end,
            buf: VecDeque::new(),
            batch: FIRST_BATCH,
            done: false,
        }
    }

    fn before_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// Fills `buf` with the next batch; sets `done` at the end of the range.
    fn refill(&mut self) -> Result<()> {
        let inner = self.snap.inner.clone();
        let version = self.snap.version;
        while self.buf.is_empty() && !self.done {
            let from: Vec<u8> = match &self.cursor {
                Bound::Included(k) | Bound::Excluded(k) => k.clone(),
                Bound::Unbounded => Vec::new(),
            };
            if !self.before_end(&from) && !matches!(self.cursor, Bound::Unbounded) {
                self.done = true;
                break;
            }
            let list = inner.chunk_list();
            let Some((chunk, upper)) = list.find(&from) else {
                self.done = true;
                break;
            };
            let st = chunk.state.read();
            if chunk.is_retired() {
                continue;
            }
            let Some(funk) = st.funk.as_ref() else {
                drop(st);
                inner.ensure_open(&chunk)?;
                continue;
            };
            let mut last_key = None;
            let mut chunk_exhausted = true;
            for group in funk.key_groups(&from, 0..funk.logs.len()) {
                let (key, candidates) = group?;
                if matches!(&self.cursor, Bound::Excluded(k) if *k == key) {
                    continue;
                }
                if upper.as_ref().is_some_and(|u| key >= *u) {
                    break;
                }
                if !self.before_end(&key) {
                    self.done = true;
                    chunk_exhausted = false;
                    break;
                }
                let visible = candidates.into_iter().find(|c| c.stamp().0 <= version);
                let value = match visible {
                    Some(Candidate::Table(e)) => e.value,
                    Some(Candidate::Log(r)) => funk.read_log(&r)?,
                    None => None,
                };
                if let Some(v) = value {
                    self.buf.push_back((key.clone(), v));
                }
                last_key = Some(key);
                if self.buf.len() >= self.batch {
                    chunk_exhausted = false;
                    break;
                }
            }
            drop(st);
            if self.done {
                break;
            }
            if chunk_exhausted {
                match upper {
                    Some(u) => self.cursor = Bound::Included(u),
                    None => self.done = true,
                }
            } else if let Some(k) = last_key {
                self.cursor = Bound::Excluded(k);
            }
        }
        self.batch = (self.batch * 2).min(MAX_BATCH);
        Ok(())
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                self.buf.clear();
                return Some(Err(e));
            }
        }
        self.buf.pop_front().map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_handles_ff_bytes() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
