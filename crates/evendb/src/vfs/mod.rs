//! The storage trait: every file operation of the engine goes through it.
//!
//! [`StdFs`] is the real file system. [`MemFs`] keeps files in memory and
//! remembers, per file and per directory, what has been synced, so tests can
//! simulate a power loss (drop or tear what was not synced) and inject I/O
//! faults at the N-th operation. [`SlowSync`] wraps either and makes
//! every sync slower.

mod mem;
mod read_only;
mod slow;
mod std_fs;

pub use mem::{CrashMode, Fault, MemFs};
pub(crate) use read_only::ReadOnly;
pub use slow::SlowSync;
pub use std_fs::StdFs;

use std::fmt::Debug;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// A file system as the engine sees it.
///
/// Paths are absolute or relative to the process's working directory; the
/// engine only ever passes paths inside the store's directory.
pub trait Storage: Send + Sync + Debug + 'static {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Names (not paths) of the entries of `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// True if `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Creates `path` empty (truncating an existing file) for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens the existing file `path` for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens the existing file `path` for reading only (a read-only open
    /// of a store on a read-only mount). Default: [`Storage::open`].
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.open(path)
    }
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes the file `path`.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the entries of `dir` (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive advisory lock on `path` (created if missing).
    /// `Ok(None)` means another holder has it. The lock is released when the
    /// returned guard is dropped, or when the holding process dies.
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>>;
    /// Opens the existing file `path` for direct writes, which go to the
    /// device without the page cache (`O_DIRECT`); the caller still syncs
    /// them ([`StorageFile::sync`]) past the device's cache. Each write's
    /// offset, length and memory address must be multiples of the returned
    /// alignment. `Ok(None)`: this storage has no direct writes (or not for
    /// this file system), and the caller writes through [`Storage::open`].
    /// Default: none.
    fn open_direct(&self, path: &Path) -> io::Result<Option<(Arc<dyn StorageFile>, usize)>> {
        let _ = path;
        Ok(None)
    }
    /// Makes `to` a second name of the existing file `from` (a hard link).
    /// Returns false, changing nothing, if this storage has no hard links;
    /// the caller then copies. Default: no hard links.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<bool> {
        let _ = (from, to);
        Ok(false)
    }
}

/// An open file. Reads and writes are positional, so one handle can serve
/// many threads.
#[allow(clippy::len_without_is_empty)]
pub trait StorageFile: Send + Sync + Debug {
    /// Fills `buf` from `offset`; a short file is `UnexpectedEof`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Writes `parts` one after another from `offset`, as
    /// [`write_at`](Self::write_at) would write them joined. Default: joins
    /// them and calls `write_at` (the real file system writes them in one
    /// `pwritev`, without joining).
    fn write_vectored_at(&self, offset: u64, parts: &[&[u8]]) -> io::Result<()> {
        self.write_at(offset, &parts.concat())
    }
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Makes the file's contents and length durable.
    fn sync(&self) -> io::Result<()>;
    /// Cuts the file to `len` bytes.
    fn truncate(&self, len: u64) -> io::Result<()>;
    /// Advice that `[offset, offset + len)`, just written, will not be
    /// written again: the file system may start writing it to the device
    /// now, in the background, so that a later sync finds little left to
    /// write (`sync_file_range` on Linux). Makes nothing durable. Default:
    /// nothing.
    fn write_back(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
    /// Advice that `[offset, offset + len)` is about to be read whole (a
    /// rebuild's inputs): the file system may start reading it now, in
    /// the background. Changes nothing but speed. Default: nothing.
    fn will_need(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
    /// Advice that `[offset, offset + len)`, written and synced, will not
    /// be read again soon: the file system may drop its cached pages
    /// (`posix_fadvise(DONTNEED)` on Linux; pages still dirty stay).
    /// Changes nothing but speed and the page cache's size. Default:
    /// nothing.
    fn drop_cached(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// A held directory lock; dropping it releases the lock.
pub trait StorageLock: Send + Sync + Debug {}
