//! The storage of a store opened read-only (`Options::read_only`): files
//! are opened for reading only, and every operation that would change the
//! directory or a file fails with `PermissionDenied`. The engine skips
//! those operations in a read-only open; this layer makes sure that none is
//! missed, so a read-only open writes nothing.

use super::{Storage, StorageFile, StorageLock};
use std::io;
use std::path::Path;
use std::sync::Arc;

fn refused(what: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} {}: the store is open read-only", path.display()),
    )
}

#[derive(Debug)]
pub(crate) struct ReadOnly(pub Arc<dyn Storage>);

#[derive(Debug)]
struct ReadOnlyFile {
    file: Arc<dyn StorageFile>,
    path: std::path::PathBuf,
}

/// A lock that could not be taken because the directory cannot be written
/// (a read-only mount): nothing else can write there either.
#[derive(Debug)]
struct NoLock;

impl StorageLock for NoLock {}

impl Storage for ReadOnly {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        Err(refused("creating", dir))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.0.exists(path)
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Err(refused("creating", path))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.open_read(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Ok(Arc::new(ReadOnlyFile {
            file: self.0.open_read(path)?,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, _to: &Path) -> io::Result<()> {
        Err(refused("renaming", from))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        Err(refused("removing", path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Err(refused("syncing", dir))
    }

    /// The store's lock, so no writer opens it meanwhile; where the lock
    /// file cannot be opened for writing (a read-only mount), no lock.
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        match self.0.lock(path) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
                ) =>
            {
                Ok(Some(Box::new(NoLock)))
            }
            other => other,
        }
    }
}

impl StorageFile for ReadOnlyFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_at(offset, buf)
    }

    fn write_at(&self, _offset: u64, _data: &[u8]) -> io::Result<()> {
        Err(refused("writing", &self.path))
    }

    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn sync(&self) -> io::Result<()> {
        Err(refused("syncing", &self.path))
    }

    fn truncate(&self, _len: u64) -> io::Result<()> {
        Err(refused("truncating", &self.path))
    }

    fn will_need(&self, offset: u64, len: u64) {
        self.file.will_need(offset, len);
    }
}
