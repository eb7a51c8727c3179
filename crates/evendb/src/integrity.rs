//! `verify_integrity`: read every byte of the store and check it.

use crate::db::{Db, DbInner};
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::table::{TableReader, TableWriter};
use crate::vfs::{Storage, StorageFile, StorageLock};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What [`Db::verify_integrity`] checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IntegrityReport {
    /// Chunks checked.
    pub chunks: u64,
    /// Table files read in full.
    pub tables: u64,
    /// Log segments replayed in full.
    pub logs: u64,
    /// Table entries and log records checked.
    pub entries: u64,
    /// Engine files in the directory that the manifest does not refer to
    /// (not counting a running rebuild's files: outputs it has yet to
    /// publish, inputs it has replaced and is about to remove).
    pub orphans: Vec<String>,
    /// Logs that end in a torn tail (records being written at a crash,
    /// after the last checkpointed length), with its size in bytes: not
    /// damage, but what the next replay of the log cuts off.
    pub torn_tails: Vec<(String, u64)>,
    /// Files open moved to `lost+found/` (kept, but not part of the store).
    pub lost_and_found: Vec<String>,
    /// Through a read-only open: engine files the manifest does not refer
    /// to, which a writable open would have deleted (leftovers of an
    /// operation a crash interrupted) or moved to `lost+found/` before
    /// the check. Not damage.
    pub leftovers: Vec<String>,
    /// Everything found wrong, one line each; empty for a sound store.
    pub problems: Vec<String>,
}

impl IntegrityReport {
    /// True if nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.orphans.is_empty()
    }
}

impl Db {
    /// Reads every table block and log record, checking checksums, key
    /// order, that every key lies in its chunk's range, that the chunks
    /// partition the key space, and that no file is missing or orphaned.
    /// Problems are reported, not returned as errors.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "v")?;
    /// assert!(db.verify_integrity()?.is_ok());
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// Only I/O errors that stop the check itself (listing the directory).
    pub fn verify_integrity(&self) -> Result<IntegrityReport> {
        verify(&self.inner, &mut |_, _| {})
    }

    /// [`Db::verify_integrity`], calling `progress(done, total)` after each
    /// file with the bytes checked so far and the bytes to check in all
    /// (for a progress bar).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "v")?;
    /// let mut last = (0, 0);
    /// assert!(db.verify_integrity_with_progress(|done, total| last = (done, total))?.is_ok());
    /// assert_eq!(last.0, last.1);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::verify_integrity`].
    pub fn verify_integrity_with_progress(
        &self,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<IntegrityReport> {
        verify(&self.inner, &mut progress)
    }
}

fn verify(inner: &DbInner, progress: &mut dyn FnMut(u64, u64)) -> Result<IntegrityReport> {
    let mut r = IntegrityReport::default();
    let dir = &inner.dir;
    // The manifest and a handle on each file it lists, taken together: a
    // rebuild that replaces and removes files meanwhile leaves the check
    // reading what was listed.
    let (manifest, pinned) = {
        let published = inner.published.lock();
        let manifest = published.manifest.clone();
        let pinned = Pinned::new(inner.storage.clone(), dir, &manifest);
        (manifest, pinned)
    };
    let st: &dyn Storage = &pinned;
    if manifest
        .chunks
        .first()
        .is_none_or(|c| !c.min_key.is_empty())
        || !manifest
            .chunks
            .windows(2)
            .all(|w| w[0].min_key < w[1].min_key)
    {
        r.problems
            .push("chunks do not partition the key space".into());
    }
    // Sizes for progress only: a file that cannot be read counts as empty
    // here and is reported by its check below.
    let size = |name: String| {
        let p = dir.join(name);
        st.open(&p).and_then(|f| f.len()).unwrap_or(0)
    };
    let sizes: std::collections::HashMap<u64, u64> = manifest
        .chunks
        .iter()
        .flat_map(|c| {
            let table = c.files.table.map(|n| (n, TableWriter::file_name(n)));
            let logs = c.files.logs.iter().map(|&n| (n, LogSegment::file_name(n)));
            table.into_iter().chain(logs).collect::<Vec<_>>()
        })
        .map(|(n, name)| (n, size(name)))
        .collect();
    let total: u64 = sizes.values().sum();
    let mut done = 0;
    let mut checked = |n: u64, progress: &mut dyn FnMut(u64, u64)| {
        done += sizes.get(&n).copied().unwrap_or(0);
        progress(done.min(total), total);
    };
    progress(0, total);
    let mut checked_tables = HashSet::new();
    let mut checked_logs = HashSet::new();
    for c in &manifest.chunks {
        r.chunks += 1;
        if let Some(n) = c.files.table.filter(|&n| checked_tables.insert(n)) {
            match check_table(st, dir, n, inner.log_config.store) {
                Ok(count) => {
                    r.tables += 1;
                    r.entries += count;
                }
                Err(e) => r.problems.push(format!("chunk {}: {e}", c.id)),
            }
            checked(n, progress);
        }
        for &n in &c.files.logs {
            if !checked_logs.insert(n) {
                continue; // shared with a neighbor, checked already
            }
            // A segment in use is checked through its live object, up to
            // what is published; a closed one straight from the file.
            let outcome = match inner.open_files.live_log(n) {
                Some(seg) => seg.image(seg.len()).map(|i| (i.records.len() as u64, 0)),
                None => crate::funk::log::check_file(
                    st,
                    dir,
                    n,
                    inner.log_config.store,
                    inner.log_config.durable.get(&n).copied(),
                )
                .map(|c| (c.records, c.torn)),
            };
            match outcome {
                Ok((records, torn)) => {
                    r.logs += 1;
                    r.entries += records;
                    if torn > 0 {
                        r.torn_tails.push((LogSegment::file_name(n), torn));
                    }
                }
                Err(e) => r.problems.push(format!("chunk {}: {e}", c.id)),
            }
            checked(n, progress);
        }
    }
    let names = inner.storage.list(dir).map_err(|e| Error::io(dir, e))?;
    // Background work may have created files since the snapshot above:
    // what it has published since, has yet to publish, or has replaced
    // and is about to remove is no orphan.
    let mut live: HashSet<u64> = manifest.live_files().collect();
    {
        let p = inner.published.lock();
        live.extend(p.manifest.live_files());
        live.extend(p.unpublished.iter().copied());
        live.extend(p.manifest.obsolete.iter().copied());
    }
    for name in names {
        if crate::db::is_engine_file(&name).is_some_and(|n| !live.contains(&n)) {
            if inner.opts.read_only {
                r.leftovers.push(name);
            } else {
                r.orphans.push(name);
            }
        }
    }
    let lost = dir.join(crate::db::LOST_FOUND);
    if st.exists(&lost).unwrap_or(false) {
        r.lost_and_found = st.list(&lost).map_err(|e| Error::io(&lost, e))?;
        r.lost_and_found.sort();
    }
    Ok(r)
}

fn check_table(
    st: &dyn crate::vfs::Storage,
    dir: &std::path::Path,
    number: u64,
    store: crate::codec::StoreId,
) -> Result<u64> {
    let t = TableReader::open(st, dir, number, store)?;
    let name = TableWriter::file_name(number);
    let mut prev: Option<(Vec<u8>, u64, u64)> = None;
    let mut count = 0;
    for b in 0..t.block_count() {
        for e in t.read_block(b)? {
            let ordered = prev.as_ref().is_none_or(|(k, v, c)| {
                (k.as_slice(), std::cmp::Reverse((*v, *c)))
                    < (e.key.as_slice(), std::cmp::Reverse(e.stamp()))
            });
            if !ordered {
                return Err(Error::corruption(
                    dir.join(&name),
                    0,
                    "table entries out of order",
                ));
            }
            prev = Some((e.key.clone(), e.version, e.counter));
            count += 1;
        }
    }
    if count != t.footer.entry_count {
        return Err(Error::corruption(
            dir.join(&name),
            0,
            "table entry count differs from its footer",
        ));
    }
    Ok(count)
}

/// Storage that opens the files it was given handles on through those
/// handles (still readable after a removal), everything else as `base`.
#[derive(Debug)]
struct Pinned {
    base: Arc<dyn Storage>,
    files: HashMap<PathBuf, Arc<dyn StorageFile>>,
}

impl Pinned {
    /// Handles on the files `manifest` lists (a file that cannot be opened
    /// is left to the check, which reports it).
    fn new(base: Arc<dyn Storage>, dir: &Path, manifest: &crate::manifest::Manifest) -> Self {
        let mut files = HashMap::new();
        for c in &manifest.chunks {
            let tables = c.files.table.map(TableWriter::file_name);
            let logs = c.files.logs.iter().map(|&n| LogSegment::file_name(n));
            for name in tables.into_iter().chain(logs) {
                let p = dir.join(name);
                if files.contains_key(&p) {
                    continue;
                }
                if let Ok(f) = base.open_read(&p) {
                    files.insert(p, f);
                }
            }
        }
        Pinned { base, files }
    }
}

impl Storage for Pinned {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.base.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.base.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.files.contains_key(path) || self.base.exists(path)?)
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.base.create(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        match self.files.get(path) {
            Some(f) => Ok(f.clone()),
            None => self.base.open(path),
        }
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        match self.files.get(path) {
            Some(f) => Ok(f.clone()),
            None => self.base.open_read(path),
        }
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.base.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.base.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.base.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        self.base.lock(path)
    }
}
