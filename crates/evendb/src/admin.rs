//! Operator-facing views and actions: per-chunk information and backup.

use crate::db::Db;
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::table::TableWriter;
use crate::manifest::Manifest;
use crate::recovery::{last_version, CheckpointFile};
use crate::vfs::StorageFile;
use std::path::Path;
use std::sync::Arc;

/// One chunk as [`Db::chunks`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkInfo {
    /// The chunk's id (stable until it is split or merged).
    pub id: u64,
    /// Smallest key of the chunk's range (inclusive).
    pub min_key: Vec<u8>,
    /// End of the range (exclusive); `None` for the last chunk.
    pub end_key: Option<Vec<u8>>,
    /// True once the chunk's funk has been opened in this process.
    pub open: bool,
    /// Size of the table file in bytes (0 without a table).
    pub table_bytes: u64,
    /// Entries in the table (all versions and tombstones), if open.
    pub table_entries: Option<u64>,
    /// Bytes in the log segments: of an open chunk their records (a
    /// run's before compression), of a closed one the files' sizes.
    pub log_bytes: u64,
    /// Number of log segments (more than one while a rebuild runs).
    pub log_segments: usize,
    /// Largest version in the table, if open.
    pub max_version: Option<u64>,
    /// Records in the log segments, if open.
    pub log_records: Option<u64>,
    /// Smallest and largest version of the log records, if open and the
    /// logs hold any.
    pub log_versions: Option<(u64, u64)>,
    /// Parts the log segments are cut into, each with a Bloom filter of
    /// its keys, if open.
    pub log_parts: Option<usize>,
    /// Memory of the chunk's munk, if it has one.
    pub munk_bytes: Option<u64>,
    /// Keys in the chunk's munk, if it has one.
    pub munk_keys: Option<u64>,
    /// Memory of the Bloom filters over the chunk's log parts.
    pub filter_bytes: u64,
    /// Recent accesses (the munk cache's measure of popularity).
    pub heat: u32,
}

impl Db {
    /// One line of information per chunk, in key order. Chunks not opened
    /// yet report file sizes without reading them.
    ///
    /// # Errors
    /// I/O errors reading file sizes.
    pub fn chunks(&self) -> Result<Vec<ChunkInfo>> {
        let idx = self.inner.index.load();
        let st = self.inner.storage.as_ref();
        let dir = &self.inner.dir;
        let mut out = Vec::with_capacity(idx.chunks.len());
        for c in &idx.chunks {
            let munk = c.munk();
            let (munk_bytes, munk_keys) = munk.as_ref().map_or((None, None), |m| {
                (Some(m.bytes()), Some(m.entries().len() as u64))
            });
            let info = match c.funk() {
                Some(f) => ChunkInfo {
                    id: c.id,
                    min_key: c.min_key.clone(),
                    end_key: c.end_key.clone(),
                    open: true,
                    table_bytes: f.table.as_ref().map_or(0, |t| t.file_size),
                    table_entries: f.table.as_ref().map(|t| t.footer.entry_count),
                    log_bytes: f.log_bytes(),
                    log_segments: f.logs().count(),
                    max_version: f.table.as_ref().map(|t| t.footer.max_version),
                    log_records: Some(f.logs().map(|l| l.records()).sum()),
                    log_versions: f
                        .logs()
                        .filter_map(|l| l.version_range())
                        .reduce(|(lo, hi), (l, h)| (lo.min(l), hi.max(h))),
                    log_parts: Some(f.logs().map(|l| l.part_count()).sum()),
                    munk_bytes,
                    munk_keys,
                    filter_bytes: f.logs().map(|l| l.filter_bytes()).sum(),
                    heat: c.heat.load(std::sync::atomic::Ordering::Relaxed),
                },
                None => {
                    let files = c.files.lock().clone();
                    let size = |name: String| -> Result<u64> {
                        let p = dir.join(name);
                        st.open(&p)
                            .and_then(|f| f.len())
                            .map_err(|e| Error::io(&p, e))
                    };
                    let table_bytes = match files.table {
                        Some(n) => size(TableWriter::file_name(n))?,
                        None => 0,
                    };
                    let mut log_bytes = 0;
                    for &n in &files.logs {
                        log_bytes += size(LogSegment::file_name(n))?;
                    }
                    ChunkInfo {
                        id: c.id,
                        min_key: c.min_key.clone(),
                        end_key: c.end_key.clone(),
                        open: false,
                        table_bytes,
                        table_entries: None,
                        log_bytes,
                        log_segments: files.logs.len(),
                        max_version: None,
                        log_records: None,
                        log_versions: None,
                        log_parts: None,
                        munk_bytes,
                        munk_keys,
                        filter_bytes: 0,
                        heat: c.heat.load(std::sync::atomic::Ordering::Relaxed),
                    }
                }
            };
            out.push(info);
        }
        Ok(out)
    }

    /// Copies a consistent image of the live store into the new directory
    /// `dest` (which must not exist or be empty): every put completed before
    /// the call is in the copy, none started after it. Writers are never
    /// paused: the copy is cut at a snapshot version taken at the call (its
    /// recovery table hides the records of later puts that copied logs
    /// hold), and the bytes are copied after the list of files and their
    /// lengths is taken. The copy opens as an ordinary store.
    ///
    /// Tables never change once written, so where the storage allows it
    /// (the real file system, `dest` on the same file system as the store)
    /// a table is hard-linked into the copy instead of copied: the backup
    /// then costs the space of the logs only. Log segments, which grow, are
    /// always copied.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let dest = tempfile::tempdir().unwrap();
    /// # let dest = dest.path().join("copy");
    /// let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "v")?;
    /// db.backup(&dest)?;
    /// assert_eq!(evendb::Db::open(&dest)?.get("k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `dest` exists and is not empty; I/O
    /// errors.
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<()> {
        self.backup_at(dest.as_ref(), drop)
    }

    /// [`Db::backup`], returning a snapshot of exactly the state the copy
    /// holds, for tests that compare the two.
    ///
    /// # Errors
    /// As [`Db::backup`].
    #[cfg(feature = "test-hooks")]
    pub fn backup_with_snapshot(&self, dest: impl AsRef<Path>) -> Result<crate::Snapshot> {
        self.backup_at(dest.as_ref(), |g| crate::Snapshot::new(Arc::new(g)))
    }

    /// The backup, handing `at_cut` the snapshot the copy is cut at.
    fn backup_at<T>(
        &self,
        dest: &Path,
        at_cut: impl FnOnce(crate::scan::SnapshotGuard) -> T,
    ) -> Result<T> {
        let inner = &self.inner;
        let st = inner.storage.as_ref();
        if st.exists(dest).map_err(|e| Error::io(dest, e))?
            && !st.list(dest).map_err(|e| Error::io(dest, e))?.is_empty()
        {
            return Err(Error::InvalidArgument(format!(
                "backup destination {} exists and is not empty",
                dest.display()
            )));
        }
        // A snapshot at `v`: every put at or below it has its record in a
        // log or its log's buffer, and rebuilds keep what a reader at `v`
        // needs. Puts go on meanwhile; the copy hides what came after `v`
        // (below). With rebuild commits held back, capture the manifest,
        // an open handle and a length for every file (once: split chunks
        // share files).
        let snap = crate::scan::SnapshotGuard::new(inner.clone(), &[], None);
        let v = snap.version;
        let (mut manifest, files) = {
            inner.flush_buffers()?;
            let published = inner.published.lock();
            let manifest: Manifest = published.manifest.clone();
            let mut seen = std::collections::HashSet::new();
            let mut files: Vec<Captured> = Vec::new();
            for c in &manifest.chunks {
                let tables = c.files.table.map(|n| (TableWriter::file_name(n), true));
                let logs = c
                    .files
                    .logs
                    .iter()
                    .map(|&n| (LogSegment::file_name(n), false));
                for (name, table) in tables.into_iter().chain(logs) {
                    if !seen.insert(name.clone()) {
                        continue;
                    }
                    let p = inner.dir.join(&name);
                    let f = st.open(&p).map_err(|e| Error::io(&p, e))?;
                    let len = f.len().map_err(|e| Error::io(&p, e))?;
                    files.push(Captured {
                        name,
                        file: f,
                        len,
                        table,
                    });
                }
            }
            (manifest, files)
        };
        let cut = at_cut(snap);
        // The copy's recovery table cuts the running epoch at `v`: records
        // of later puts that the copied logs hold are never read there.
        manifest.cuts.push((manifest.epoch, v));
        st.create_dir_all(dest).map_err(|e| Error::io(dest, e))?;
        for f in &files {
            let p = dest.join(&f.name);
            // A rebuild may have removed the table since (its open handle
            // still reads it): then it is copied.
            if f.table && st.hard_link(&inner.dir.join(&f.name), &p).unwrap_or(false) {
                continue;
            }
            if st.exists(&p).map_err(|e| Error::io(&p, e))? {
                // Never truncate what may be a link to the store's own file.
                return Err(Error::InvalidArgument(format!(
                    "backup destination {} changed while the backup ran",
                    dest.display()
                )));
            }
            copy(inner.dir.join(&f.name).as_path(), f, st, &p)?;
        }
        // The copy's epoch is whole up to its cut: its checkpoint says so,
        // so opening it cuts nothing more.
        CheckpointFile::create(st, dest)?;
        let opened = CheckpointFile::open(st, dest, manifest.store)?;
        opened.file.record(
            manifest.epoch,
            last_version(manifest.epoch),
            manifest.generation,
            &Default::default(),
        )?;
        manifest.store(st, dest)?;
        Ok(cut)
    }
}

/// A file of the store as the backup captured it.
struct Captured {
    name: String,
    file: Arc<dyn StorageFile>,
    /// The length to copy (a log may grow after the capture).
    len: u64,
    /// A table (immutable, may be hard-linked).
    table: bool,
}

/// Copies the captured length of `f` (at `src`) into a new file `dest`.
fn copy(src: &Path, f: &Captured, st: &dyn crate::vfs::Storage, dest: &Path) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let out = st.create(dest).map_err(|e| Error::io(dest, e))?;
    let mut off = 0;
    let mut buf = Vec::new();
    while off < f.len {
        let n = CHUNK.min(f.len - off) as usize;
        buf.resize(n, 0);
        f.file
            .read_at(off, &mut buf)
            .map_err(|e| Error::io(src, e))?;
        out.write_at(off, &buf).map_err(|e| Error::io(dest, e))?;
        off += n as u64;
    }
    out.sync().map_err(|e| Error::io(dest, e))
}
