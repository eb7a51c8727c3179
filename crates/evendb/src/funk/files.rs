//! The registry of open funk files, so that a file shared by several chunks
//! (after a split or merge, until their next rebuild) is one object in
//! memory: one table index, one set of log filters, and — for a shared
//! active log — one append position.
//!
//! Invariants: each map (mutex) holds weak references; an entry whose file
//! is still in use is returned instead of opening the file again. Opening
//! happens under the map's mutex, so two chunks opening one file at once
//! get the same object. Entries are forgotten when a rebuild removes the
//! file.

use super::log::{LogConfig, LogSegment, Replay};
use super::table::TableReader;
use crate::error::Result;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

#[derive(Debug, Default)]
pub(crate) struct OpenFiles {
    logs: Mutex<HashMap<u64, Weak<LogSegment>>>,
    tables: Mutex<HashMap<u64, Weak<TableReader>>>,
    /// Removed files still open somewhere, held so that the last close
    /// happens in [`OpenFiles::close_removed`] (see [`OpenFiles::forget`]).
    removed: Mutex<Vec<Removed>>,
    /// True while a background thread calls [`OpenFiles::close_removed`].
    closer_runs: AtomicBool,
}

/// A removed file, held open until no one else holds it.
#[derive(Debug)]
enum Removed {
    Log(Arc<LogSegment>),
    Table(Arc<TableReader>),
}

impl Removed {
    /// True while someone besides the list holds the file.
    fn in_use(&self) -> bool {
        match self {
            Removed::Log(l) => Arc::strong_count(l) > 1,
            Removed::Table(t) => Arc::strong_count(t) > 1,
        }
    }
}

impl OpenFiles {
    /// The open segment `number`, or the one `open` replays (its torn-tail
    /// bytes are returned with it; 0 for a segment already open).
    pub fn log(
        &self,
        number: u64,
        open: impl FnOnce() -> Result<Replay>,
    ) -> Result<(Arc<LogSegment>, u64)> {
        let mut logs = self.logs.lock();
        if let Some(seg) = logs.get(&number).and_then(Weak::upgrade) {
            return Ok((seg, 0));
        }
        let replay = open()?;
        let seg = Arc::new(replay.segment);
        logs.retain(|_, w| w.strong_count() > 0);
        logs.insert(number, Arc::downgrade(&seg));
        Ok((seg, replay.truncated))
    }

    /// Segment `number`, if it is open in this process.
    pub fn live_log(&self, number: u64) -> Option<Arc<LogSegment>> {
        self.logs.lock().get(&number).and_then(Weak::upgrade)
    }

    /// The durable mark of each of `numbers` that is open, under one lock.
    pub fn durable_marks(&self, numbers: &[u64]) -> HashMap<u64, super::log::DurableMark> {
        let logs = self.logs.lock();
        numbers
            .iter()
            .filter_map(|n| Some((*n, logs.get(n)?.upgrade()?.durable_mark())))
            .collect()
    }

    /// Drops sorted indexes of open segments, least recently used first,
    /// until `enough()` or none is left (memory pressure). Dropping them
    /// all at once made the next scans rebuild each, reading its whole
    /// log again.
    pub fn drop_log_indexes(&self, enough: impl Fn() -> bool) {
        let mut indexed: Vec<(u64, Arc<LogSegment>)> = self
            .logs
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .filter_map(|l| Some((l.index_last_used()?, l)))
            .collect();
        indexed.sort_unstable_by_key(|(used, _)| *used);
        for (_, l) in indexed {
            if enough() {
                break;
            }
            l.drop_index();
        }
    }

    /// Registers a segment created by this process.
    pub fn add_log(&self, seg: &Arc<LogSegment>) {
        self.logs.lock().insert(seg.number, Arc::downgrade(seg));
    }

    /// The open table `number`, or the one `open` opens.
    pub fn table(
        &self,
        number: u64,
        open: impl FnOnce() -> Result<TableReader>,
    ) -> Result<Arc<TableReader>> {
        let mut tables = self.tables.lock();
        if let Some(t) = tables.get(&number).and_then(Weak::upgrade) {
            return Ok(t);
        }
        let t = Arc::new(open()?);
        tables.retain(|_, w| w.strong_count() > 0);
        tables.insert(number, Arc::downgrade(&t));
        Ok(t)
    }

    /// Memory of the open files' handles (each segment and table once,
    /// however many chunks share it) and of this registry, outside the
    /// budget: what their indexes and filters take is charged.
    pub fn handle_bytes(&self) -> u64 {
        use std::mem::size_of;
        let entry = size_of::<u64>() + size_of::<Weak<LogSegment>>();
        let logs = self.logs.lock();
        let tables = self.tables.lock();
        let live_logs = logs.values().filter(|w| w.strong_count() > 0).count();
        let table_handles: usize = tables
            .values()
            .filter_map(Weak::upgrade)
            .map(|t| size_of::<TableReader>() + t.path.as_os_str().len())
            .sum();
        let bytes = (logs.capacity() + tables.capacity()) * entry
            + live_logs * size_of::<LogSegment>()
            + table_handles;
        bytes as u64
    }

    /// Forgets file `number` (removed from the store). If it is still open
    /// (a reader, a put or a scan holds it) and a background thread closes
    /// removed files, it is held until that thread finds no one else
    /// holding it: the last close of a removed file frees its blocks (on
    /// a file system mounted with `discard`, a discard the closing thread
    /// waits for), and a put that happened to let go of it last would wait
    /// there. Measured reason: P zipf-composite at 8x a 256 MiB cap, puts
    /// waited up to 19.5 ms for such discards (ext4 `discard`).
    pub fn forget(&self, number: u64) {
        let log = self.logs.lock().remove(&number).and_then(|w| w.upgrade());
        let table = self.tables.lock().remove(&number).and_then(|w| w.upgrade());
        if !self.closer_runs.load(Ordering::Acquire) {
            return; // Closed here or by their last holder, as they drop.
        }
        let held = log
            .map(Removed::Log)
            .into_iter()
            .chain(table.map(Removed::Table));
        self.removed.lock().extend(held);
    }

    /// Closes the removed files no one else holds any more (a background
    /// thread's work: see [`OpenFiles::forget`]).
    pub fn close_removed(&self) {
        let unused: Vec<Removed> = {
            let mut removed = self.removed.lock();
            if removed.is_empty() {
                return;
            }
            let (kept, unused) = std::mem::take(&mut *removed)
                .into_iter()
                .partition(Removed::in_use);
            *removed = kept;
            unused
        };
        drop(unused);
    }

    /// Notes whether a background thread calls [`OpenFiles::close_removed`];
    /// when it stops, the files it held are let go at once.
    pub fn set_closer_runs(&self, runs: bool) {
        self.closer_runs.store(runs, Ordering::Release);
        if !runs {
            drop(std::mem::take(&mut *self.removed.lock()));
        }
    }
}

/// How a funk opens its files: storage, directory, log settings, registry.
pub(crate) struct FileSource<'a> {
    pub storage: &'a dyn crate::vfs::Storage,
    pub dir: &'a std::path::Path,
    pub log_config: &'a LogConfig,
    pub open_files: &'a OpenFiles,
    pub budget: &'a Arc<crate::cache::budget::MemoryBudget>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{MemFs, Storage};
    use std::path::Path;

    /// Log `number`, opened through `files`, then removed while held: the
    /// holder, and a weak reference that says whether it is still open.
    fn removed_while_held(
        files: &OpenFiles,
        fs: &MemFs,
        number: u64,
    ) -> (Arc<LogSegment>, Weak<LogSegment>) {
        let config = LogConfig::for_tests(16 << 10, 1);
        let seg = LogSegment::create(fs, Path::new("/f"), number, 1, &config).expect("create");
        let held = Arc::new(seg);
        files.add_log(&held);
        let file = Arc::downgrade(&held);
        files.forget(number);
        (held, file)
    }

    #[test]
    fn a_removed_file_someone_holds_is_closed_by_the_closer_not_by_its_last_holder() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/f")).expect("directory");
        let files = OpenFiles::default();
        files.set_closer_runs(true);
        let (held, file) = removed_while_held(&files, &fs, 1);
        assert!(files.live_log(1).is_none(), "forgotten");
        // Still held by its reader: the closer keeps it.
        files.close_removed();
        assert!(file.upgrade().is_some());
        // The reader lets go: the file stays open until the closer looks.
        drop(held);
        assert!(file.upgrade().is_some(), "closed by its last holder");
        files.close_removed();
        assert!(file.upgrade().is_none(), "the closer let go of it");

        // Without a closer, a removed file goes with its last holder.
        files.set_closer_runs(false);
        let (held, file) = removed_while_held(&files, &fs, 2);
        drop(held);
        assert!(file.upgrade().is_none());

        // A closer that stops lets go of what it held.
        files.set_closer_runs(true);
        let (held, file) = removed_while_held(&files, &fs, 3);
        drop(held);
        assert!(file.upgrade().is_some());
        files.set_closer_runs(false);
        assert!(file.upgrade().is_none());
    }

    #[test]
    fn memory_pressure_drops_the_least_recently_used_indexes_first() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/f")).expect("directory");
        let files = OpenFiles::default();
        let config = LogConfig::for_tests(16 << 10, 1);
        let budget = config.budget.clone();
        let counter = std::sync::atomic::AtomicU64::new(1);
        let segs: Vec<Arc<LogSegment>> = (1..=3)
            .map(|n| {
                let seg = LogSegment::create(&fs, Path::new("/f"), n, 1, &config).expect("create");
                for k in (0..200u32).rev() {
                    let key = format!("{n}-{k:05}");
                    seg.append(key.as_bytes(), Some(b"value"), 1, &counter, true)
                        .expect("append");
                }
                let seg = Arc::new(seg);
                files.add_log(&seg);
                seg
            })
            .collect();
        for s in &segs {
            s.sorted_index(&|_| {}).expect("index");
        }
        // Segment 1's index is used again: segment 2's is now the oldest.
        segs[0].sorted_index(&|_| {}).expect("index");
        assert!(segs.iter().all(|s| s.index_last_used().is_some()));
        // Room for one byte more than is free: one index goes, the oldest.
        let want = budget.free() + 1;
        files.drop_log_indexes(|| budget.free() >= want);
        let kept: Vec<bool> = segs.iter().map(|s| s.index_last_used().is_some()).collect();
        assert_eq!(kept, [true, false, true]);

        // More than all of them free up: every index goes.
        files.drop_log_indexes(|| false);
        assert!(segs.iter().all(|s| s.index_last_used().is_none()));
        assert_eq!(budget.kind_used(crate::cache::budget::Kind::Indexes), 0);
    }
}
