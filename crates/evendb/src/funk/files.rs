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
use std::sync::{Arc, Weak};

#[derive(Debug, Default)]
pub(crate) struct OpenFiles {
    logs: Mutex<HashMap<u64, Weak<LogSegment>>>,
    tables: Mutex<HashMap<u64, Weak<TableReader>>>,
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

    /// Drops the sorted indexes of every open segment (memory pressure).
    pub fn drop_log_indexes(&self) {
        let logs: Vec<Arc<LogSegment>> = self
            .logs
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for l in logs {
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

    /// Forgets file `number` (removed from the store).
    pub fn forget(&self, number: u64) {
        self.logs.lock().remove(&number);
        self.tables.lock().remove(&number);
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
