//! A fault wrapper: another file system with slow syncs.

use super::{Storage, StorageFile, StorageLock};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A file system whose syncs (of files and directories) each take `delay`
/// longer, as a slow or overloaded disk's would: for tests of group commit
/// and of deployments (`evendb-server --fault-sync-delay-ms`).
#[derive(Debug)]
pub struct SlowSync {
    /// The file system every operation goes to.
    pub inner: Arc<dyn Storage>,
    /// Added to every sync.
    pub delay: Duration,
}

#[derive(Debug)]
struct SlowFile {
    inner: Arc<dyn StorageFile>,
    delay: Duration,
}

impl SlowSync {
    fn wrap(&self, f: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(SlowFile {
            inner: f,
            delay: self.delay,
        })
    }
}

impl Storage for SlowSync {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.inner.create(path).map(|f| self.wrap(f))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.inner.open(path).map(|f| self.wrap(f))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.inner.open_read(path).map(|f| self.wrap(f))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        self.inner.lock(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<bool> {
        self.inner.hard_link(from, to)
    }
    fn open_direct(&self, path: &Path) -> io::Result<Option<(Arc<dyn StorageFile>, usize)>> {
        Ok(self
            .inner
            .open_direct(path)?
            .map(|(f, align)| (self.wrap(f), align)))
    }
}

impl StorageFile for SlowFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.inner.write_at(offset, data)
    }
    fn write_vectored_at(&self, offset: u64, parts: &[&[u8]]) -> io::Result<()> {
        self.inner.write_vectored_at(offset, parts)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn sync(&self) -> io::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.sync()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }
    fn will_need(&self, offset: u64, len: u64) {
        self.inner.will_need(offset, len);
    }
    fn write_back(&self, offset: u64, len: u64) {
        self.inner.write_back(offset, len);
    }
    fn drop_cached(&self, offset: u64, len: u64) {
        self.inner.drop_cached(offset, len);
    }
}
