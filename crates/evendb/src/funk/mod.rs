//! A funk (file chunk): the on-disk half of a chunk, one sorted table plus
//! one or more append-log segments.
//!
//! A `Funk` value is immutable and shared (`Arc`): a chunk swaps in a new
//! one when a rebuild diverts its puts to a new segment or installs a new
//! table. Appends go to the newest segment (`active`), which is itself safe
//! to append to while readers read it. Older segments exist while a rebuild
//! merges them into a new table, and after a merge (one per merged chunk).
//!
//! Every log record is newer than every table entry of the same key: a
//! table is built from data frozen by a divert, and every record appended
//! after a divert got its version and counter after it. So a get that finds
//! its key in a log need not read the table.

mod files;
pub(crate) mod log;
pub(crate) mod table;
#[cfg(test)]
mod tests;

pub(crate) use files::{FileSource, OpenFiles};

use crate::entry::Entry;
use crate::error::Result;
use crate::recovery::RecoveryTable;
use log::{LogSegment, RecordPtr, SegmentImage, SegmentIndex};
use std::iter::Peekable;
use std::sync::Arc;
use table::{TableIter, TableReader};

/// The name of file `number` of `kind` (a table or a log).
pub(crate) fn file_name(kind: crate::codec::FileKind, number: u64) -> String {
    match kind {
        crate::codec::FileKind::Table => table::TableWriter::file_name(number),
        _ => LogSegment::file_name(number),
    }
}

/// The files of one funk, as the manifest records them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FunkFiles {
    /// File number of the table; `None` for a chunk that never had one.
    pub table: Option<u64>,
    /// File numbers of the log segments, oldest first; never empty.
    pub logs: Vec<u64>,
}

#[derive(Debug)]
pub(crate) struct Funk {
    pub table: Option<Arc<TableReader>>,
    /// Segments that no longer take appends, oldest first.
    pub frozen: Vec<Arc<LogSegment>>,
    /// The segment that takes appends.
    pub active: Arc<LogSegment>,
}

/// What opening a funk found.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OpenInfo {
    /// Largest counter in the funk's files.
    pub max_counter: u64,
    /// Bytes cut off torn log tails.
    pub truncated: u64,
}

/// Which versions a read admits: at most `max_version`, and visible after
/// recovery.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadView<'a> {
    pub max_version: u64,
    pub recovery: &'a RecoveryTable,
    /// Versions below this were deleted by a range delete (0: none).
    pub floor: u64,
}

impl ReadView<'_> {
    pub fn admits(&self, version: u64) -> bool {
        version <= self.max_version && version >= self.floor && self.recovery.visible(version)
    }
}

/// Where a get found its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Log,
    Table,
    Nowhere,
}

impl Funk {
    /// Opens the funk's files (or takes them from the registry of open
    /// files): the table's footer and index, and every log segment (checked
    /// whole, to build its filters).
    pub fn open(src: &FileSource<'_>, files: &FunkFiles) -> Result<(Funk, OpenInfo)> {
        let table = match files.table {
            Some(n) => Some(src.open_files.table(n, || {
                TableReader::open(src.storage, src.dir, n, src.log_config.store)
                    .map(|t| t.charged(src.budget))
            })?),
            None => None,
        };
        let mut info = OpenInfo {
            max_counter: table.as_ref().map_or(0, |t| t.footer.max_counter),
            truncated: 0,
        };
        let mut logs = Vec::with_capacity(files.logs.len());
        for &n in &files.logs {
            let (seg, truncated) = src.open_files.log(n, || {
                LogSegment::open(src.storage, src.dir, n, src.log_config)
            })?;
            info.max_counter = info.max_counter.max(seg.max_counter());
            info.truncated += truncated;
            logs.push(seg);
        }
        // Segments before a chunk's last take no more appends.
        for seg in logs.iter().rev().skip(1) {
            seg.freeze()?;
        }
        let Some(active) = logs.pop() else {
            return Err(crate::error::Error::corruption(
                src.dir,
                0,
                "a chunk without log segments",
            ));
        };
        Ok((
            Funk {
                table,
                frozen: logs,
                active,
            },
            info,
        ))
    }

    /// Every segment, oldest first (the active one last).
    pub fn logs(&self) -> impl DoubleEndedIterator<Item = &Arc<LogSegment>> {
        self.frozen.iter().chain(std::iter::once(&self.active))
    }

    /// How its logs lie: the number of banded segments (runs, adopted
    /// logs), and the bytes of the others (unsorted), whole.
    pub fn log_shape(&self) -> (usize, u64) {
        self.logs().fold((0, 0), |(banded, unsorted), l| {
            if l.is_banded() {
                (banded + 1, unsorted)
            } else {
                (banded, unsorted + l.appended())
            }
        })
    }

    /// The same funk with `segment` as its new active segment.
    pub fn with_segment(&self, segment: Arc<LogSegment>) -> Funk {
        let mut frozen = self.frozen.clone();
        frozen.push(self.active.clone());
        Funk {
            table: self.table.clone(),
            frozen,
            active: segment,
        }
    }

    /// The funk of a part `[from, to)` of this one's range, with `segment`
    /// as its active segment: the same table, and of the log segments only
    /// those that may hold keys of the part (each knows its key range), so
    /// a part left behind by time-ordered appends does not inherit, split
    /// after split, every segment its neighbours fill. The segments must
    /// take no more appends (the caller diverted them).
    pub fn for_part(&self, segment: Arc<LogSegment>, from: &[u8], to: Option<&[u8]>) -> Funk {
        let frozen = self
            .logs()
            .filter(|l| l.overlaps(from, to))
            .cloned()
            .collect();
        Funk {
            table: self.table.clone(),
            frozen,
            active: segment,
        }
    }

    pub fn files(&self) -> FunkFiles {
        FunkFiles {
            table: self.table.as_ref().map(|t| t.number),
            logs: self.logs().map(|l| l.number).collect(),
        }
    }

    /// Bytes of log segments that reading the keys of `[from, to)` reads
    /// (windows of banded segments, other segments whole).
    pub fn log_bytes_for(&self, from: &[u8], to: Option<&[u8]>) -> u64 {
        self.logs()
            .map(|l| l.window(from, to, u64::MAX).bytes())
            .sum()
    }

    /// Bytes appended to all log segments.
    pub fn log_bytes(&self) -> u64 {
        self.logs().map(|l| l.appended()).sum()
    }

    /// Approximate bytes of the chunk's data: the table's before
    /// compression, plus the logs.
    pub fn size_bytes(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.data_bytes()) + self.log_bytes()
    }

    /// The largest version of any record in its files (0 for none): what
    /// the table's footer and the segments' version ranges say.
    pub fn max_version(&self) -> u64 {
        let logs = self
            .logs()
            .filter_map(|l| l.version_range())
            .map(|(_, hi)| hi);
        let table = self.table.as_ref().map(|t| t.footer.max_version);
        logs.chain(table).max().unwrap_or(0)
    }

    /// The newest version of `key` that `view` admits, and where it was;
    /// `probe` counts what the log parts' filters did.
    pub fn get(
        &self,
        key: &[u8],
        view: ReadView<'_>,
        probe: &mut crate::stats::FilterProbe,
    ) -> Result<(Option<Entry>, Source)> {
        let hash = crate::cache::bloom::key_hash(key);
        let accept = |v: u64, _c: u64| view.admits(v);
        let mut best: Option<(RecordPtr, Option<Vec<u8>>)> = None;
        for log in self.logs().rev() {
            // Newest segment first: an older one whose every record is
            // older than the best found so far cannot hold a newer one
            // (after a write phase a key has versions in several runs, and
            // each would cost a block read).
            if let Some((b, _)) = &best {
                if !log.may_hold_newer(b.stamp()) {
                    // An empty segment (a split's shared log frozen before
                    // any put reached it) cost nothing and is not counted.
                    if log.version_range().is_some() {
                        probe.older_skipped += 1;
                    }
                    continue;
                }
            }
            if let Some((r, value)) = log.lookup(key, hash, &accept, probe)? {
                if best.as_ref().is_none_or(|(b, _)| b.stamp() < r.stamp()) {
                    best = Some((r, value));
                }
            }
        }
        if let Some((r, value)) = best {
            // The table may still hold a newer version when the log's is
            // one a batch or a journal replay appended late (see
            // `FunkScan::step`): only then is it looked at.
            let newer_in_table = match &self.table {
                Some(t) if r.version <= t.footer.max_version => t
                    .get(key, &|v| view.admits(v))?
                    .filter(|e| e.stamp() > r.stamp()),
                _ => None,
            };
            if let Some(e) = newer_in_table {
                return Ok((Some(e), Source::Table));
            }
            let e = Entry {
                key: key.to_vec(),
                value,
                version: r.version,
                counter: r.counter,
            };
            return Ok((Some(e), Source::Log));
        }
        let found = match &self.table {
            Some(t) => t.get(key, &|v| view.admits(v))?,
            None => None,
        };
        let source = if found.is_some() {
            Source::Table
        } else {
            Source::Nowhere
        };
        Ok((found, source))
    }

    /// Every version of every key in `[from, to)`, grouped by key in key
    /// order, each group newest first, skipping versions recovery hides.
    /// Logs are read as of now; `log_limits` (one per segment) stops each
    /// segment at an earlier length. A banded segment that takes no more
    /// appends (frozen, or every segment when there are no limits: the
    /// caller diverted them) is read piece by piece as the groups are
    /// taken (see `BandedScan`); the others are read whole first, so what
    /// the groups hold at once is about [`Funk::merge_memory`].
    ///
    /// Unsorted windows are read whole while they hold at most
    /// `images_cap` bytes together; past that, the largest are merged
    /// through an index (see [`index_threshold`]).
    pub fn key_groups(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        log_limits: Option<&[u64]>,
        recovery: &RecoveryTable,
        images_cap: u64,
    ) -> Result<KeyGroups> {
        let mut windows = Vec::new();
        let mut banded = Vec::new();
        for (i, log) in self.logs().enumerate() {
            let limit = log_limits.and_then(|l| l.get(i).copied());
            if limit.is_none() || log.is_frozen() {
                if let Some(scan) = log::BandedScan::new(log, from, to)? {
                    banded.push(scan);
                    continue;
                }
            }
            // Of a banded segment, only the window holding the range.
            let w = log.window(from, to, limit.unwrap_or(u64::MAX));
            windows.push((log, log.is_banded(), w));
        }
        let unsorted = windows
            .iter()
            .filter(|(_, b, _)| !b)
            .map(|(_, _, w)| w.bytes());
        let mut inputs = LogInputs::with_threshold(index_threshold(unsorted, images_cap));
        for (log, _, w) in windows {
            inputs.add(log, w.start, w.end)?;
            for (offset, len) in w.extra {
                inputs.add(log, offset, offset + len)?;
            }
        }
        Ok(KeyGroups::new(
            self.table.as_ref().map(|t| t.bulk_from(from)),
            inputs.view(from, to, recovery),
            banded,
            to,
            recovery.clone(),
        ))
    }

    /// Asks the file system to start reading what a merge of `[from, to)`
    /// reads: each segment's window of the range and the table. The merge
    /// then reads its inputs a piece at a time from memory instead of
    /// waiting for the device at each piece (idle compaction read 2 GB of
    /// runs that way, its time mostly spent waiting).
    pub fn prefetch(&self, from: &[u8], to: Option<&[u8]>) {
        for log in self.logs() {
            let w = log.window(from, to, u64::MAX);
            log.prefetch(w.start, w.end);
        }
        if let Some(t) = &self.table {
            t.prefetch();
        }
    }

    /// About the most memory [`Funk::key_groups`] of `[from, to)` holds at
    /// once with no log limits and `images_cap`: the windows of the
    /// segments read whole, the indexes of those merged through one, and
    /// a few blocks of each banded one.
    pub fn merge_memory(&self, from: &[u8], to: Option<&[u8]>, images_cap: u64) -> u64 {
        let windows: Vec<(&Arc<LogSegment>, bool, u64)> = self
            .logs()
            .map(|l| (l, l.is_banded(), l.window(from, to, u64::MAX).bytes()))
            .collect();
        let unsorted = windows.iter().filter(|(_, b, _)| !b).map(|&(_, _, w)| w);
        let threshold = index_threshold(unsorted, images_cap);
        windows
            .iter()
            .map(|&(l, banded, window)| match banded {
                true => window.min(log::BANDED_SCAN_MEMORY),
                false => unsorted_memory(l, window, threshold),
            })
            .sum()
    }
}

/// Unsorted log windows at least this large are merged through a sorted
/// index of their records (keys and where each record sits), built from
/// pieces of the log, with each value read when the merge takes it,
/// instead of being read whole into memory. A munk lets its chunk's log
/// grow to twice the chunk size; once the munk is evicted by a put, that
/// log is merged. Measured reason: in P at 8x a 64 MiB budget, such logs'
/// images were 43 of the heap's 86 MiB at its peak.
pub(crate) const INDEXED_MERGE_BYTES: u64 = 16 << 20;

/// The window size from which a merge of unsorted log windows `windows`
/// reads a log through an index: [`INDEXED_MERGE_BYTES`], or less, so
/// that the windows read whole take at most `cap` bytes together (the
/// largest go through an index first). Measured reason: a rebuild at the
/// start of the analytics stream at a 64 MiB budget held 60 MiB of
/// images, each log under 16 MiB.
pub(crate) fn index_threshold(windows: impl Iterator<Item = u64>, cap: u64) -> u64 {
    let mut whole: Vec<u64> = windows.filter(|&w| w < INDEXED_MERGE_BYTES).collect();
    whole.sort_unstable();
    let mut sum = 0u64;
    for w in whole {
        sum = sum.saturating_add(w);
        if sum > cap {
            return w;
        }
    }
    INDEXED_MERGE_BYTES
}

/// True if a merge whose index threshold is `threshold` (see
/// [`index_threshold`]; never above [`INDEXED_MERGE_BYTES`]) reads
/// `window` bytes of `log` through an index.
pub(crate) fn merged_through_index(log: &LogSegment, window: u64, threshold: u64) -> bool {
    !log.is_banded() && window >= threshold.min(INDEXED_MERGE_BYTES)
}

/// About what a merge holds to read `window` bytes of the unsorted `log`:
/// the window itself, or its index if it is read through one (per record
/// an index entry — a new index is its sorted entries, not a copy: see
/// `SegmentIndex::extended` — and a place in the merge order, plus its
/// key, taken as an eighth of the record).
pub(crate) fn unsorted_memory(log: &LogSegment, window: u64, threshold: u64) -> u64 {
    if !merged_through_index(log, window, threshold) {
        return window;
    }
    let per_record = std::mem::size_of::<(usize, RecordPtr)>() + std::mem::size_of::<(u32, u32)>();
    let records = log.records().saturating_mul(window) / log.appended().max(1);
    records * per_record as u64 + window / 8
}

/// What a [`LogView`] is built from: log ranges read whole, and unsorted
/// ones large enough to be read through an index ([`merged_through_index`]).
pub(crate) struct LogInputs {
    images: Vec<SegmentImage>,
    indexed: Vec<(Arc<LogSegment>, SegmentIndex)>,
    /// Unsorted ranges this large or larger are read through an index.
    threshold: u64,
}

impl LogInputs {
    /// Inputs that read unsorted ranges of `threshold` bytes or more
    /// through an index (see [`index_threshold`]).
    pub fn with_threshold(threshold: u64) -> Self {
        LogInputs {
            images: Vec::new(),
            indexed: Vec::new(),
            threshold,
        }
    }

    /// Adds the records of `log` between offsets `start` (a record
    /// boundary) and `end` (both clamped to the published records).
    pub fn add(&mut self, log: &Arc<LogSegment>, start: u64, end: u64) -> Result<()> {
        let end = end.min(log.len());
        if merged_through_index(log, end.saturating_sub(start), self.threshold) {
            self.indexed
                .push((log.clone(), log.index_between(start, end)?));
        } else {
            self.images.push(log.image_range(start, end)?);
        }
        Ok(())
    }

    /// The records added with keys in `[from, to)` that recovery admits.
    pub fn view(self, from: &[u8], to: Option<&[u8]>, recovery: &RecoveryTable) -> LogView {
        LogView::new(self.images, self.indexed, from, to, recovery)
    }
}

/// The records of some log segments in (key asc, stamp desc) order: of
/// images read whole, and of segments merged through an index built for
/// the merge (values read one at a time, see [`INDEXED_MERGE_BYTES`]).
#[derive(Debug)]
pub(crate) struct LogView {
    images: Vec<SegmentImage>,
    indexed: Vec<(Arc<LogSegment>, SegmentIndex)>,
    /// (source, record), sorted: a source below `images.len()` is an
    /// image and the record its index in it; above, an indexed segment
    /// and the record's position in its index.
    order: Vec<(u32, u32)>,
}

impl LogView {
    /// Records of `images` and `indexed` with keys in `[from, to)` that
    /// recovery admits.
    fn new(
        images: Vec<SegmentImage>,
        indexed: Vec<(Arc<LogSegment>, SegmentIndex)>,
        from: &[u8],
        to: Option<&[u8]>,
        recovery: &RecoveryTable,
    ) -> LogView {
        let mut order = Vec::new();
        for (i, img) in images.iter().enumerate() {
            for (j, r) in img.records.iter().enumerate() {
                let k = img.key(r);
                if k >= from && to.is_none_or(|t| k < t) && recovery.visible(r.version) {
                    order.push((i as u32, j as u32));
                }
            }
        }
        for (i, (_, index)) in indexed.iter().enumerate() {
            let source = (images.len() + i) as u32;
            for j in index.range(from, to) {
                if index.record(j).is_some_and(|r| recovery.visible(r.version)) {
                    order.push((source, j as u32));
                }
            }
        }
        let view = LogView {
            images,
            indexed,
            order: Vec::new(),
        };
        order.sort_by(|&a, &b| {
            let (sa, sb) = (view.stamp(a), view.stamp(b));
            view.key_of(a).cmp(view.key_of(b)).then_with(|| sb.cmp(&sa))
        });
        LogView { order, ..view }
    }

    /// The indexed segment `at` is in, if it is one, and the record's
    /// position in its index.
    fn indexed_at(&self, (i, j): (u32, u32)) -> Option<(&(Arc<LogSegment>, SegmentIndex), usize)> {
        let k = (i as usize).checked_sub(self.images.len())?;
        self.indexed.get(k).map(|s| (s, j as usize))
    }

    fn record(&self, at: (u32, u32)) -> Option<&RecordPtr> {
        match self.indexed_at(at) {
            Some(((_, index), j)) => index.record(j),
            None => self.images.get(at.0 as usize)?.records.get(at.1 as usize),
        }
    }

    fn stamp(&self, at: (u32, u32)) -> (u64, u64) {
        self.record(at).map_or((0, 0), RecordPtr::stamp)
    }

    fn key_of(&self, at: (u32, u32)) -> &[u8] {
        match self.indexed_at(at) {
            Some(((_, index), j)) => index.key(j),
            None => match (self.images.get(at.0 as usize), self.record(at)) {
                (Some(img), Some(r)) => img.key(r),
                _ => &[],
            },
        }
    }

    /// The key at position `pos`.
    pub fn key(&self, pos: usize) -> Option<&[u8]> {
        self.order.get(pos).map(|&at| self.key_of(at))
    }

    /// The record at position `pos` as an entry (value copied, or read
    /// from its segment if that is merged through an index).
    pub fn entry(&self, pos: usize) -> Result<Option<Entry>> {
        let Some(&at) = self.order.get(pos) else {
            return Ok(None);
        };
        let Some(r) = self.record(at) else {
            return Ok(None);
        };
        let value = match self.indexed_at(at) {
            Some(((segment, _), _)) => segment.read_value(r)?,
            None => self
                .images
                .get(at.0 as usize)
                .and_then(|img| img.value(r))
                .map(<[u8]>::to_vec),
        };
        Ok(Some(Entry {
            key: self.key_of(at).to_vec(),
            value,
            version: r.version,
            counter: r.counter,
        }))
    }
}

/// Makes `best` the smaller of itself and `key`, borrowed.
fn keep_least<'a>(best: &mut Option<&'a [u8]>, key: &'a [u8]) {
    if best.is_none_or(|b| key < b) {
        *best = Some(key);
    }
}

/// The next key of a merge's table below `to`, borrowed; the table's
/// error instead if it has one next.
fn table_head<'a>(
    table: &'a mut Option<Peekable<TableIter>>,
    to: Option<&[u8]>,
) -> Result<Option<&'a [u8]>> {
    let Some(t) = table.as_mut() else {
        return Ok(None);
    };
    if matches!(t.peek(), Some(Err(_))) {
        if let Some(Err(e)) = t.next() {
            return Err(e);
        }
    }
    Ok(match t.peek() {
        Some(Ok(e)) if to.is_none_or(|to| e.key.as_slice() < to) => Some(&e.key),
        _ => None,
    })
}

/// The smallest of `best` (the other sources' smallest key) and the next
/// key of every banded scan, copied. Called last, so a banded segment is
/// read only if it may hold a key at or below the others' smallest; the
/// keys are compared borrowed and only the smallest is copied.
fn least_with_banded<'a>(
    banded: &'a mut [log::BandedScan],
    mut best: Option<&'a [u8]>,
) -> Result<Option<Vec<u8>>> {
    for scan in banded {
        if best.is_none_or(|b| scan.may_hold_up_to(b)) {
            if let Some(k) = scan.peek_key()? {
                keep_least(&mut best, k);
            }
        }
    }
    Ok(best.map(<[u8]>::to_vec))
}

/// See [`Funk::key_groups`].
pub(crate) struct KeyGroups {
    table: Option<Peekable<TableIter>>,
    log: LogView,
    pos: usize,
    banded: Vec<log::BandedScan>,
    to: Option<Vec<u8>>,
    recovery: RecoveryTable,
    failed: bool,
}

impl KeyGroups {
    fn new(
        table: Option<TableIter>,
        log: LogView,
        banded: Vec<log::BandedScan>,
        to: Option<&[u8]>,
        recovery: RecoveryTable,
    ) -> Self {
        KeyGroups {
            table: table.map(Iterator::peekable),
            log,
            pos: 0,
            banded,
            to: to.map(<[u8]>::to_vec),
            recovery,
            failed: false,
        }
    }

    /// The smallest key left in any source.
    fn next_key(&mut self) -> Result<Option<Vec<u8>>> {
        let mut best = table_head(&mut self.table, self.to.as_deref())?;
        if let Some(k) = self.log.key(self.pos) {
            keep_least(&mut best, k);
        }
        least_with_banded(&mut self.banded, best)
    }
}

impl Iterator for KeyGroups {
    type Item = Result<(Vec<u8>, Vec<Entry>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let key = match self.next_key() {
            Ok(Some(k)) => k,
            Ok(None) => return None,
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        };
        let mut group = Vec::new();
        while self.log.key(self.pos) == Some(key.as_slice()) {
            match self.log.entry(self.pos) {
                Ok(Some(e)) => group.push(e),
                Ok(None) => {}
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
            self.pos += 1;
        }
        let mut merged = false;
        for scan in &mut self.banded {
            // `next_key` peeked every scan that may hold `key`: their
            // records of it are in memory.
            for r in scan.take(&key) {
                if self.recovery.visible(r.version) {
                    merged = true;
                    group.push(Entry {
                        key: key.clone(),
                        value: r.value.map(|v| v.to_vec()),
                        version: r.version,
                        counter: r.counter,
                    });
                }
            }
        }
        if merged {
            group.sort_by_key(|e| std::cmp::Reverse((e.version, e.counter)));
        }
        let from_logs = group.len();
        if let Some(t) = self.table.as_mut() {
            while matches!(t.peek(), Some(Ok(e)) if e.key == key) {
                if let Some(Ok(e)) = t.next() {
                    if self.recovery.visible(e.version) {
                        group.push(e);
                    }
                }
            }
        }
        // Table entries are usually older than log records, but a batch or
        // a journal replay may append an older version to a log late.
        if from_logs > 0 && group.len() > from_logs {
            group.sort_by_key(|e| std::cmp::Reverse((e.version, e.counter)));
        }
        Some(Ok((key, group)))
    }
}

/// The newest visible value of each key of a range, for scans: a merge of
/// the table (read block by block from the start key) and each log
/// segment's sorted index (see [`LogSegment::sorted_index`]), reading only
/// the log records it returns. See [`Funk::scan`].
pub(crate) struct FunkScan {
    table: Option<Peekable<TableIter>>,
    /// The unsorted segments, read through their sorted indexes.
    logs: Vec<IndexedLog>,
    /// Banded segments, read in file order without an index.
    banded: Vec<log::BandedScan>,
    to: Option<Vec<u8>>,
    max_version: u64,
    recovery: RecoveryTable,
    /// Range deletes, and the floor they give the key being read.
    tombstones: Arc<crate::tombstones::Tombstones>,
    floor: u64,
    failed: bool,
}

/// An unsorted segment a scan reads through its sorted index.
struct IndexedLog {
    seg: Arc<LogSegment>,
    index: Arc<log::SegmentIndex>,
    /// Positions of the index left to read.
    range: std::ops::Range<usize>,
    /// The bytes read last (see `LogSegment::read_value_ahead`).
    window: log::ValueWindow,
}

impl Funk {
    /// Where a reverse scan's window of about `back` entries below `hi`
    /// may start: the largest such key of the table and the logs' sorted
    /// indexes, so every source has at most about `back` entries in the
    /// window; `None` if each has fewer (start at the chunk's first key).
    /// `room(n)` makes room in the memory budget for `n` bytes of log
    /// index about to be kept; the sorted indexes used go into `held`, for
    /// the caller to hold while the window is scanned (one the budget did
    /// not keep is then used again, not built again).
    pub fn key_before(
        &self,
        lo: &[u8],
        hi: Option<&[u8]>,
        back: usize,
        room: &dyn Fn(u64),
        held: &mut Vec<Arc<log::SegmentIndex>>,
    ) -> Result<Option<Vec<u8>>> {
        let mut best = match &self.table {
            Some(t) => t.key_before(hi, back)?,
            None => None,
        };
        let mut keep = |k: Vec<u8>| {
            if best.as_deref().is_none_or(|b| k.as_slice() > b) {
                best = Some(k);
            }
        };
        for seg in self.logs() {
            if seg.scan_plan(lo, hi).is_some() {
                // Read in bands, without a sorted index: halve `[lo, hi)`
                // by the band's middle key, keeping the upper half, until
                // about `back` of its records are left or no band key
                // splits it further.
                let mut records = seg.records();
                let mut from = lo.to_vec();
                let mut found = None;
                while records > back as u64 {
                    match seg.middle_key(&from, hi) {
                        Some(m) => {
                            found = Some(m.clone());
                            from = m;
                            records /= 2;
                        }
                        None => break,
                    }
                }
                if let Some(k) = found {
                    keep(k);
                }
                continue;
            }
            let index = seg.sorted_index(room)?;
            let range = index.range(&[], hi);
            if range.len() > back {
                keep(index.key(range.end - back).to_vec());
            }
            held.push(index);
        }
        Ok(best)
    }

    /// Scans keys in `[from, to)` as of `max_version`; see [`FunkScan`].
    /// `room(n)` makes room in the memory budget for `n` bytes of log
    /// index about to be kept.
    pub fn scan(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        max_version: u64,
        recovery: &RecoveryTable,
        tombstones: Arc<crate::tombstones::Tombstones>,
        room: &dyn Fn(u64),
    ) -> Result<FunkScan> {
        let mut logs = Vec::new();
        let mut banded = Vec::new();
        for seg in self.logs() {
            if !seg.overlaps(from, to) {
                continue;
            }
            if let Some(b) = log::BandedScan::new(seg, from, to)? {
                banded.push(b);
                continue;
            }
            let index = seg.sorted_index(room)?;
            let range = index.range(from, to);
            if !range.is_empty() {
                logs.push(IndexedLog {
                    seg: seg.clone(),
                    index,
                    range,
                    window: log::ValueWindow::default(),
                });
            }
        }
        Ok(FunkScan {
            table: self
                .table
                .as_ref()
                .map(|t| t.iter_range(from, to).peekable()),
            logs,
            banded,
            to: to.map(<[u8]>::to_vec),
            max_version,
            recovery: recovery.clone(),
            tombstones,
            floor: 0,
            failed: false,
        })
    }
}

impl FunkScan {
    fn admits(&self, version: u64) -> bool {
        version <= self.max_version && version >= self.floor && self.recovery.visible(version)
    }

    /// The smallest key any source has left.
    fn next_key(&mut self) -> Result<Option<Vec<u8>>> {
        let mut best = table_head(&mut self.table, self.to.as_deref())?;
        for IndexedLog { index, range, .. } in &self.logs {
            if !range.is_empty() {
                keep_least(&mut best, index.key(range.start));
            }
        }
        least_with_banded(&mut self.banded, best)
    }

    fn step(&mut self) -> Result<Option<ScanItem>> {
        let Some(key) = self.next_key()? else {
            return Ok(None);
        };
        if !self.tombstones.is_empty() {
            self.floor = self.tombstones.floor(&key, self.max_version);
        }
        // Log records are newer than table entries of the same key: the
        // newest admitted record of any segment wins.
        let mut best: Option<(usize, RecordPtr)> = None;
        for i in 0..self.logs.len() {
            loop {
                let IndexedLog { index, range, .. } = &self.logs[i];
                if range.is_empty() || index.key(range.start) != key.as_slice() {
                    break;
                }
                let r = index.record(range.start).cloned();
                self.logs[i].range.start += 1;
                if let Some(r) = r {
                    let newer = best.as_ref().is_none_or(|(_, b)| b.stamp() < r.stamp());
                    if newer && self.admits(r.version) {
                        best = Some((i, r));
                    }
                }
            }
        }
        // A banded segment's newest admitted record of the key, if newer.
        let mut from_band: Option<(Stamp, Option<log::ImageBytes>)> = None;
        for i in 0..self.banded.len() {
            // `next_key` peeked every scan that may hold `key`.
            if !self.banded[i].may_hold_up_to(&key) {
                continue;
            }
            if self.banded[i].peek_key()? != Some(key.as_slice()) {
                continue;
            }
            for r in self.banded[i].take(&key) {
                let stamp = (r.version, r.counter);
                let newer = best.as_ref().is_none_or(|(_, b)| b.stamp() < stamp)
                    && from_band.as_ref().is_none_or(|(s, _)| *s < stamp);
                if newer && self.admits(r.version) {
                    from_band = Some((stamp, r.value));
                }
            }
        }
        if from_band.is_some() {
            best = None;
        }
        let mut from_table: Option<(Stamp, Option<Vec<u8>>)> = None;
        let (max, floor, recovery) = (self.max_version, self.floor, &self.recovery);
        if let Some(t) = self.table.as_mut() {
            while matches!(t.peek(), Some(Ok(e)) if e.key == key) {
                if let Some(Ok(e)) = t.next() {
                    let admitted =
                        e.version <= max && e.version >= floor && recovery.visible(e.version);
                    if from_table.is_none() && admitted {
                        from_table = Some((e.stamp(), e.value));
                    }
                }
            }
        }
        // Log records are usually newer than the table's, but not always:
        // a batch (or a journal replay) may append a version older than one
        // a rebuild already moved into the table. The newest stamp wins.
        let log_stamp = match (&best, &from_band) {
            (Some((_, r)), _) => Some(r.stamp()),
            (None, Some((s, _))) => Some(*s),
            (None, None) => None,
        };
        if let Some((ts, v)) = from_table {
            if log_stamp.is_none_or(|l| l < ts) {
                return Ok(Some((key, v)));
            }
        }
        let value = match (best, from_band) {
            (Some((i, r)), _) => {
                let log = &mut self.logs[i];
                let next = log.range.clone().filter_map(|j| log.index.record(j));
                log.seg.read_value_ahead(&r, next, &mut log.window)?
            }
            (None, Some((_, v))) => v.map(|v| v.to_vec()),
            (None, None) => None,
        };
        Ok(Some((key, value)))
    }
}

/// A record's (version, counter).
type Stamp = (u64, u64);

/// A key and its newest visible value (`None`: deleted or absent).
pub(crate) type ScanItem = (Vec<u8>, Option<Vec<u8>>);

impl Iterator for FunkScan {
    type Item = Result<ScanItem>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
