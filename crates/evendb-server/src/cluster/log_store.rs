//! The Raft log in an evendb store of its own, opened with `Sync`
//! durability: every change below is one `WriteBatch`, durable when it
//! returns (one journaled commit).
//!
//! Writes go through one writer thread, in the order they were asked for.
//! An append returns at once (its entries readable from memory until they
//! are on disk) and Raft is told when they are durable; appends queued
//! while the writer was busy are written together, one durable commit for
//! all of them, so a busy leader or follower pays one fsync per group.
//!
//! Keys: `l` + the entry's index (8 bytes, big-endian, so that key order is
//! log order) → the entry; `v` → the vote; `p` → the last purged log id;
//! `c` → a committed log id. Values are JSON.
//!
//! The commit index is kept in memory when Raft saves it (for `INFO`) and
//! written only with the next append, in the same batch: a write of its
//! own would cost an fsync each time it moves. What is on disk is thus a
//! committed entry at most one append old, never past the entries on disk
//! (an entry at or below a commit index is never truncated): at a start,
//! Raft re-applies up to it without waiting for a leader.

use super::{io_err, StorageResult, TypeConfig};
use evendb::{Db, WriteBatch};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError, Vote};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::{mpsc, Arc};

/// A write other than an append, run on the writer thread.
type Change = Box<dyn FnOnce(&Db) -> Result<(), std::io::Error> + Send>;

/// Work for the writer thread.
enum Job {
    Append(Vec<Entry<TypeConfig>>, LogFlushed<TypeConfig>),
    Run(
        Change,
        tokio::sync::oneshot::Sender<Result<(), std::io::Error>>,
    ),
}

/// Entries appended but not yet on disk, by index.
type Pending = Arc<Mutex<BTreeMap<u64, Entry<TypeConfig>>>>;

/// The newest commit index Raft saved (in memory; see the module docs).
pub type Committed = Arc<Mutex<Option<LogId<u64>>>>;

/// The writer thread: runs jobs in order, appends queued together in one
/// batch, with the commit index if it moved.
fn writer(db: Db, pending: Pending, committed: Committed, jobs: mpsc::Receiver<Job>) {
    let mut next = None;
    // The commit index on disk.
    let mut saved: Option<LogId<u64>> = LogStore::read_json(&db, b"c").ok().flatten();
    loop {
        let Some(job) = next.take().or_else(|| jobs.recv().ok()) else {
            return;
        };
        match job {
            Job::Run(f, done) => {
                let _ = done.send(f(&db));
            }
            Job::Append(entries, callback) => {
                let mut group = vec![(entries, callback)];
                while let Ok(j) = jobs.try_recv() {
                    match j {
                        Job::Append(e, c) => group.push((e, c)),
                        other => {
                            next = Some(other);
                            break;
                        }
                    }
                }
                let mut batch = WriteBatch::new();
                let mut written = Vec::new();
                let mut encoded = Ok(());
                for e in group.iter().flat_map(|(es, _)| es) {
                    match serde_json::to_vec(e) {
                        Ok(v) => batch.put(entry_key(e.log_id.index), v),
                        Err(x) => encoded = Err(io_err(x)),
                    }
                    written.push(e.log_id);
                }
                // A committed id not past this batch's last entry: the
                // commit index itself, or that entry (committed too).
                let last = written.iter().max_by_key(|id| id.index).copied();
                let commit =
                    (*committed.lock())
                        .zip(last)
                        .map(|(c, last)| if c.index <= last.index { c } else { last });
                if commit > saved {
                    match serde_json::to_vec(&commit) {
                        Ok(v) => batch.put(b"c", v),
                        Err(x) => encoded = Err(io_err(x)),
                    }
                }
                let result = encoded.and_then(|()| db.write(&batch).map_err(io_err));
                if result.is_ok() && commit > saved {
                    saved = commit;
                }
                if result.is_ok() {
                    // On disk now: readers find them there.
                    let mut p = pending.lock();
                    for id in written {
                        if p.get(&id.index).is_some_and(|e| e.log_id == id) {
                            p.remove(&id.index);
                        }
                    }
                }
                for (_, callback) in group {
                    callback.log_io_completed(result.as_ref().map(|_| ()).map_err(io_err));
                }
            }
        }
    }
}

fn entry_key(index: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'l';
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

/// The log store; clones share the store and its writer.
#[derive(Clone)]
pub struct LogStore {
    db: Db,
    pending: Pending,
    committed: Committed,
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogStore({})", self.db.path().display())
    }
}

impl LogStore {
    /// Opens (or creates) the log store at `dir`, on the storage of
    /// `options` (its durability is always `Sync`, its budget 64 MiB).
    ///
    /// # Errors
    /// The store cannot be opened.
    pub fn open(dir: &std::path::Path, options: evendb::Options) -> evendb::Result<Self> {
        let db = options
            .durability(evendb::Durability::Sync)
            .memory_budget(64 << 20)
            .open(dir)?;
        let pending = Pending::default();
        let committed: Committed =
            Arc::new(Mutex::new(Self::read_json(&db, b"c").map_err(|e| {
                evendb::Error::Io {
                    path: dir.to_path_buf(),
                    source: e,
                }
            })?));
        let (jobs, rx) = mpsc::channel();
        let (d, p, c) = (db.clone(), pending.clone(), committed.clone());
        std::thread::Builder::new()
            .name("evendb-raft-log".into())
            .spawn(move || writer(d, p, c, rx))
            .map_err(|e| evendb::Error::Io {
                path: dir.to_path_buf(),
                source: e,
            })?;
        Ok(LogStore {
            db,
            pending,
            committed,
            jobs,
        })
    }

    /// The commit index as Raft last saved it (or as read at open).
    pub fn committed(&self) -> Committed {
        self.committed.clone()
    }

    /// Runs `f` on the writer thread, after every write asked for before.
    async fn write(
        &self,
        f: impl FnOnce(&Db) -> Result<(), std::io::Error> + Send + 'static,
        err: fn(&std::io::Error) -> StorageIOError<u64>,
    ) -> StorageResult<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let fail = |e: std::io::Error| StorageError::IO { source: err(&e) };
        self.jobs
            .send(Job::Run(Box::new(f), tx))
            .map_err(|_| fail(io_err("the log writer stopped")))?;
        rx.await
            .map_err(|_| fail(io_err("the log writer stopped")))?
            .map_err(fail)
    }

    /// Runs `f` on the blocking pool (store calls may wait for the disk).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(Db) -> Result<T, std::io::Error> + Send + 'static,
        err: fn(&std::io::Error) -> StorageIOError<u64>,
    ) -> StorageResult<T> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(db))
            .await
            .map_err(io_err)
            .and_then(|r| r)
            .map_err(|e| StorageError::IO { source: err(&e) })
    }

    fn read_json<T: serde::de::DeserializeOwned>(
        db: &Db,
        key: &[u8],
    ) -> Result<Option<T>, std::io::Error> {
        match db.get(key).map_err(io_err)? {
            Some(v) => serde_json::from_slice(&v).map(Some).map_err(io_err),
            None => Ok(None),
        }
    }

    /// Deletes the entries in `range` in one batch (key by key: a range
    /// delete would leave a tombstone that every later read checks).
    fn delete_entries(db: &Db, range: (Bound<u64>, Bound<u64>)) -> Result<(), std::io::Error> {
        let key = |b: Bound<u64>, unbounded: &[u8]| match b {
            Bound::Included(i) => Bound::Included(entry_key(i).to_vec()),
            Bound::Excluded(i) => Bound::Excluded(entry_key(i).to_vec()),
            Bound::Unbounded => Bound::Included(unbounded.to_vec()),
        };
        let lo = key(range.0, b"l");
        let hi = match key(range.1, b"m") {
            Bound::Included(k) if k == b"m" => Bound::Excluded(k),
            b => b,
        };
        let mut batch = WriteBatch::new();
        for r in db.scan((lo, hi)) {
            batch.delete(r.map_err(io_err)?.0);
        }
        if !batch.is_empty() {
            db.write(&batch).map_err(io_err)?;
        }
        Ok(())
    }

    fn put_json<T: serde::Serialize>(db: &Db, key: &[u8], value: &T) -> Result<(), std::io::Error> {
        let bytes = serde_json::to_vec(value).map_err(io_err)?;
        db.put(key, bytes).map_err(io_err)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + Send>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let lo = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let hi = match range.end_bound() {
            Bound::Included(&i) => Bound::Included(entry_key(i).to_vec()),
            Bound::Excluded(&i) => Bound::Excluded(entry_key(i).to_vec()),
            Bound::Unbounded => Bound::Excluded(b"m".to_vec()),
        };
        // Pending entries first: one the writer removes meanwhile is in the
        // store by then.
        let end = range.end_bound().cloned();
        let pending: Vec<Entry<TypeConfig>> = self
            .pending
            .lock()
            .range((Bound::Included(lo), end))
            .map(|(_, e)| e.clone())
            .collect();
        self.blocking(
            move |db| {
                let mut out: BTreeMap<u64, Entry<TypeConfig>> = BTreeMap::new();
                for r in db.scan((Bound::Included(entry_key(lo).to_vec()), hi)) {
                    let (_, v) = r.map_err(io_err)?;
                    let e: Entry<TypeConfig> = serde_json::from_slice(&v).map_err(io_err)?;
                    out.insert(e.log_id.index, e);
                }
                for e in pending {
                    out.insert(e.log_id.index, e);
                }
                Ok(out.into_values().collect())
            },
            |e| StorageIOError::read_logs(e),
        )
        .await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let newest_pending = self.pending.lock().values().next_back().map(|e| e.log_id);
        self.blocking(
            move |db| {
                let purged: Option<LogId<u64>> = Self::read_json(&db, b"p")?;
                let last = match db.scan(&b"l"[..]..&b"m"[..]).next_back() {
                    Some(r) => {
                        let (_, v) = r.map_err(io_err)?;
                        let e: Entry<TypeConfig> = serde_json::from_slice(&v).map_err(io_err)?;
                        Some(e.log_id)
                    }
                    None => purged,
                };
                Ok(LogState {
                    last_purged_log_id: purged,
                    last_log_id: newest_pending.max(last),
                })
            },
            |e| StorageIOError::read_logs(e),
        )
        .await
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> StorageResult<()> {
        let vote = *vote;
        self.write(
            move |db| Self::put_json(db, b"v", &vote),
            |e| StorageIOError::write_vote(e),
        )
        .await
    }

    async fn save_committed(&mut self, committed: Option<LogId<u64>>) -> StorageResult<()> {
        // Written with the next append (module docs): no I/O here, where
        // Raft waits for it before applying.
        let mut c = self.committed.lock();
        *c = (*c).max(committed);
        Ok(())
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<u64>>> {
        self.blocking(
            |db| Self::read_json(&db, b"c"),
            |e| StorageIOError::read_logs(e),
        )
        .await
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<u64>>> {
        self.blocking(
            |db| Self::read_json(&db, b"v"),
            |e| StorageIOError::read_vote(e),
        )
        .await
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        if entries.is_empty() {
            // A heartbeat: nothing to make durable (no fsync).
            callback.log_io_completed(Ok(()));
            return Ok(());
        }
        {
            let mut p = self.pending.lock();
            for e in &entries {
                p.insert(e.log_id.index, e.clone());
            }
        }
        // The writer calls back once they are durable.
        self.jobs
            .send(Job::Append(entries, callback))
            .map_err(|_| StorageError::IO {
                source: StorageIOError::write_logs(&io_err("the log writer stopped")),
            })
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        // Gone for readers at once; from disk after the appends queued
        // before (which may still write some of them).
        self.pending.lock().split_off(&log_id.index);
        self.write(
            move |db| Self::delete_entries(db, (Bound::Included(log_id.index), Bound::Unbounded)),
            |e| StorageIOError::write_logs(e),
        )
        .await
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        self.write(
            move |db| {
                // The purge point first: a crash between the two leaves
                // entries below it, which are never read again.
                Self::put_json(db, b"p", &log_id)?;
                Self::delete_entries(db, (Bound::Unbounded, Bound::Included(log_id.index)))
            },
            |e| StorageIOError::write_logs(e),
        )
        .await
    }
}
