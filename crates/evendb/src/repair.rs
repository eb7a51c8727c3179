//! Salvage: copies what checksums allow from a damaged store into a new
//! one, and says what was lost. Nothing is salvaged silently: opening a
//! store never does this; only [`repair`] (and `evendb repair`) does, into
//! a directory of its own, leaving the damaged store as it is.
//!
//! The steps:
//! 1. Read the MANIFEST if it is whole. Then each chunk's listed files are
//!    read, and only keys inside the chunk's range are kept from them (a
//!    file shared after a split may hold stale keys of a neighbor), with
//!    the recovery table's cuts applied. Without a readable MANIFEST, every
//!    table and log of the store's id in the directory (and in
//!    `lost+found/`) is read, and the report warns that deleted keys may
//!    reappear from files replaced before the damage.
//! 2. Tables: every block that passes its checksum; a damaged block is
//!    skipped and reported. A table whose footer or index is damaged is
//!    reported whole.
//! 3. Logs: every record that passes its checksums; after a damaged record
//!    the scan resumes at the next valid record, and the skipped bytes are
//!    reported.
//! 4. For each key, the newest version read wins; tombstones drop the key.
//!    The survivors are written, in key order, into a new store at `dest`.

use crate::codec::{FileHeader, FileKind, StoreId};
use crate::db::{is_engine_file, read_header, LOST_FOUND};
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::funk::table::TableReader;
use crate::manifest::Manifest;
use crate::recovery::RecoveryTable;
use crate::vfs::{StdFs, Storage};
use crate::{Durability, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What [`repair`] read, wrote and lost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// Tables and logs read (whole or in part).
    pub files_read: u64,
    /// Table entries and log records that passed their checksums.
    pub records_salvaged: u64,
    /// Keys written into the new store.
    pub keys_written: u64,
    /// Keys whose newest salvaged version is a deletion (not written).
    pub tombstones: u64,
    /// Damaged regions skipped, one line each: file, offset, bytes, why.
    pub damaged: Vec<String>,
    /// Files that could not be read at all, with why.
    pub skipped_files: Vec<String>,
    /// Caveats about the result (for example, no readable MANIFEST).
    pub warnings: Vec<String>,
}

impl RepairReport {
    /// True if every file was read whole: nothing was lost.
    pub fn is_lossless(&self) -> bool {
        self.damaged.is_empty() && self.skipped_files.is_empty()
    }
}

/// Salvages the store at `src` into a new store at `dest` (which must not
/// exist, or be empty). `src` is only read.
///
/// # Errors
/// [`Error::InvalidArgument`] if `dest` holds files; [`Error::Locked`] if
/// another handle has `src` open; I/O errors reading
/// `src` directories or writing `dest`. Damage in `src` is not an error:
/// it is reported in the [`RepairReport`].
///
/// ```no_run
/// let report = evendb::repair("/var/lib/app/damaged", "/var/lib/app/salvaged")?;
/// for line in &report.damaged {
///     eprintln!("lost: {line}");
/// }
/// # Ok::<(), evendb::Error>(())
/// ```
pub fn repair(src: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<RepairReport> {
    let (src, dest) = (src.as_ref(), dest.as_ref());
    let st = StdFs;
    if st.exists(dest).map_err(|e| Error::io(dest, e))?
        && !st.list(dest).map_err(|e| Error::io(dest, e))?.is_empty()
    {
        return Err(Error::InvalidArgument(format!(
            "repair writes a new store: {} is not empty",
            dest.display()
        )));
    }
    // The source must not change under the salvage: hold its lock (a
    // source without a LOCK file is read as it is, nothing is created).
    let lock_path = src.join("LOCK");
    let _lock = if st
        .exists(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?
    {
        Some(
            st.lock(&lock_path)
                .map_err(|e| Error::io(&lock_path, e))?
                .ok_or_else(|| Error::Locked(src.to_path_buf()))?,
        )
    } else {
        None
    };
    let mut report = RepairReport::default();
    let manifest = match Manifest::load(&st, src) {
        Ok(Some(m)) => Some(m),
        Ok(None) => {
            report
                .warnings
                .push("no MANIFEST: every table and log of the store was read".into());
            None
        }
        Err(e) => {
            report.warnings.push(format!(
                "MANIFEST unreadable ({e}): every table and log of the store was read"
            ));
            None
        }
    };
    let out = Options::default()
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_secs(3600),
        })
        .open(dest)?;
    let write = |kept: BTreeMap<Vec<u8>, Entry>, report: &mut RepairReport| -> Result<()> {
        for (key, e) in kept {
            match e.value {
                Some(v) => {
                    out.put(&key, &v)?;
                    report.keys_written += 1;
                }
                None => report.tombstones += 1,
            }
        }
        Ok(())
    };
    match manifest {
        Some(m) => {
            let cuts = RecoveryTable::from_cuts(m.cuts.clone());
            // Range deletes the recovery point keeps delete what they cover.
            let tombstones = crate::tombstones::Tombstones::new(
                m.tombstones
                    .iter()
                    .filter(|t| cuts.visible(t.version))
                    .cloned()
                    .collect(),
            );
            for (i, c) in m.chunks.iter().enumerate() {
                let end = m.chunks.get(i + 1).map(|n| n.min_key.as_slice());
                let in_range = |k: &[u8]| k >= c.min_key.as_slice() && end.is_none_or(|e| k < e);
                let mut kept = BTreeMap::new();
                let files = c
                    .files
                    .table
                    .map(|n| (src.to_path_buf(), n, FileKind::Table));
                let logs = c
                    .files
                    .logs
                    .iter()
                    .map(|&n| (src.to_path_buf(), n, FileKind::Log));
                for (dir, n, kind) in files.into_iter().chain(logs) {
                    salvage_file(&st, &dir, n, kind, m.store, &mut report, &mut |e| {
                        if in_range(&e.key)
                            && cuts.visible(e.version)
                            && e.version >= tombstones.floor(&e.key, u64::MAX)
                        {
                            keep_newest(&mut kept, e);
                        }
                    });
                }
                write(kept, &mut report)?;
            }
        }
        None => {
            report.warnings.push(
                "without the MANIFEST, keys deleted before the damage may reappear from files the store had replaced".into(),
            );
            let files = store_files(&st, src, &mut report)?;
            let mut kept = BTreeMap::new();
            for (dir, n, kind, store) in files {
                salvage_file(&st, &dir, n, kind, store, &mut report, &mut |e| {
                    keep_newest(&mut kept, e)
                });
            }
            write(kept, &mut report)?;
        }
    }
    out.flush()?;
    drop(out);
    Ok(report)
}

/// Keeps `e` if it is the newest version of its key seen so far.
fn keep_newest(kept: &mut BTreeMap<Vec<u8>, Entry>, e: Entry) {
    match kept.get(&e.key) {
        Some(old) if old.stamp() >= e.stamp() => {}
        _ => {
            kept.insert(e.key.clone(), e);
        }
    }
}

/// Every table and log in `src` and its `lost+found/` whose header names
/// the store most of them belong to.
fn store_files(
    st: &dyn Storage,
    src: &Path,
    report: &mut RepairReport,
) -> Result<Vec<(PathBuf, u64, FileKind, StoreId)>> {
    let mut found = Vec::new();
    for dir in [src.to_path_buf(), src.join(LOST_FOUND)] {
        if !st.exists(&dir).map_err(|e| Error::io(&dir, e))? {
            continue;
        }
        for name in st.list(&dir).map_err(|e| Error::io(&dir, e))? {
            let Some(n) = is_engine_file(&name) else {
                continue;
            };
            let path = dir.join(&name);
            let header = read_header(st, &path)
                .ok()
                .flatten()
                .and_then(|head| FileHeader::decode(&head).ok());
            match header {
                Some(h) if h.number == n => found.push((dir.clone(), n, h.kind, h.store)),
                _ => report
                    .skipped_files
                    .push(format!("{}: no readable file header", path.display())),
            }
        }
    }
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for f in &found {
        *counts.entry(f.3 .0).or_default() += 1;
    }
    let Some((&store, _)) = counts.iter().max_by_key(|&(_, c)| *c) else {
        return Ok(found);
    };
    let (ours, foreign): (Vec<_>, Vec<_>) = found.into_iter().partition(|f| f.3 .0 == store);
    for f in foreign {
        report.skipped_files.push(format!(
            "{}: belongs to another store ({})",
            f.0.join(crate::funk::file_name(f.2, f.1)).display(),
            f.3
        ));
    }
    Ok(ours)
}

/// Reads what checksums allow of one file, handing each entry to `keep`.
fn salvage_file(
    st: &dyn Storage,
    dir: &Path,
    n: u64,
    kind: FileKind,
    store: StoreId,
    report: &mut RepairReport,
    keep: &mut dyn FnMut(Entry),
) {
    let path = dir.join(crate::funk::file_name(kind, n));
    let outcome = match kind {
        FileKind::Table => salvage_table(st, dir, n, store, report, keep),
        _ => crate::funk::log::salvage(st, dir, n, store, &mut |e| {
            report.records_salvaged += 1;
            keep(e)
        })
        .map(|damage| {
            report
                .damaged
                .extend(damage.into_iter().map(|(at, len, why)| {
                    format!("{}: {len} bytes at offset {at}: {why}", path.display())
                }))
        }),
    };
    match outcome {
        Ok(()) => report.files_read += 1,
        Err(e) => report
            .skipped_files
            .push(format!("{}: {e}", path.display())),
    }
}

fn salvage_table(
    st: &dyn Storage,
    dir: &Path,
    n: u64,
    store: StoreId,
    report: &mut RepairReport,
    keep: &mut dyn FnMut(Entry),
) -> Result<()> {
    let t = TableReader::open(st, dir, n, store)?;
    for b in 0..t.block_count() {
        match t.read_block(b) {
            Ok(entries) => {
                for e in entries {
                    report.records_salvaged += 1;
                    keep(e);
                }
            }
            Err(e) => report
                .damaged
                .push(format!("{}: block {b}: {e}", t.path.display())),
        }
    }
    Ok(())
}
