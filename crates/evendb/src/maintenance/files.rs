//! What every kind of rebuild does with files: creating a segment,
//! writing tables, publishing a chunk's new files, removing the old ones.

use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::entry::Entry;
use crate::error::Result;
use crate::funk::log::LogSegment;
use crate::funk::table::TableReader;
use crate::funk::{Funk, FunkFiles};
use crate::manifest::ChunkRecord;
use std::collections::HashSet;
use std::sync::Arc;

/// Publishes `funk`'s files as the chunk's (the commit point of a rebuild
/// or a run), then swaps it in.
pub(super) fn install(inner: &DbInner, chunk: &Chunk, funk: Funk) -> Result<()> {
    let files = funk.files();
    inner.publish(|m| {
        if let Some(c) = m.chunks.iter_mut().find(|c| c.id == chunk.id) {
            c.files = files.clone();
        }
    })?;
    *chunk.files.lock() = files;
    chunk.set_funk(Arc::new(funk));
    Ok(())
}

/// A new, empty log segment, registered as open.
pub(super) fn new_segment(inner: &DbInner) -> Result<Arc<LogSegment>> {
    create_segment(inner, false)
}

/// A new, empty segment for a sorted run, stored in blocks compressed as
/// tables are (`Options::compression`); with no compression, an ordinary
/// log, readable by earlier releases.
pub(super) fn new_run(inner: &DbInner) -> Result<Arc<LogSegment>> {
    create_segment(inner, inner.opts.compression == crate::Compression::Lz4)
}

/// A new, empty segment, stored in compressed blocks if `in_blocks`,
/// registered as open.
fn create_segment(inner: &DbInner, in_blocks: bool) -> Result<Arc<LogSegment>> {
    let number = inner.next_file_number();
    let (_, generation) = inner.identity();
    let (st, dir, config) = (inner.storage.as_ref(), &inner.dir, &inner.log_config);
    let segment = Arc::new(if in_blocks {
        LogSegment::create_run(st, dir, number, generation, config, true)?
    } else {
        LogSegment::create(st, dir, number, generation, config)?
    });
    inner.open_files.add_log(&segment);
    Ok(segment)
}

/// Tables written from entries in order, cut at key boundaries when one
/// passes `target` bytes.
pub(super) struct TableOutput<'a> {
    inner: &'a DbInner,
    target: u64,
    current: Option<(Vec<u8>, crate::funk::table::TableWriter, u64)>,
    done: Vec<(Vec<u8>, Arc<TableReader>)>,
    last_key: Option<Vec<u8>>,
}

impl<'a> TableOutput<'a> {
    pub fn new(inner: &'a DbInner, target: u64) -> Self {
        TableOutput {
            inner,
            target,
            current: None,
            done: Vec::new(),
            last_key: None,
        }
    }

    pub fn add(&mut self, e: &Entry) -> Result<()> {
        let new_key = self.last_key.as_deref() != Some(e.key.as_slice());
        if new_key
            && self
                .current
                .as_ref()
                .is_some_and(|(_, w, _)| w.bytes() >= self.target)
        {
            self.close()?;
        }
        if self.current.is_none() {
            let number = self.inner.next_file_number();
            let w = self.inner.table_writer(number)?;
            self.current = Some((e.key.clone(), w, number));
        }
        if let Some((_, w, _)) = self.current.as_mut() {
            if let Err(err) = w.add(e) {
                return self.inner.poison(err);
            }
        }
        if new_key {
            self.last_key = Some(e.key.clone());
        }
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        let Some((first, w, number)) = self.current.take() else {
            return Ok(());
        };
        let size = match w.finish() {
            Ok(s) => s,
            Err(e) => return self.inner.poison(e),
        };
        crate::stats::add(&self.inner.counters.local().table_bytes_written, size);
        // The reader's block index is charged as it opens: make room for it
        // first (no lock held here).
        let reader = TableReader::open(
            self.inner.storage.as_ref(),
            &self.inner.dir,
            number,
            self.inner.log_config.store,
        )?;
        super::room::room_for(self.inner, reader.index_bytes());
        let reader = self
            .inner
            .open_files
            .table(number, || Ok(reader.charged(&self.inner.budget)))?;
        self.done.push((first, reader));
        Ok(())
    }

    /// The tables written, each with its first key.
    pub fn finish(mut self) -> Result<Vec<(Vec<u8>, Arc<TableReader>)>> {
        self.close()?;
        Ok(self.done)
    }
}

/// The manifest record of a chunk.
pub(super) fn record(chunk: &Chunk, files: FunkFiles) -> ChunkRecord {
    ChunkRecord {
        id: chunk.id,
        min_key: chunk.min_key.clone(),
        files,
    }
}

/// Removes the files of `old` that the manifest no longer refers to.
pub(super) fn remove_unreferenced(inner: &DbInner, old: &[FunkFiles]) {
    let live: HashSet<u64> = inner.published.lock().manifest.live_files().collect();
    for f in old {
        for &n in f.table.iter().chain(f.logs.iter()) {
            if live.contains(&n) {
                continue;
            }
            inner.open_files.forget(n);
            for name in [
                crate::funk::table::TableWriter::file_name(n),
                LogSegment::file_name(n),
            ] {
                let p = inner.dir.join(name);
                if inner.storage.exists(&p).unwrap_or(false) {
                    if let Err(e) = inner.storage.remove(&p) {
                        log::warn!("could not remove {}: {e}", p.display());
                    }
                }
            }
        }
    }
}
