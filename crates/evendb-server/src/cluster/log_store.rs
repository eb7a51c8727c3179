//! The Raft log in an evendb store of its own, opened with `Sync`
//! durability: every change below is one `WriteBatch`, durable when it
//! returns (one journaled commit).
//!
//! Keys: `l` + the entry's index (8 bytes, big-endian, so that key order is
//! log order) → the entry; `v` → the vote; `c` → the last committed log
//! id; `p` → the last purged log id. Values are JSON.

use super::{io_err, StorageResult, TypeConfig};
use evendb::{Db, WriteBatch};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError, Vote};
use std::ops::{Bound, RangeBounds};

fn entry_key(index: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'l';
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

/// The log store; clones share the store.
#[derive(Debug, Clone)]
pub struct LogStore {
    db: Db,
}

impl LogStore {
    /// Opens (or creates) the log store at `dir`.
    ///
    /// # Errors
    /// The store cannot be opened.
    pub fn open(dir: &std::path::Path) -> evendb::Result<Self> {
        let db = evendb::Options::default()
            .durability(evendb::Durability::Sync)
            .memory_budget(64 << 20)
            .open(dir)?;
        Ok(LogStore { db })
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
        self.blocking(
            move |db| {
                db.scan((Bound::Included(entry_key(lo).to_vec()), hi))
                    .map(|r| {
                        let (_, v) = r.map_err(io_err)?;
                        serde_json::from_slice(&v).map_err(io_err)
                    })
                    .collect()
            },
            |e| StorageIOError::read_logs(e),
        )
        .await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        self.blocking(
            |db| {
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
                    last_log_id: last,
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
        self.blocking(
            move |db| Self::put_json(&db, b"v", &vote),
            |e| StorageIOError::write_vote(e),
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

    async fn save_committed(&mut self, committed: Option<LogId<u64>>) -> StorageResult<()> {
        self.blocking(
            move |db| Self::put_json(&db, b"c", &committed),
            |e| StorageIOError::write(e),
        )
        .await
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<u64>>> {
        self.blocking(
            |db| Ok(Self::read_json::<Option<LogId<u64>>>(&db, b"c")?.flatten()),
            |e| StorageIOError::read(e),
        )
        .await
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let result = self
            .blocking(
                move |db| {
                    let mut batch = WriteBatch::new();
                    for e in &entries {
                        let v = serde_json::to_vec(e).map_err(io_err)?;
                        batch.put(entry_key(e.log_id.index), v);
                    }
                    db.write(&batch).map_err(io_err)
                },
                |e| StorageIOError::write_logs(e),
            )
            .await;
        // Durable when `write` returns (`Sync` store).
        callback.log_io_completed(result.as_ref().map(|_| ()).map_err(io_err));
        result
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        self.blocking(
            move |db| Self::delete_entries(&db, (Bound::Included(log_id.index), Bound::Unbounded)),
            |e| StorageIOError::write_logs(e),
        )
        .await
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> StorageResult<()> {
        self.blocking(
            move |db| {
                // The purge point first: a crash between the two leaves
                // entries below it, which are never read again.
                Self::put_json(&db, b"p", &log_id)?;
                Self::delete_entries(&db, (Bound::Unbounded, Bound::Included(log_id.index)))
            },
            |e| StorageIOError::write_logs(e),
        )
        .await
    }
}
