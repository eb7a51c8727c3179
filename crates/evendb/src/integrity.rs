//! `verify_integrity`: read every byte of the store and check it.

use crate::db::{Db, DbInner};
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::table::{TableReader, TableWriter};
use std::collections::HashSet;

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
    /// Engine files in the directory that the manifest does not refer to.
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
    let manifest = inner.published.lock().manifest.clone();
    let st = inner.storage.as_ref();
    let dir = &inner.dir;
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
    let live: HashSet<u64> = manifest.live_files().collect();
    for name in st.list(dir).map_err(|e| Error::io(dir, e))? {
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
