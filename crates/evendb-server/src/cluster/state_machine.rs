//! The state machine: the node's data store, to which committed commands
//! are applied in log order.
//!
//! Each entry is applied as one `WriteBatch` together with the applied
//! position (its log id and the membership, under the reserved key
//! `FF FF FF "evendb-raft/applied"`), so
//! after a crash the store's consistent prefix and its applied position
//! agree, and Raft re-applies exactly what the prefix lacks.
//!
//! Snapshots are the store's backup (`Db::backup`: tables hard-linked,
//! logs copied, one point in time) packed into one file, which openraft
//! streams to a follower in chunks; neither side holds it in memory. The
//! file: `EVSNAP1\n`, then per store file its name's length (u16 LE), the
//! name, its length (u64 LE) and its bytes. A follower unpacks it into a
//! new data directory, opens it and switches to it ([`DataStore`]).

use super::{
    applied_key, io_err, Request, Response, SetCond, StorageResult, TypeConfig, RESERVED_PREFIX,
};
use evendb::{Db, WriteBatch};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    Entry, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use parking_lot::{Mutex, RwLock};
use std::io::{Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8] = b"EVSNAP1\n";
/// The file naming the data directory in use.
const CURRENT: &str = "DATA";

/// A snapshot kept: its meta and its file.
type Kept = (SnapshotMeta<u64, super::ClusterNode>, PathBuf);

type Applied = (
    Option<LogId<u64>>,
    StoredMembership<u64, super::ClusterNode>,
);

/// The data store a node serves, which a snapshot may replace.
#[derive(Debug)]
pub struct DataStore {
    root: Option<PathBuf>,
    options: evendb::Options,
    db: RwLock<Db>,
}

impl DataStore {
    /// A store that is never replaced (a server without `--cluster`).
    pub fn fixed(db: Db) -> Arc<Self> {
        Arc::new(DataStore {
            root: None,
            options: evendb::Options::default(),
            db: RwLock::new(db),
        })
    }

    /// The data directory under `root` that `DATA` names (a new one
    /// otherwise), opened with `options`; other data directories (left by
    /// an interrupted snapshot install) are removed.
    ///
    /// # Errors
    /// The store cannot be opened, or `root` not read.
    pub fn open(root: &Path, options: evendb::Options) -> Result<Arc<Self>, String> {
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let current = std::fs::read_to_string(root.join(CURRENT))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "data-0".into());
        for entry in std::fs::read_dir(root)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("data-") && name != current {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let db = options
            .clone()
            .open(root.join(&current))
            .map_err(|e| format!("cannot open the data store: {e}"))?;
        Ok(Arc::new(DataStore {
            root: Some(root.to_path_buf()),
            options,
            db: RwLock::new(db),
        }))
    }

    /// The store now.
    pub fn db(&self) -> Db {
        self.db.read().clone()
    }
}

/// The state machine on a [`DataStore`].
#[derive(Debug, Clone)]
pub struct StateMachine {
    data: Arc<DataStore>,
    snapshots: PathBuf,
    /// The newest snapshot: its meta and file.
    current: Arc<Mutex<Option<Kept>>>,
    /// Snapshots built here and installed here (received from a leader).
    pub counts: Arc<SnapshotCounts>,
}

/// How many snapshots a node built, installed (received from a leader)
/// and sent (to a follower behind the log) since it started.
#[derive(Debug, Default)]
pub struct SnapshotCounts {
    pub built: std::sync::atomic::AtomicU64,
    pub installed: std::sync::atomic::AtomicU64,
    /// Counted when a follower accepted a snapshot's last chunk.
    pub sent: std::sync::atomic::AtomicU64,
    /// Bytes of snapshot chunks followers accepted.
    pub sent_bytes: std::sync::atomic::AtomicU64,
}

fn sm_err(e: impl std::fmt::Display) -> StorageError<u64> {
    StorageError::IO {
        source: StorageIOError::write_state_machine(&io_err(e)),
    }
}

fn read_applied(db: &Db) -> Result<Applied, String> {
    match db.get(applied_key()).map_err(|e| e.to_string())? {
        Some(v) => serde_json::from_slice(&v).map_err(|e| e.to_string()),
        None => Ok((None, StoredMembership::default())),
    }
}

/// The exclusive end of client keys.
fn client_end(hi: Option<Vec<u8>>, hi_included: bool) -> Bound<Vec<u8>> {
    match hi {
        Some(h) if h.as_slice() < RESERVED_PREFIX => {
            if hi_included {
                Bound::Included(h)
            } else {
                Bound::Excluded(h)
            }
        }
        _ => Bound::Excluded(RESERVED_PREFIX.to_vec()),
    }
}

/// Applies one request; its writes go in `batch` (range deletes directly).
fn apply_one(db: &Db, req: Request, batch: &mut WriteBatch) -> Result<Response, String> {
    let e = |e: evendb::Error| e.to_string();
    Ok(match req {
        Request::Set {
            key,
            value,
            cond,
            get,
        } => {
            let old = if cond != SetCond::Always || get {
                db.get(&key).map_err(e)?
            } else {
                None
            };
            let write = match cond {
                SetCond::Always => true,
                SetCond::Absent => old.is_none(),
                SetCond::Present => old.is_some(),
            };
            if write {
                batch.put(&key, &value);
            }
            match (get, write) {
                (true, _) => Response::Old(old),
                (false, true) => Response::Ok,
                (false, false) => Response::NotSet,
            }
        }
        Request::Del { keys } => {
            let mut seen = std::collections::HashSet::new();
            let mut n = 0;
            for k in keys {
                if seen.insert(k.clone()) && db.get(&k).map_err(e)?.is_some() {
                    batch.delete(&k);
                    n += 1;
                }
            }
            Response::Count(n)
        }
        Request::MSet { pairs } => {
            for (k, v) in pairs {
                batch.put(k, v);
            }
            Response::Ok
        }
        Request::DelRange {
            lo,
            lo_excluded,
            hi,
            hi_included,
        } => {
            if lo.as_slice() < RESERVED_PREFIX {
                let lo = if lo_excluded {
                    Bound::Excluded(lo)
                } else {
                    Bound::Included(lo)
                };
                db.delete_range((lo, client_end(hi, hi_included)))
                    .map_err(e)?;
            }
            Response::Ok
        }
    })
}

impl StateMachine {
    /// The state machine on `data`, keeping snapshots in `snapshots`.
    ///
    /// # Errors
    /// The snapshot directory cannot be made or read.
    pub fn new(data: Arc<DataStore>, snapshots: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(snapshots).map_err(|e| e.to_string())?;
        // The newest snapshot whose meta was written (after its file).
        let mut newest: Option<Kept> = None;
        for entry in std::fs::read_dir(snapshots)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let p = entry.path();
            if p.extension().is_some_and(|x| x == "meta") {
                let meta: Option<SnapshotMeta<u64, super::ClusterNode>> = std::fs::read(&p)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                if let Some(m) = meta {
                    if newest
                        .as_ref()
                        .is_none_or(|(n, _)| n.last_log_id < m.last_log_id)
                    {
                        newest = Some((m, p.with_extension("snap")));
                    }
                }
            }
        }
        Ok(StateMachine {
            data,
            snapshots: snapshots.to_path_buf(),
            current: Arc::new(Mutex::new(newest)),
            counts: Arc::default(),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(StateMachine) -> Result<T, String> + Send + 'static,
    ) -> StorageResult<T> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(me))
            .await
            .map_err(sm_err)?
            .map_err(sm_err)
    }

    /// Packs a backup of the store into a snapshot file.
    fn build(&self) -> Result<(SnapshotMeta<u64, super::ClusterNode>, PathBuf), String> {
        let id = format!(
            "{}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            std::process::id()
        );
        let tmp = self.snapshots.join(format!("backup-{id}"));
        let db = self.data.db();
        db.backup(&tmp).map_err(|e| e.to_string())?;
        let applied = {
            let copy = evendb::Options::default()
                .read_only(true)
                .open(&tmp)
                .map_err(|e| e.to_string())?;
            read_applied(&copy)?
        };
        let file = self.snapshots.join(format!("{id}.snap"));
        pack(&tmp, &file)?;
        let _ = std::fs::remove_dir_all(&tmp);
        let meta = SnapshotMeta {
            last_log_id: applied.0,
            last_membership: applied.1,
            snapshot_id: id,
        };
        self.keep(&meta, &file)?;
        Ok((meta, file))
    }

    /// Records `file` as the newest snapshot and removes older ones.
    fn keep(
        &self,
        meta: &SnapshotMeta<u64, super::ClusterNode>,
        file: &Path,
    ) -> Result<(), String> {
        let meta_path = file.with_extension("meta");
        std::fs::write(
            &meta_path,
            serde_json::to_vec(meta).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let old = self
            .current
            .lock()
            .replace((meta.clone(), file.to_path_buf()));
        if let Some((_, old_file)) = old.filter(|(_, f)| f != file) {
            let _ = std::fs::remove_file(old_file.with_extension("meta"));
            let _ = std::fs::remove_file(old_file);
        }
        Ok(())
    }

    /// Replaces the store with the snapshot in `file`.
    fn install(
        &self,
        meta: &SnapshotMeta<u64, super::ClusterNode>,
        file: &Path,
    ) -> Result<(), String> {
        let root = self
            .data
            .root
            .as_ref()
            .ok_or("a fixed store takes no snapshot")?;
        let name = format!("data-{}", meta.snapshot_id);
        let dir = root.join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        unpack(file, &dir)?;
        let db = self
            .data
            .options
            .clone()
            .open(&dir)
            .map_err(|e| format!("opening the installed snapshot: {e}"))?;
        // The new directory becomes current: written whole, then renamed.
        let tmp = root.join(format!("{CURRENT}.tmp"));
        std::fs::write(&tmp, &name).map_err(|e| e.to_string())?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, root.join(CURRENT)).map_err(|e| e.to_string())?;
        let old = std::mem::replace(&mut *self.data.db.write(), db);
        let old_dir = old.path().to_path_buf();
        drop(old);
        // Removed once nothing reads it any more (or at the next start).
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(5));
            let _ = std::fs::remove_dir_all(old_dir);
        });
        let kept = self.snapshots.join(format!("{}.snap", meta.snapshot_id));
        std::fs::rename(file, &kept).map_err(|e| e.to_string())?;
        self.keep(meta, &kept)
    }
}

fn pack(dir: &Path, file: &Path) -> Result<(), String> {
    let e = |e: std::io::Error| format!("packing a snapshot: {e}");
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).map_err(e)?);
    out.write_all(MAGIC).map_err(e)?;
    let mut names: Vec<_> = std::fs::read_dir(dir).map_err(e)?.flatten().collect();
    names.sort_by_key(std::fs::DirEntry::file_name);
    for entry in names {
        if !entry.file_type().map_err(e)?.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        let len = entry.metadata().map_err(e)?.len();
        out.write_all(&(name.len() as u16).to_le_bytes())
            .map_err(e)?;
        out.write_all(name.as_bytes()).map_err(e)?;
        out.write_all(&len.to_le_bytes()).map_err(e)?;
        let copied = std::io::copy(
            &mut std::fs::File::open(entry.path()).map_err(e)?.take(len),
            &mut out,
        )
        .map_err(e)?;
        if copied != len {
            return Err(format!("packing a snapshot: {name} shrank while read"));
        }
    }
    out.into_inner()
        .map_err(|x| e(x.into_error()))?
        .sync_all()
        .map_err(e)
}

fn unpack(file: &Path, dir: &Path) -> Result<(), String> {
    let e = |e: std::io::Error| format!("unpacking a snapshot: {e}");
    let mut input = std::io::BufReader::new(std::fs::File::open(file).map_err(e)?);
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic).map_err(e)?;
    if magic != MAGIC {
        return Err("unpacking a snapshot: not a snapshot file".into());
    }
    std::fs::create_dir_all(dir).map_err(e)?;
    loop {
        let mut n = [0u8; 2];
        match input.read_exact(&mut n) {
            Ok(()) => {}
            Err(x) if x.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(x) => return Err(e(x)),
        }
        let mut name = vec![0u8; u16::from_le_bytes(n) as usize];
        input.read_exact(&mut name).map_err(e)?;
        let name =
            String::from_utf8(name).map_err(|_| "unpacking a snapshot: bad name".to_string())?;
        if name.contains('/') || name.contains("..") {
            return Err(format!("unpacking a snapshot: bad name {name:?}"));
        }
        let mut len = [0u8; 8];
        input.read_exact(&mut len).map_err(e)?;
        let len = u64::from_le_bytes(len);
        let mut out = std::fs::File::create(dir.join(&name)).map_err(e)?;
        let copied = std::io::copy(&mut (&mut input).take(len), &mut out).map_err(e)?;
        if copied != len {
            return Err(format!("unpacking a snapshot: {name} is cut short"));
        }
        out.sync_all().map_err(e)?;
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(e)
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let (meta, file) = self.blocking(|sm| sm.build()).await?;
        self.counts
            .built
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let f = tokio::fs::File::open(&file).await.map_err(sm_err)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(f),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> StorageResult<Applied> {
        self.blocking(|sm| read_applied(&sm.data.db())).await
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Response>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        self.blocking(move |sm| {
            let db = sm.data.db();
            let (_, mut membership) = read_applied(&db)?;
            let mut out = Vec::with_capacity(entries.len());
            for entry in entries {
                let mut batch = WriteBatch::new();
                let resp = match entry.payload {
                    EntryPayload::Blank => Response::Ok,
                    EntryPayload::Normal(req) => apply_one(&db, req, &mut batch)?,
                    EntryPayload::Membership(m) => {
                        membership = StoredMembership::new(Some(entry.log_id), m);
                        Response::Ok
                    }
                };
                let applied: Applied = (Some(entry.log_id), membership.clone());
                batch.put(
                    applied_key(),
                    serde_json::to_vec(&applied).map_err(|e| e.to_string())?,
                );
                db.write(&batch).map_err(|e| e.to_string())?;
                out.push(resp);
            }
            Ok(out)
        })
        .await
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<tokio::fs::File>> {
        let path = self.snapshots.join("receiving.snap");
        let f = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .map_err(sm_err)?;
        Ok(Box::new(f))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, super::ClusterNode>,
        snapshot: Box<tokio::fs::File>,
    ) -> StorageResult<()> {
        snapshot.sync_all().await.map_err(sm_err)?;
        drop(snapshot);
        let meta = meta.clone();
        self.blocking(move |sm| {
            let file = sm.snapshots.join("receiving.snap");
            sm.install(&meta, &file)?;
            sm.counts
                .installed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
        .await
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let current = self.current.lock().clone();
        match current {
            Some((meta, file)) => match tokio::fs::File::open(&file).await {
                Ok(f) => Ok(Some(Snapshot {
                    meta,
                    snapshot: Box::new(f),
                })),
                Err(_) => Ok(None),
            },
            None => Ok(None),
        }
    }
}
