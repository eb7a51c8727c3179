//! An in-memory [`Storage`] that can lose what was not synced.
//!
//! Invariants: all state sits behind one mutex (`State`). Each file keeps its
//! `durable` bytes (as of its last sync) and the `pending` operations since;
//! the namespace keeps `durable_entries` (as of the last directory sync) and
//! the `pending_dir` operations since. A crash rebuilds `current` from the
//! durable state plus whatever prefix of the pending operations the
//! [`CrashMode`] keeps, and bumps the generation so every handle opened before
//! the crash fails from then on, like the file descriptors of a dead process.

use super::{Storage, StorageFile, StorageLock};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a simulated crash keeps of the writes that were not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Exactly what was synced survives: file bytes up to each file's last
    /// sync, directory entries up to each directory's last sync.
    DropUnsynced,
    /// Each file independently keeps a random prefix of its unsynced writes,
    /// the last kept write possibly torn; the namespace keeps a random prefix
    /// of its unsynced entry changes. Reproducible from `seed`.
    Random {
        /// Seed of the choices.
        seed: u64,
    },
}

/// An injected I/O fault. Operations that change state (create, write, sync,
/// truncate, rename, remove, directory sync) are counted from 1 after
/// [`MemFs::set_fault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The N-th counted operation and every operation after it fail, reads
    /// included, as if the process had died there; call [`MemFs::crash`] next.
    CrashAt(u64),
    /// Only the N-th counted operation fails.
    FailOnce(u64),
    /// The N-th counted operation and every counted operation after it fail.
    FailFrom(u64),
}

#[derive(Debug, Clone)]
enum FileOp {
    Write(u64, Vec<u8>),
    Truncate(u64),
}

#[derive(Debug, Default)]
struct FileData {
    current: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<FileOp>,
}

#[derive(Debug, Clone)]
enum DirOp {
    Link(PathBuf, u64),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf, u64),
}

impl DirOp {
    fn parent(&self) -> Option<&Path> {
        match self {
            DirOp::Link(p, _) | DirOp::Unlink(p) | DirOp::Rename(_, p, _) => p.parent(),
        }
    }

    fn apply(&self, entries: &mut BTreeMap<PathBuf, u64>) {
        match self {
            DirOp::Link(p, id) => {
                entries.insert(p.clone(), *id);
            }
            DirOp::Unlink(p) => {
                entries.remove(p);
            }
            DirOp::Rename(from, to, id) => {
                entries.remove(from);
                entries.insert(to.clone(), *id);
            }
        }
    }
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    next_id: u64,
    files: HashMap<u64, FileData>,
    entries: BTreeMap<PathBuf, u64>,
    durable_entries: BTreeMap<PathBuf, u64>,
    pending_dir: Vec<DirOp>,
    dirs: BTreeSet<PathBuf>,
    locks: HashSet<PathBuf>,
    counted_ops: u64,
    /// Bytes read from files since creation.
    bytes_read: u64,
    /// Bytes `drop_cached` was asked to let go, and of them those not
    /// synced as they are (a page cache would keep them dirty).
    cache_dropped: u64,
    cache_dropped_unsynced: u64,
    fault: Option<Fault>,
    dead: bool,
    /// Bytes the linked files may hold in all (`None`: no limit).
    capacity: Option<u64>,
    /// [`Storage::open_direct`] answers `None`, as for a file system
    /// without direct writes.
    no_direct_writes: bool,
}

/// The alignment [`MemFs`] demands of direct writes, as a disk of 512-byte
/// sectors would.
const DIRECT_ALIGN: usize = 512;

fn injected() -> io::Error {
    io::Error::other("injected I/O fault")
}

impl State {
    /// Counts one state-changing operation and decides whether it fails.
    fn count_op(&mut self) -> io::Result<()> {
        if self.dead {
            return Err(injected());
        }
        self.counted_ops += 1;
        match self.fault {
            Some(Fault::CrashAt(n)) if self.counted_ops >= n => {
                self.dead = true;
                Err(injected())
            }
            Some(Fault::FailOnce(n)) if self.counted_ops == n => Err(injected()),
            Some(Fault::FailFrom(n)) if self.counted_ops >= n => Err(injected()),
            _ => Ok(()),
        }
    }

    fn check_alive(&self) -> io::Result<()> {
        if self.dead {
            Err(injected())
        } else {
            Ok(())
        }
    }

    /// `ENOSPC` if growing file `id` to `new_len` bytes would pass the
    /// capacity.
    fn check_room(&self, id: u64, new_len: u64) -> io::Result<()> {
        let Some(capacity) = self.capacity else {
            return Ok(());
        };
        let linked: HashSet<u64> = self.entries.values().copied().collect();
        let used: u64 = linked
            .iter()
            .filter(|&&f| f != id)
            .filter_map(|f| self.files.get(f))
            .map(|f| f.current.len() as u64)
            .sum();
        let own = self.files.get(&id).map_or(0, |f| f.current.len() as u64);
        if new_len > own && used + new_len > capacity {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        Ok(())
    }

    fn file(&mut self, id: u64) -> io::Result<&mut FileData> {
        self.files
            .get_mut(&id)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "file vanished"))
    }
}

/// In-memory [`Storage`] for tests, with crash simulation and fault injection.
///
/// Clones share the same files, like two processes sharing one disk.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct MemFile {
    state: Arc<Mutex<State>>,
    id: u64,
    generation: u64,
    /// A direct-write handle: writes must be aligned to this.
    align: Option<usize>,
}

#[derive(Debug)]
struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    generation: u64,
}

impl StorageLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        if st.generation == self.generation {
            st.locks.remove(&self.path);
        }
    }
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms `fault` and restarts the operation count.
    pub fn set_fault(&self, fault: Option<Fault>) {
        let mut st = self.state.lock();
        st.fault = fault;
        st.counted_ops = 0;
    }

    /// Whether [`Storage::open_direct`] gives direct-write handles (the
    /// default), which refuse writes not aligned to 512 bytes with
    /// `EINVAL` as `O_DIRECT` does, or `None` as a file system without
    /// direct writes would.
    pub fn set_direct_writes(&self, on: bool) {
        self.state.lock().no_direct_writes = !on;
    }

    /// Limits the bytes all files may hold (`None`: no limit): a write
    /// past it fails with `ENOSPC`, as on a full disk. Raising it frees
    /// the disk.
    pub fn set_capacity(&self, capacity: Option<u64>) {
        self.state.lock().capacity = capacity;
    }

    /// State-changing operations counted since the last [`MemFs::set_fault`].
    pub fn counted_ops(&self) -> u64 {
        self.state.lock().counted_ops
    }

    /// Bytes read from files so far (for tests of what a read costs).
    pub fn bytes_read(&self) -> u64 {
        self.state.lock().bytes_read
    }

    /// Bytes files were asked to drop from the page cache so far
    /// (`StorageFile::drop_cached`), and of them those whose file's
    /// contents there were not synced as they are (for tests).
    pub fn cache_dropped(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.cache_dropped, st.cache_dropped_unsynced)
    }

    /// Simulates a power loss: keeps what `mode` says of unsynced data,
    /// invalidates every open handle and lock, and clears any fault.
    pub fn crash(&self, mode: CrashMode) {
        let mut st = self.state.lock();
        let mut rng = match mode {
            CrashMode::DropUnsynced => None,
            CrashMode::Random { seed } => Some(fastrand::Rng::with_seed(seed)),
        };
        // Namespace: durable entries plus a prefix of the pending changes.
        let pending_dir = std::mem::take(&mut st.pending_dir);
        let keep_dir = match rng.as_mut() {
            Some(r) => r.usize(0..=pending_dir.len()),
            None => 0,
        };
        let mut entries = std::mem::take(&mut st.durable_entries);
        for op in &pending_dir[..keep_dir] {
            op.apply(&mut entries);
        }
        // File contents: durable bytes plus a prefix of the pending writes.
        let ids: Vec<u64> = st.files.keys().copied().collect();
        for id in ids {
            let Some(file) = st.files.get_mut(&id) else {
                continue;
            };
            let pending = std::mem::take(&mut file.pending);
            let mut data = std::mem::take(&mut file.durable);
            if let Some(r) = rng.as_mut() {
                let keep = r.usize(0..=pending.len());
                for (i, op) in pending.iter().enumerate().take(keep + 1) {
                    match op {
                        FileOp::Truncate(len) if i < keep => data.truncate(*len as usize),
                        FileOp::Write(off, bytes) => {
                            // The write after the kept prefix may land torn.
                            let n = if i < keep {
                                bytes.len()
                            } else {
                                r.usize(0..=bytes.len())
                            };
                            write_into(&mut data, *off, &bytes[..n]);
                        }
                        FileOp::Truncate(_) => {}
                    }
                }
            }
            file.current = data.clone();
            file.durable = data;
        }
        let live: HashSet<u64> = entries.values().copied().collect();
        st.files.retain(|id, _| live.contains(id));
        st.entries = entries.clone();
        st.durable_entries = entries;
        st.generation += 1;
        st.locks.clear();
        st.fault = None;
        st.dead = false;
    }

    /// The current bytes of `path` (for tests that corrupt files).
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.state.lock();
        let id = st.entries.get(path)?;
        st.files.get(id).map(|f| f.current.clone())
    }

    /// Overwrites the bytes of `path` durably, bypassing fault injection
    /// (for tests that corrupt files). Returns false if there is no such file.
    pub fn write_file(&self, path: &Path, data: &[u8]) -> bool {
        let mut st = self.state.lock();
        let Some(&id) = st.entries.get(path) else {
            return false;
        };
        let Some(file) = st.files.get_mut(&id) else {
            return false;
        };
        file.current = data.to_vec();
        file.durable = data.to_vec();
        file.pending.clear();
        true
    }

    fn handle(&self, id: u64, generation: u64) -> Arc<dyn StorageFile> {
        self.handle_aligned(id, generation, None)
    }

    fn handle_aligned(
        &self,
        id: u64,
        generation: u64,
        align: Option<usize>,
    ) -> Arc<dyn StorageFile> {
        Arc::new(MemFile {
            state: self.state.clone(),
            id,
            generation,
            align,
        })
    }

    /// Opens the existing file `path`; `align`: a direct-write handle.
    fn open_aligned(&self, path: &Path, align: Option<usize>) -> io::Result<Arc<dyn StorageFile>> {
        let st = self.state.lock();
        st.check_alive()?;
        let id = *st.entries.get(path).ok_or_else(|| not_found(path))?;
        let generation = st.generation;
        drop(st);
        Ok(self.handle_aligned(id, generation, align))
    }
}

fn write_into(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let off = offset as usize;
    if data.len() < off + bytes.len() {
        data.resize(off + bytes.len(), 0);
    }
    data[off..off + bytes.len()].copy_from_slice(bytes);
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

impl Storage for MemFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.check_alive()?;
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() {
                break;
            }
            st.dirs.insert(p.to_path_buf());
            d = p.parent();
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let st = self.state.lock();
        st.check_alive()?;
        if !st.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut names: Vec<String> = st
            .entries
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let st = self.state.lock();
        st.check_alive()?;
        Ok(st.entries.contains_key(path) || st.dirs.contains(path))
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let mut st = self.state.lock();
        st.count_op()?;
        match path.parent() {
            Some(parent) if st.dirs.contains(parent) => {}
            _ => return Err(not_found(path)),
        }
        let id = st.next_id;
        st.next_id += 1;
        st.files.insert(id, FileData::default());
        st.entries.insert(path.to_path_buf(), id);
        st.pending_dir.push(DirOp::Link(path.to_path_buf(), id));
        let generation = st.generation;
        drop(st);
        Ok(self.handle(id, generation))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.open_aligned(path, None)
    }

    fn open_direct(&self, path: &Path) -> io::Result<Option<(Arc<dyn StorageFile>, usize)>> {
        if self.state.lock().no_direct_writes {
            return Ok(None);
        }
        let file = self.open_aligned(path, Some(DIRECT_ALIGN))?;
        Ok(Some((file, DIRECT_ALIGN)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.count_op()?;
        let id = st.entries.remove(from).ok_or_else(|| not_found(from))?;
        st.entries.insert(to.to_path_buf(), id);
        st.pending_dir
            .push(DirOp::Rename(from.to_path_buf(), to.to_path_buf(), id));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.count_op()?;
        st.entries.remove(path).ok_or_else(|| not_found(path))?;
        st.pending_dir.push(DirOp::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.count_op()?;
        let pending = std::mem::take(&mut st.pending_dir);
        let mut rest = Vec::new();
        for op in pending {
            if op.parent() == Some(dir) {
                op.apply(&mut st.durable_entries);
            } else {
                rest.push(op);
            }
        }
        st.pending_dir = rest;
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        let mut st = self.state.lock();
        st.check_alive()?;
        if !st.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(Box::new(MemLock {
            state: self.state.clone(),
            path: path.to_path_buf(),
            generation: st.generation,
        })))
    }
}

impl MemFile {
    fn with_state<T>(
        &self,
        counted: bool,
        f: impl FnOnce(&mut State) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut st = self.state.lock();
        if st.generation != self.generation {
            return Err(io::Error::other("handle from before a simulated crash"));
        }
        if counted {
            st.count_op()?;
        } else {
            st.check_alive()?;
        }
        f(&mut st)
    }
}

impl StorageFile for MemFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let id = self.id;
        self.with_state(false, |st| {
            let file = st.file(id)?;
            let start = offset as usize;
            let end = start.saturating_add(buf.len());
            if end > file.current.len() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read"));
            }
            buf.copy_from_slice(&file.current[start..end]);
            st.bytes_read += buf.len() as u64;
            Ok(())
        })
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        if let Some(a) = self.align {
            let aligned = offset.is_multiple_of(a as u64)
                && data.len().is_multiple_of(a)
                && (data.as_ptr() as usize).is_multiple_of(a);
            if !aligned {
                return Err(io::Error::from_raw_os_error(22)); // EINVAL, as O_DIRECT
            }
        }
        let id = self.id;
        self.with_state(true, |st| {
            let end = offset + data.len() as u64;
            let len = st.file(id)?.current.len() as u64;
            st.check_room(id, end.max(len))?;
            let file = st.file(id)?;
            write_into(&mut file.current, offset, data);
            file.pending.push(FileOp::Write(offset, data.to_vec()));
            Ok(())
        })
    }

    fn len(&self) -> io::Result<u64> {
        let id = self.id;
        self.with_state(false, |st| Ok(st.file(id)?.current.len() as u64))
    }

    fn sync(&self) -> io::Result<()> {
        let id = self.id;
        self.with_state(true, |st| {
            let file = st.file(id)?;
            file.durable = file.current.clone();
            file.pending.clear();
            Ok(())
        })
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let id = self.id;
        self.with_state(true, |st| {
            let file = st.file(id)?;
            file.current.truncate(len as usize);
            file.pending.push(FileOp::Truncate(len));
            Ok(())
        })
    }

    fn drop_cached(&self, offset: u64, len: u64) {
        let id = self.id;
        let _ = self.with_state(false, |st| {
            let file = st.file(id)?;
            let range = offset as usize..(offset + len) as usize;
            let synced = file.durable.get(range.clone()).is_some()
                && file.durable.get(range.clone()) == file.current.get(range);
            st.cache_dropped += len;
            if !synced {
                st.cache_dropped_unsynced += len;
            }
            Ok(())
        });
    }
}
