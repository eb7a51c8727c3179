//! Opening a store: refuse what is not ours, lock, read the manifest, start
//! a new epoch, clear the leftovers of a crash, and build the chunk index.
//! Funks open lazily, on first use, so opening does not read logs.

use super::{checkpointer, spawn, Db, DbInner, Owner, Published};
use crate::cache::budget::MemoryBudget;
use crate::cache::munks::MunkCache;
use crate::cache::row::RowCache;
use crate::chunk::{Chunk, Index};
use crate::error::{Error, Result};
use crate::funk::log::{LogConfig, LogSegment};
use crate::funk::FunkFiles;
use crate::maintenance::Maintenance;
use crate::manifest::{ChunkRecord, Manifest, MANIFEST, MANIFEST_TMP};
use crate::options::{Durability, Options};
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

impl Db {
    pub(crate) fn open_with(dir: &Path, opts: Options) -> Result<Db> {
        let storage = opts.storage.clone();
        let st = storage.as_ref();
        let exists = st.exists(dir).map_err(|e| Error::io(dir, e))?;
        if !exists {
            if !opts.create_if_missing {
                return Err(Error::io(
                    dir,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
                ));
            }
            st.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
        let has_manifest = names.iter().any(|n| n == MANIFEST);
        let own = |n: &String| {
            n == LOCK_FILE || n == MANIFEST_TMP || n == CHECKPOINT || is_engine_file(n).is_some()
        };
        if !has_manifest && (!opts.create_if_missing || !names.iter().all(own)) {
            return Err(Error::NotAStore(dir.to_path_buf()));
        }
        let lock = st
            .lock(&dir.join(LOCK_FILE))
            .map_err(|e| Error::io(dir.join(LOCK_FILE), e))?
            .ok_or_else(|| Error::Locked(dir.to_path_buf()))?;

        let budget = Arc::new(MemoryBudget::new(opts.memory_budget));
        let log_config = LogConfig {
            part_bytes: (opts.max_log_size / opts.log_parts as u64).max(1024),
            budget: budget.clone(),
        };
        let has_checkpoint = names.iter().any(|n| n == CHECKPOINT);
        let loaded = Manifest::load(st, dir)?;
        // Format 2 stores keep their checkpoints in CHECKPOINT from their
        // creation on; without it the crash point of the last epoch is
        // unknown, and guessing could show a state that never existed.
        if loaded.as_ref().is_some_and(|m| m.read_format >= 2) && !has_checkpoint {
            return Err(Error::MissingFile(dir.join(CHECKPOINT)));
        }
        let (checkpoints, newest, invalid_slots) = CheckpointFile::open(st, dir)?;
        let mut manifest = match loaded {
            Some(mut m) => {
                // Recovery (see `recovery`): if the epoch that ran last did
                // not end durable whole, cut it at its last checkpoint.
                // Format 1 had no asynchronous recovery: its epochs are
                // whole.
                if m.read_format >= 2 {
                    if let Some(keep) = recovery::cut_after(m.epoch, newest) {
                        log::info!(
                            "{}: epoch {} ended in a crash; keeping versions up to {keep:#x}",
                            dir.display(),
                            m.epoch
                        );
                        m.cuts.push((m.epoch, keep));
                    }
                }
                m
            }
            None => {
                if !opts.create_if_missing {
                    return Err(Error::NotAStore(dir.to_path_buf()));
                }
                // Only evendb's own leftovers of an interrupted creation can
                // be here: no put was acknowledged without a manifest.
                LogSegment::create(st, dir, 1, &log_config)?;
                Manifest {
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
                    read_format: crate::manifest::MANIFEST_FORMAT_VERSION,
                }
            }
        };
        // A new epoch: every version written from now on is larger than any
        // version on disk. It is durable, with the recovery table, before
        // the first put: this store is the commit point of recovery.
        crate::failpoint::failpoint!(opts opts, dir, "recovery.before_manifest");
        manifest.epoch += 1;
        manifest.store(st, dir)?;
        crate::failpoint::failpoint!(opts opts, dir, "recovery.after_manifest");
        let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
        remove_orphans(st, dir, &manifest, &names)?;
        crate::failpoint::failpoint!(opts opts, dir, "recovery.after_orphans");
        let recovery_table = RecoveryTable::from_cuts(manifest.cuts.clone());
        let epoch = manifest.epoch;

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
            checkpoints: crate::recovery::Checkpoints::new(checkpoints, epoch),
            index: Index::new(chunks),
            published: Mutex::new(Published { manifest }),
            counters: Counters::default(),
            row_cache: RowCache::new(row_cache_bytes, 3, budget.clone()),
            munks: MunkCache::default(),
            budget,
            log_config,
            open_files: crate::funk::OpenFiles::default(),
            maintenance: Maintenance::default(),
            trimmer: crate::cache::trim::Trimmer::new(opts.trim_freed_memory),
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
        inner.start_checkpoints()?;
        crate::stats::add(
            &inner.counters.local().checkpoint_slots_invalid,
            invalid_slots,
        );
        let mut threads = Vec::new();
        for i in 0..inner.opts.maintenance_threads {
            let w = inner.clone();
            threads.push(spawn(format!("evendb-maint-{i}"), dir, move || {
                crate::maintenance::worker(&w)
            })?);
        }
        if let Durability::Buffered { sync_interval } = inner.opts.durability {
            let w = inner.clone();
            threads.push(spawn("evendb-checkpoint".into(), dir, move || {
                checkpointer(&w, sync_interval)
            })?);
        }
        Ok(Db {
            _owner: Arc::new(Owner {
                inner: inner.clone(),
                threads: Mutex::new(threads),
            }),
            inner,
        })
    }
}

/// Removes files of a crashed rebuild, split or merge: engine-named files
/// the manifest does not refer to. Other files are left alone.
fn remove_orphans(st: &dyn Storage, dir: &Path, m: &Manifest, names: &[String]) -> Result<()> {
    let live: HashSet<u64> = m.live_files().collect();
    let mut removed = false;
    for name in names {
        let orphan = match is_engine_file(name) {
            Some(n) => !live.contains(&n),
            None => name == MANIFEST_TMP,
        };
        if orphan {
            let p = dir.join(name);
            log::info!("removing orphan {}", p.display());
            st.remove(&p).map_err(|e| Error::io(&p, e))?;
            removed = true;
        }
    }
    if removed {
        st.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}
