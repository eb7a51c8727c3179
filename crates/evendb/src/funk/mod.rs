//! A funk (file chunk): the on-disk half of a chunk, one sorted table plus
//! one or more append-log segments.
//!
//! The newest segment takes appends; older segments exist only while a
//! rebuild is merging them into a new table (see `maintenance`). In memory a
//! funk keeps the table's block index and an index of every log record by
//! key (`log_index`), so a get reads at most one log record and a few table
//! blocks.

pub(crate) mod log;
pub(crate) mod table;

use crate::entry::Entry;
use crate::error::Result;
use crate::vfs::Storage;
use log::{LogSegment, RecordPtr};
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use table::{TableIter, TableReader};

/// The files of one funk, as the manifest records them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FunkFiles {
    /// File number of the table; `None` for a chunk that never had one.
    pub table: Option<u64>,
    /// File numbers of the log segments, oldest first; never empty.
    pub logs: Vec<u64>,
}

/// Where a log record sits: segment position in `Funk::logs`, and pointer.
#[derive(Debug, Clone)]
pub(crate) struct LogRef {
    pub segment: usize,
    pub ptr: RecordPtr,
}

#[derive(Debug)]
pub(crate) struct Funk {
    pub table: Option<Arc<TableReader>>,
    pub logs: Vec<Arc<LogSegment>>,
    log_index: BTreeMap<Vec<u8>, Vec<LogRef>>,
    /// Bytes in all log segments.
    pub log_bytes: u64,
    /// Largest counter found in the funk's files.
    pub max_counter: u64,
    /// Bytes cut off torn log tails when the funk was opened.
    pub truncated: u64,
}

/// One version of a key as a read found it: in a table entry or a log record.
#[derive(Debug, Clone)]
pub(crate) enum Candidate {
    Table(Entry),
    Log(LogRef),
}

impl Candidate {
    pub fn stamp(&self) -> (u64, u64) {
        match self {
            Candidate::Table(e) => e.stamp(),
            Candidate::Log(r) => (r.ptr.version, r.ptr.counter),
        }
    }
}

impl Funk {
    /// Opens the funk's files; reads the table's index and replays the logs.
    pub fn open(storage: &dyn Storage, dir: &Path, files: &FunkFiles) -> Result<Funk> {
        let table = match files.table {
            Some(n) => Some(Arc::new(TableReader::open(storage, dir, n)?)),
            None => None,
        };
        let mut funk = Funk {
            max_counter: table.as_ref().map_or(0, |t| t.footer.max_counter),
            table,
            logs: Vec::new(),
            log_index: BTreeMap::new(),
            log_bytes: 0,
            truncated: 0,
        };
        for &n in &files.logs {
            let replay = LogSegment::open(storage, dir, n)?;
            let segment = funk.logs.len();
            funk.truncated += replay.truncated;
            for (key, ptr) in replay.records {
                funk.max_counter = funk.max_counter.max(ptr.counter);
                funk.log_bytes += ptr.record_len();
                funk.log_index
                    .entry(key)
                    .or_default()
                    .push(LogRef { segment, ptr });
            }
            funk.logs.push(Arc::new(replay.segment));
        }
        Ok(funk)
    }

    /// A funk over freshly written files (after a rebuild).
    pub fn from_parts(
        table: Option<Arc<TableReader>>,
        log: Arc<LogSegment>,
        records: Vec<(Vec<u8>, RecordPtr)>,
    ) -> Funk {
        let mut funk = Funk {
            max_counter: table.as_ref().map_or(0, |t| t.footer.max_counter),
            table,
            logs: vec![log],
            log_index: BTreeMap::new(),
            log_bytes: 0,
            truncated: 0,
        };
        for (key, ptr) in records {
            funk.index_record(key, 0, ptr);
        }
        funk
    }

    fn index_record(&mut self, key: Vec<u8>, segment: usize, ptr: RecordPtr) {
        self.max_counter = self.max_counter.max(ptr.counter);
        self.log_bytes += ptr.record_len();
        self.log_index
            .entry(key)
            .or_default()
            .push(LogRef { segment, ptr });
    }

    pub fn files(&self) -> FunkFiles {
        FunkFiles {
            table: self.table.as_ref().map(|t| t.number),
            logs: self.logs.iter().map(|l| l.number).collect(),
        }
    }

    /// Approximate bytes of the chunk's data: table file plus logs.
    pub fn size_bytes(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.file_size) + self.log_bytes
    }

    /// Appends to the newest segment. Returns the segment and the logical end
    /// after the record (for a synchronous put to sync up to).
    pub fn append(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
        counter: u64,
    ) -> Result<(Arc<LogSegment>, u64)> {
        let segment = self.logs.len() - 1;
        let log = self.logs[segment].clone();
        let (ptr, end) = log.append(key, value, version, counter)?;
        self.index_record(key.to_vec(), segment, ptr);
        Ok((log, end))
    }

    /// Starts diverting appends to `segment`; returns how many segments are
    /// frozen before it.
    pub fn divert(&mut self, segment: Arc<LogSegment>) -> usize {
        self.logs.push(segment);
        self.logs.len() - 1
    }

    /// Reads the value of a log record.
    pub fn read_log(&self, r: &LogRef) -> Result<Option<Vec<u8>>> {
        Ok(self.logs[r.segment].read_record(&r.ptr)?.1)
    }

    /// The newest version of `key` at or below `max_version`.
    pub fn get(&self, key: &[u8], max_version: u64) -> Result<Option<Entry>> {
        let from_log = self
            .log_index
            .get(key)
            .and_then(|refs| newest_ref(refs.iter(), max_version));
        let from_table = match &self.table {
            Some(t) => t.get(key, max_version)?,
            None => None,
        };
        match (from_log, from_table) {
            (Some(r), t)
                if t.as_ref()
                    .is_none_or(|t| t.stamp() < (r.ptr.version, r.ptr.counter)) =>
            {
                Ok(Some(Entry {
                    key: key.to_vec(),
                    value: self.read_log(r)?,
                    version: r.ptr.version,
                    counter: r.ptr.counter,
                }))
            }
            (_, t) => Ok(t),
        }
    }

    /// Every version of every key `>= from` in the table and in the log
    /// segments selected by `segments`, grouped by key in key order, each
    /// group newest first.
    pub fn key_groups<'a>(
        &'a self,
        from: &[u8],
        segments: std::ops::Range<usize>,
    ) -> KeyGroups<'a> {
        KeyGroups {
            table: self.table.as_ref().map(|t| t.iter_from(from).peekable()),
            log: self
                .log_index
                .range::<[u8], _>((Bound::Included(from), Bound::Unbounded))
                .peekable(),
            segments,
        }
    }

    /// Pointers of the records in segment `segment`, for a funk that keeps
    /// that segment as its only log.
    pub fn diverted_records(&self, segment: usize) -> Vec<(Vec<u8>, RecordPtr)> {
        let mut out = Vec::new();
        for (key, refs) in &self.log_index {
            for r in refs.iter().filter(|r| r.segment == segment) {
                out.push((key.clone(), r.ptr.clone()));
            }
        }
        out
    }

    /// Log records of segments `from..` as entries with values, in key order
    /// (used to carry puts diverted during a rebuild into the new logs).
    pub fn diverted_entries(&self, from_segment: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        for (key, refs) in &self.log_index {
            for r in refs.iter().filter(|r| r.segment >= from_segment) {
                out.push(Entry {
                    key: key.clone(),
                    value: self.read_log(r)?,
                    version: r.ptr.version,
                    counter: r.ptr.counter,
                });
            }
        }
        Ok(out)
    }
}

fn newest_ref<'a>(refs: impl Iterator<Item = &'a LogRef>, max_version: u64) -> Option<&'a LogRef> {
    refs.filter(|r| r.ptr.version <= max_version)
        .max_by_key(|r| (r.ptr.version, r.ptr.counter))
}

/// See [`Funk::key_groups`].
pub(crate) struct KeyGroups<'a> {
    table: Option<Peekable<TableIter>>,
    log: Peekable<std::collections::btree_map::Range<'a, Vec<u8>, Vec<LogRef>>>,
    segments: std::ops::Range<usize>,
}

impl Iterator for KeyGroups<'_> {
    type Item = Result<(Vec<u8>, Vec<Candidate>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let table_key = match self.table.as_mut().and_then(Peekable::peek) {
                Some(Ok(e)) => Some(e.key.clone()),
                Some(Err(_)) => {
                    let err = self.table.as_mut()?.next()?.err()?;
                    self.table = None;
                    return Some(Err(err));
                }
                None => None,
            };
            let log_key = self.log.peek().map(|(k, _)| (*k).clone());
            let key = match (table_key, log_key) {
                (None, None) => return None,
                (Some(t), None) => t,
                (None, Some(l)) => l,
                (Some(t), Some(l)) => t.min(l),
            };
            let mut group = Vec::new();
            if let Some(table) = self.table.as_mut() {
                while let Some(Ok(e)) = table.peek() {
                    if e.key != key {
                        break;
                    }
                    if let Some(Ok(e)) = table.next() {
                        group.push(Candidate::Table(e));
                    }
                }
            }
            if self.log.peek().is_some_and(|(k, _)| **k == key) {
                if let Some((_, refs)) = self.log.next() {
                    group.extend(
                        refs.iter()
                            .filter(|r| self.segments.contains(&r.segment))
                            .cloned()
                            .map(Candidate::Log),
                    );
                }
            }
            if group.is_empty() {
                continue; // only records of segments outside the selection
            }
            group.sort_by_key(|c| std::cmp::Reverse(c.stamp()));
            return Some(Ok((key, group)));
        }
    }
}
