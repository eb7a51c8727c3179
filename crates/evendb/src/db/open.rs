//! Opening a store: refuse what is not ours, lock, read the manifest, start
//! a new epoch, clear the leftovers of a crash, and build the chunk index.
//! Funks open lazily, on first use, so opening does not read logs.

use super::{checkpointer, spawn, Db, DbInner, Owner, Published};
use crate::cache::budget::MemoryBudget;
use crate::cache::munks::MunkCache;
use crate::cache::row::RowCache;
use crate::chunk::{Chunk, Index};
use crate::codec::{FileHeader, FileKind, StoreId, FILE_HEADER_LEN};
use crate::error::{Error, Result};
use crate::funk::log::{LogConfig, LogSegment};
use crate::funk::FunkFiles;
use crate::maintenance::queue::Maintenance;
use crate::manifest::{ChunkRecord, Manifest, MANIFEST, MANIFEST_TMP};
use crate::options::{Durability, Options};
use crate::recovery::checkpoint::OpenedCheckpoints;
use crate::recovery::{self, CheckpointFile, RecoveryTable, CHECKPOINT};
use crate::stats::Counters;
use crate::version::Versions;
use crate::vfs::Storage;
use parking_lot::{Condvar, Mutex};
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const LOCK_FILE: &str = "LOCK";

/// The file number of an engine-named file (`NNNNNN.tbl`, `NNNNNN.log`).
pub(crate) fn is_engine_file(name: &str) -> Option<u64> {
    let (stem, ext) = name.split_once('.')?;
    if (ext == "tbl" || ext == "log")
        && !stem.is_empty()
        && stem.bytes().all(|b| b.is_ascii_digit())
    {
        stem.parse().ok()
    } else {
        None
    }
}

/// Where open moves files it will neither use nor delete.
pub(crate) const LOST_FOUND: &str = "lost+found";

/// Names an evendb store may hold besides its engine-named files.
fn is_store_file(name: &str) -> bool {
    name == LOCK_FILE
        || name == MANIFEST
        || name == MANIFEST_TMP
        || name == CHECKPOINT
        || recovery::journal::number_of(name).is_some()
        || name == LOST_FOUND
        || is_engine_file(name).is_some()
}

/// What open decided for a file the manifest does not list.
#[derive(Debug, PartialEq, Eq)]
enum Unlisted {
    /// Safe to delete: the manifest's history records it as obsolete, it
    /// holds no data (shorter than a header), or it is the output of an
    /// operation that never committed (created under the current manifest
    /// generation; such outputs only copy data that listed files hold).
    Delete(&'static str),
    /// Kept, but out of the way: a file that may hold data nobody lists.
    LostAndFound(String),
}

impl Options {
    /// Opens (or creates) the store at `path`.
    ///
    /// # Errors
    /// [`Error::Locked`] if another handle has it open, [`Error::NotAStore`]
    /// for a non-empty directory without a store, [`Error::InvalidArgument`]
    /// for inconsistent options, and I/O or corruption errors.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Db> {
        self.validate()?;
        Db::open_with(path.as_ref(), self)
    }
}

impl Db {
    pub(crate) fn open_with(dir: &Path, opts: Options) -> Result<Db> {
        // A read-only open reads through a layer that refuses every write
        // (see `vfs::ReadOnly`).
        let storage: Arc<dyn Storage> = if opts.read_only {
            Arc::new(crate::vfs::ReadOnly(opts.storage.clone()))
        } else {
            opts.storage.clone()
        };
        let st = storage.as_ref();
        let exists = st.exists(dir).map_err(|e| Error::io(dir, e))?;
        if !exists {
            if !opts.create_if_missing || opts.read_only {
                return Err(Error::io(
                    dir,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
                ));
            }
            st.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
        let has_manifest = names.iter().any(|n| n == MANIFEST);
        if !has_manifest {
            // Only an empty directory (or one holding just a LOCK) becomes
            // a new store: evendb files without a MANIFEST are a store
            // whose file list is lost, and other files are not ours.
            let ours: Vec<String> = names
                .iter()
                .filter(|n| *n != LOCK_FILE && is_store_file(n))
                .cloned()
                .collect();
            let leftovers = !ours.is_empty() && leftovers_of_creation(st, dir, &ours)?;
            if !ours.is_empty() && !leftovers {
                let mut files = ours;
                files.sort();
                files.truncate(40);
                return Err(Error::NoManifest {
                    dir: dir.to_path_buf(),
                    files,
                });
            }
            // Only evendb's own leftovers of an interrupted creation may be
            // here, and they hold nothing: the creation starts over.
            if !opts.create_if_missing || opts.read_only || names.iter().any(|n| !is_store_file(n))
            {
                return Err(Error::NotAStore(dir.to_path_buf()));
            }
        }
        let lock = st
            .lock(&dir.join(LOCK_FILE))
            .map_err(|e| Error::io(dir.join(LOCK_FILE), e))?
            .ok_or_else(|| Error::Locked(dir.to_path_buf()))?;

        let budget = Arc::new(MemoryBudget::new(opts.memory_budget));
        let loaded = Manifest::load(st, dir)?;
        let (mut manifest, opened) = match loaded {
            Some(m) => {
                // Everything is checked before anything is written.
                let opened = CheckpointFile::open(st, dir, m.store)?;
                check_checkpoint(st, dir, &m, &opened)?;
                // Read-only: checked (a listed file missing is an error),
                // but leftovers stay where they are.
                let unlisted = classify_files(st, dir, &m)?;
                if !opts.read_only {
                    dispose_unlisted(st, dir, unlisted)?;
                }
                (m, opened)
            }
            None => {
                let store = StoreId::random();
                CheckpointFile::create(st, dir)?;
                let log_config = LogConfig {
                    part_bytes: 1024,
                    budget: budget.clone(),
                    store,
                    durable: Arc::default(),
                    read_only: false,
                    write_back: false,
                };
                LogSegment::create(st, dir, 1, 0, &log_config)?;
                let m = Manifest {
                    store,
                    generation: 0,
                    epoch: 0,
                    next_file: 2,
                    next_chunk_id: 2,
                    chunks: vec![ChunkRecord {
                        id: 1,
                        min_key: Vec::new(),
                        files: FunkFiles {
                            table: None,
                            logs: vec![1],
                        },
                    }],
                    cuts: Vec::new(),
                    obsolete: Vec::new(),
                    tombstones: Vec::new(),
                };
                let opened = CheckpointFile::open(st, dir, store)?;
                (m, opened)
            }
        };
        // Recovery (see `recovery`): if the epoch that ran last did not end
        // durable whole, cut it at its last checkpoint.
        if manifest.generation > 0 {
            if let Some(keep) = recovery::cut_after(manifest.epoch, opened.newest) {
                log::info!(
                    "{}: epoch {} ended in a crash; keeping versions up to {keep:#x}",
                    dir.display(),
                    manifest.epoch
                );
                manifest.cuts.push((manifest.epoch, keep));
            }
        }
        // A new epoch: every version written from now on is larger than any
        // version on disk. It is durable, with the recovery table, before
        // the first put: this store is the commit point of recovery.
        let next_epoch = manifest
            .epoch
            .checked_add(1)
            .filter(|&e| e <= max_epoch())
            .ok_or_else(|| Error::Exhausted("epoch".into()));
        let epoch = if opts.read_only {
            // Reads at versions above every version on disk; nothing is
            // recorded.
            next_epoch?
        } else {
            crate::failpoint::failpoint!(opts opts, dir, "recovery.before_manifest");
            manifest.epoch = next_epoch?;
            manifest.generation += 1;
            manifest.obsolete.clear();
            manifest.store(st, dir)?;
            crate::failpoint::failpoint!(opts opts, dir, "recovery.after_manifest");
            crate::failpoint::failpoint!(opts opts, dir, "recovery.after_orphans");
            manifest.epoch
        };
        let log_config = LogConfig {
            part_bytes: (opts.max_log_size / opts.log_parts as u64).max(1024),
            budget: budget.clone(),
            store: manifest.store,
            durable: Arc::new(opened.logs.clone()),
            read_only: opts.read_only,
            write_back: opts.durability == Durability::Sync,
        };
        let checkpoints = opened.file;
        let invalid_slots = opened.invalid;
        let carried = opened.logs;
        let journal_segments = crate::recovery::journal::segments(st, dir)?;
        let recovery_table = RecoveryTable::from_cuts(manifest.cuts.clone());
        // A range delete recovery hides (after its checkpoint) never
        // happened: it goes (from the manifest at the next publish).
        manifest
            .tombstones
            .retain(|t| recovery_table.visible(t.version));
        let tombstones = crate::tombstones::Tombstones::new(manifest.tombstones.clone());

        let chunks: Vec<Arc<Chunk>> = manifest
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let end = manifest.chunks.get(i + 1).map(|n| n.min_key.clone());
                Arc::new(Chunk::new(c.id, c.min_key.clone(), end, c.files.clone()))
            })
            .collect();
        let row_cache_bytes = (opts.memory_budget as f64 * opts.row_cache_share) as u64;
        let inner = Arc::new(DbInner {
            dir: dir.to_path_buf(),
            storage: storage.clone(),
            versions: Versions::new(epoch),
            recovery: recovery_table,
            checkpoints: crate::recovery::Checkpoints::new(checkpoints, epoch, carried),
            journal: (opts.durability == Durability::Sync && !opts.read_only).then(|| {
                let next = journal_segments.last().map_or(1, |n| n + 1);
                crate::recovery::journal::Journal::new(dir, manifest.store, next)
            }),
            tombstones: arc_swap::ArcSwap::from_pointee(tombstones),
            replayed: std::sync::OnceLock::new(),
            reclaims: Mutex::new(Vec::new()),
            index: Index::new(chunks),
            published: Mutex::new(Published {
                manifest,
                unpublished: Default::default(),
            }),
            counters: Counters::default(),
            row_cache: RowCache::new(row_cache_bytes, 3, budget.clone()),
            munks: MunkCache::default(),
            budget,
            work_gate: parking_lot::Mutex::new(()),
            log_config,
            open_files: crate::funk::OpenFiles::default(),
            maintenance: Maintenance::default(),
            trimmer: crate::cache::trim::Trimmer::new(opts.trim_freed_memory),
            idle: crate::maintenance::queue::IdleWatch::default(),
            mix: crate::maintenance::queue::OperationMix::default(),
            touches: std::sync::atomic::AtomicU64::new(0),
            next_decay: std::sync::atomic::AtomicU64::new(1024),
            retry_touches: std::sync::atomic::AtomicU64::new(256 * 1024),
            poisoned: Mutex::new(None),
            shutdown: AtomicBool::new(false),
            stop_lock: Mutex::new(()),
            stop_cv: Condvar::new(),
            _lock: lock,
            opts,
        });
        // The epoch's first checkpoint, before any put: in `Sync` mode it
        // says the epoch is durable whole; in `Buffered` mode it starts
        // the epoch's checkpoints at its first version.
        crate::stats::add(
            &inner.counters.local().checkpoint_slots_invalid,
            invalid_slots,
        );
        if inner.opts.read_only {
            if !journal_segments.is_empty() {
                // What a replay would write to the chunk logs is held in
                // memory instead, and read above them.
                let (held, records) = super::replay::replay_in_memory(&inner, &journal_segments)?;
                inner
                    .budget
                    .add(crate::cache::budget::Kind::WriteBuffers, held.bytes());
                crate::stats::add(&inner.counters.local().journal_replayed, records);
                if !held.is_empty() {
                    log::info!(
                        "{}: read-only, holding {} journaled writes the chunk logs lack in memory ({} bytes)",
                        dir.display(),
                        held.len(),
                        held.bytes()
                    );
                }
                let _ = inner.replayed.set(held);
            }
            // No checkpoints, no maintenance: nothing is written.
            return Ok(Db {
                _owner: Arc::new(Owner {
                    inner: inner.clone(),
                    threads: Mutex::new(Vec::new()),
                }),
                inner,
            });
        }
        if !journal_segments.is_empty() {
            super::replay::replay_journal(&inner, &journal_segments)?;
        }
        inner.start_checkpoints()?;
        let mut threads = Vec::new();
        for i in 0..inner.opts.maintenance_threads {
            let w = inner.clone();
            threads.push(spawn(format!("evendb-maint-{i}"), dir, move || {
                crate::maintenance::worker(&w)
            })?);
        }
        if inner.opts.maintenance_threads > 0 {
            let w = inner.clone();
            threads.push(spawn("evendb-maint-urgent".into(), dir, move || {
                crate::maintenance::urgent_worker(&w)
            })?);
            let w = inner.clone();
            inner.maintenance.set_keeper_runs(true);
            threads.push(spawn("evendb-memory".into(), dir, move || {
                crate::maintenance::memory_keeper(&w)
            })?);
        }
        // `Sync` mode checkpoints too, every 200 ms, to sync the chunk logs
        // (puts and batches are durable in the commit journal) and drop
        // the journal segments they cover, and at most once a second to
        // record their durable lengths (see `record_lengths`). (Once a
        // second, each sync of a second of logs delayed the journal's: P
        // zipf-composite, 32 writers, worst put 80-186 ms, 100 ms at
        // 200 ms, same throughput.)
        let interval = match inner.opts.durability {
            Durability::Buffered { sync_interval } => sync_interval,
            Durability::Sync => std::time::Duration::from_millis(200),
        };
        let w = inner.clone();
        threads.push(spawn("evendb-checkpoint".into(), dir, move || {
            checkpointer(&w, interval)
        })?);
        Ok(Db {
            _owner: Arc::new(Owner {
                inner: inner.clone(),
                threads: Mutex::new(threads),
            }),
            inner,
        })
    }
}

/// True if `files` are what a creation interrupted before its MANIFEST
/// leaves: an empty CHECKPOINT and an empty first log, which hold nothing.
fn leftovers_of_creation(st: &dyn Storage, dir: &Path, files: &[String]) -> Result<bool> {
    let first_log = LogSegment::file_name(1);
    for name in files {
        let limit = if *name == first_log {
            FILE_HEADER_LEN as u64
        } else if name == MANIFEST_TMP {
            u64::MAX
        } else if name == CHECKPOINT {
            0
        } else {
            return Ok(false);
        };
        let p = dir.join(name);
        let len = st
            .open(&p)
            .and_then(|f| f.len())
            .map_err(|e| Error::io(&p, e))?;
        if len > limit {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The largest epoch a version can carry.
fn max_epoch() -> u64 {
    (1u64 << crate::version::EPOCH_BITS) - 1
}

/// Refuses a checkpoint file that does not fit the manifest.
///
/// Every open stores the manifest with a new epoch and then, before any
/// put or manifest change, records that epoch's first checkpoint. So in a
/// sound store the newest checkpoint is of the manifest's epoch, or of an
/// earlier one only if the opens since all stopped before their first
/// checkpoint: each such epoch is then cut to nothing in the recovery
/// table, and no log holds a record of a later epoch. Anything else means
/// the CHECKPOINT is older than the store (an earlier copy, or emptied) or
/// the MANIFEST is (a checkpoint of a later epoch or generation).
fn check_checkpoint(
    st: &dyn Storage,
    dir: &Path,
    m: &Manifest,
    opened: &OpenedCheckpoints,
) -> Result<()> {
    let path = dir.join(CHECKPOINT);
    let (c_epoch, c_generation) = opened.newest.map_or((0, 0), |c| (c.epoch, c.generation));
    if c_epoch > m.epoch || c_generation > m.generation {
        return Err(Error::corruption(
            dir.join(MANIFEST),
            0,
            format!(
                "MANIFEST (epoch {}, generation {}) is older than CHECKPOINT (epoch {c_epoch}, generation {c_generation}): it was replaced by an earlier copy; restore the current MANIFEST",
                m.epoch, m.generation
            ),
        ));
    }
    if c_epoch == m.epoch {
        return Ok(());
    }
    let stale = |why: String| {
        let what = match opened.newest {
            None => "CHECKPOINT holds no readable checkpoint".to_string(),
            Some(c) => format!("CHECKPOINT is from epoch {}", c.epoch),
        };
        Error::corruption(
            &path,
            0,
            format!(
                "{what}, but the store ran epoch {} ({why}): the point the last session reached is unknown; restore the current CHECKPOINT from a backup, or salvage the store with `evendb repair`",
                m.epoch
            ),
        )
    };
    for e in c_epoch.saturating_add(1)..m.epoch {
        let cut_whole = m
            .cuts
            .iter()
            .any(|&(ce, keep)| ce == e && keep < crate::version::first_version(e));
        if !cut_whole {
            return Err(stale(format!(
                "epoch {e} ran, and it is not recorded as empty"
            )));
        }
    }
    let mut newest = 0u64;
    for c in &m.chunks {
        if let Some(n) = c.files.table {
            let t = crate::funk::table::TableReader::open(st, dir, n, m.store)?;
            newest = newest.max(crate::version::epoch_of(t.footer.max_version));
        }
        for &n in &c.files.logs {
            newest = newest.max(crate::funk::log::newest_epoch(st, dir, n, m.store)?);
        }
    }
    if newest > c_epoch {
        return Err(stale(format!("its files hold writes of epoch {newest}")));
    }
    Ok(())
}

/// Checks that every file the manifest lists exists and belongs to this
/// store, and decides what to do with every engine-named file it does not
/// list. Refuses (before anything is changed) a directory whose files show
/// that the MANIFEST is older than they are.
fn classify_files(st: &dyn Storage, dir: &Path, m: &Manifest) -> Result<Vec<(String, Unlisted)>> {
    for c in &m.chunks {
        let tables = c.files.table.map(|n| (n, FileKind::Table));
        let logs = c.files.logs.iter().map(|&n| (n, FileKind::Log));
        for (n, kind) in tables.into_iter().chain(logs) {
            let name = crate::funk::file_name(kind, n);
            let path = dir.join(&name);
            match read_header(st, &path)? {
                None => return Err(Error::MissingFile(path)),
                Some(head) => {
                    FileHeader::check(&head, m.store, kind, n).map_err(|e| e.into_error(&path))?;
                }
            }
        }
    }
    let obsolete: HashSet<u64> = m.obsolete.iter().copied().collect();
    let mut out = Vec::new();
    let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
    for name in names {
        if name == MANIFEST_TMP {
            out.push((name, Unlisted::Delete("an unfinished manifest write")));
            continue;
        }
        let Some(n) = is_engine_file(&name) else {
            continue;
        };
        let kind = if name.ends_with(".tbl") {
            FileKind::Table
        } else {
            FileKind::Log
        };
        let listed = match kind {
            FileKind::Table => m.chunks.iter().any(|c| c.files.table == Some(n)),
            _ => m.chunks.iter().any(|c| c.files.logs.contains(&n)),
        };
        if listed {
            continue;
        }
        let path = dir.join(&name);
        let verdict = if obsolete.contains(&n) {
            Unlisted::Delete("obsolete (replaced by a committed change)")
        } else {
            match read_header(st, &path)? {
                None => continue,
                Some(head) => match FileHeader::decode(&head) {
                    Err(_) if head.len() < FILE_HEADER_LEN => {
                        Unlisted::Delete("holds no data (shorter than a file header)")
                    }
                    Err(_) => Unlisted::LostAndFound("its header is unreadable".into()),
                    Ok(h) if h.store != m.store => {
                        Unlisted::LostAndFound(format!("it belongs to another store ({})", h.store))
                    }
                    Ok(h) if h.number != n || h.kind != kind => {
                        Unlisted::LostAndFound("its header names another file".into())
                    }
                    Ok(h) if h.generation > m.generation => {
                        return Err(Error::corruption(
                            dir.join(MANIFEST),
                            0,
                            format!(
                                "MANIFEST (generation {}) is older than {name} (created under generation {}): it was replaced by an earlier copy; restore the current MANIFEST",
                                m.generation, h.generation
                            ),
                        ));
                    }
                    Ok(h) if h.generation == m.generation && n >= m.next_file => {
                        Unlisted::Delete("output of a change that never committed")
                    }
                    Ok(_) => Unlisted::LostAndFound(
                        "it is this store's, but neither listed nor recorded obsolete".into(),
                    ),
                },
            }
        };
        out.push((name, verdict));
    }
    Ok(out)
}

/// Carries out `classify_files`' decisions, then syncs the directory.
fn dispose_unlisted(st: &dyn Storage, dir: &Path, files: Vec<(String, Unlisted)>) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    for (name, verdict) in files {
        let p = dir.join(&name);
        match verdict {
            Unlisted::Delete(why) => {
                log::info!("removing {}: {why}", p.display());
                st.remove(&p).map_err(|e| Error::io(&p, e))?;
            }
            Unlisted::LostAndFound(why) => {
                let lf = dir.join(LOST_FOUND);
                st.create_dir_all(&lf).map_err(|e| Error::io(&lf, e))?;
                let mut to = lf.join(&name);
                let mut i = 1;
                while st.exists(&to).map_err(|e| Error::io(&to, e))? {
                    to = lf.join(format!("{name}.{i}"));
                    i += 1;
                }
                log::warn!(
                    "moving {} to {}: {why}; the store does not use it",
                    p.display(),
                    to.display()
                );
                st.rename(&p, &to).map_err(|e| Error::io(&p, e))?;
                st.sync_dir(&lf).map_err(|e| Error::io(&lf, e))?;
            }
        }
    }
    st.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// The first bytes of `path` (up to a file header), or `None` if it does
/// not exist.
pub(crate) fn read_header(st: &dyn Storage, path: &Path) -> Result<Option<Vec<u8>>> {
    let f = match st.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let len = f.len().map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; (len.min(FILE_HEADER_LEN as u64)) as usize];
    f.read_at(0, &mut buf).map_err(|e| Error::io(path, e))?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemFs;

    /// Versions carry the epoch in 24 bits and every open takes a new one:
    /// at the last epoch, open refuses with a typed error and writes
    /// nothing (old code wrapped, and every later put became invisible).
    #[test]
    fn the_last_epoch_refuses_to_open_instead_of_wrapping() {
        let fs = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        let opts = || Options::default().storage(fs.clone());
        let db = opts().open(dir).unwrap();
        db.put("k", "v").unwrap();
        drop(db);
        // Two epochs before the last: this open takes the last one.
        let mut m = Manifest::load(fs.as_ref(), dir).unwrap().unwrap();
        m.epoch = max_epoch() - 1;
        m.generation += 1;
        m.store(fs.as_ref(), dir).unwrap();
        let opened = CheckpointFile::open(fs.as_ref(), dir, m.store).unwrap();
        opened
            .file
            .record(
                m.epoch,
                recovery::last_version(m.epoch),
                m.generation,
                &opened.logs,
            )
            .unwrap();
        drop(opened);
        let db = opts().open(dir).unwrap();
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
        db.put("k2", "v2").unwrap();
        drop(db);
        let before = fs.read_file(&dir.join(MANIFEST)).unwrap();
        match opts().open(dir) {
            Err(Error::Exhausted(what)) => assert_eq!(what, "epoch"),
            other => panic!("expected Exhausted, got {other:?}"),
        }
        assert_eq!(
            fs.read_file(&dir.join(MANIFEST)).unwrap(),
            before,
            "nothing written"
        );
        let m = Manifest::load(fs.as_ref(), dir).unwrap().unwrap();
        assert_eq!(m.epoch, max_epoch());
    }

    /// A creation cut short by a crash at any step leaves only empty
    /// leftovers, and the next open starts the creation over (it used to
    /// refuse the directory as not a store, forever).
    #[test]
    fn a_creation_interrupted_at_any_step_is_started_over() {
        use crate::vfs::{CrashMode, Fault};
        for step in 1..16 {
            for seed in 0..4 {
                let fs = Arc::new(MemFs::new());
                let dir = Path::new("/db");
                let opts = || Options::default().storage(fs.clone());
                fs.set_fault(Some(Fault::CrashAt(step)));
                let first = opts().open(dir);
                fs.set_fault(None);
                drop(first);
                fs.crash(CrashMode::Random { seed });
                let db = opts()
                    .open(dir)
                    .unwrap_or_else(|e| panic!("step {step}, seed {seed}: {e}"));
                db.put("k", "v").unwrap();
            }
        }
    }
}
