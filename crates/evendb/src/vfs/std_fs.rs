//! The real file system.

use super::{Storage, StorageFile, StorageLock};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// [`Storage`] over the operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(File);

#[derive(Debug)]
struct StdLock(File);

impl StorageLock for StdLock {}

/// Unlocks explicitly rather than by closing the file: a child process
/// being spawned by another thread holds a copy of the descriptor until it
/// execs, and the lock (which belongs to the open file, not the
/// descriptor) would outlive the close, so a store closed and at once
/// reopened by another process could be refused as locked. (Seen as a rare
/// `Locked` error in the tool's tests, which spawn processes in parallel.)
impl Drop for StdLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl Storage for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Arc::new(StdFile(random_access(file))))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Arc::new(StdFile(random_access(file))))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).open(path)?;
        Ok(Arc::new(StdFile(random_access(file))))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<bool> {
        std::fs::hard_link(from, to).map(|()| true)
    }

    fn open_direct(&self, path: &Path) -> io::Result<Option<(Arc<dyn StorageFile>, usize)>> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{statx, AtFlags, OFlags, StatxFlags, CWD};
            use std::os::unix::fs::OpenOptionsExt;
            // The file system says whether it takes direct writes and how
            // they must be aligned (Linux 6.1 and later); without an answer
            // the caller writes through the page cache.
            let Ok(sx) = statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN) else {
                return Ok(None);
            };
            if sx.stx_mask & StatxFlags::DIOALIGN.bits() == 0 || sx.stx_dio_offset_align == 0 {
                return Ok(None);
            }
            let align = sx.stx_dio_offset_align.max(sx.stx_dio_mem_align) as usize;
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(OFlags::DIRECT.bits() as i32)
                .open(path);
            match opened {
                Ok(file) => Ok(Some((Arc::new(StdFile(file)), align))),
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = path;
            Ok(None)
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(StdLock(file)))),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
}

/// Tells the kernel not to read ahead on `file`: gets read one record or
/// block, scans read a few blocks and size their own reads (see
/// `TableIter`), and whole-file reads ask for the whole range at once. With
/// the default readahead a 40 KB scan read about 170 KB from the device.
fn random_access(file: File) -> File {
    #[cfg(target_os = "linux")]
    {
        // Advice only: a failure changes nothing but speed.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random);
    }
    file
}

impl StorageFile for StdFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_all_at(data, offset)
    }

    #[cfg(target_os = "linux")]
    fn write_vectored_at(&self, mut offset: u64, parts: &[&[u8]]) -> io::Result<()> {
        let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
        let mut left = slices.as_mut_slice();
        io::IoSlice::advance_slices(&mut left, 0); // skips leading empty parts
        while !left.is_empty() {
            let n = match rustix::io::pwritev(&self.0, left, offset) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            };
            offset += n as u64;
            // A short write goes on from where it stopped.
            io::IoSlice::advance_slices(&mut left, n);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn write_back(&self, offset: u64, len: u64) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
                return;
            };
            // Advice only: a failure changes nothing but timing.
            let _ = start_write_back(self.0.as_raw_fd(), offset, len);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }

    fn drop_cached(&self, offset: u64, len: u64) {
        #[cfg(target_os = "linux")]
        advise(&self.0, offset, len, rustix::fs::Advice::DontNeed);
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }

    fn will_need(&self, offset: u64, len: u64) {
        #[cfg(target_os = "linux")]
        advise(&self.0, offset, len, rustix::fs::Advice::WillNeed);
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }
}

/// `posix_fadvise(advice)` over `[offset, offset + len)`, nothing for an
/// empty range. Advice only: a failure changes nothing but speed and the
/// page cache's size.
#[cfg(target_os = "linux")]
fn advise(file: &std::fs::File, offset: u64, len: u64, advice: rustix::fs::Advice) {
    if let Some(len) = std::num::NonZeroU64::new(len) {
        let _ = rustix::fs::fadvise(file, offset, Some(len), advice);
    }
}

/// `sync_file_range(fd, offset, len, SYNC_FILE_RANGE_WRITE)`: starts
/// writeback of the range's dirty pages and returns without waiting for
/// it, nor for the device's cache (RocksDB's `bytes_per_sync` uses it).
/// (`posix_fadvise(DONTNEED)`, the safe alternative, also drops the
/// range's clean pages and drains every CPU's page lists when some are
/// still dirty.)
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn start_write_back(fd: std::ffi::c_int, offset: i64, len: i64) -> std::ffi::c_int {
    extern "C" {
        fn sync_file_range(
            fd: std::ffi::c_int,
            offset: i64,
            nbytes: i64,
            flags: std::ffi::c_uint,
        ) -> std::ffi::c_int;
    }
    const SYNC_FILE_RANGE_WRITE: std::ffi::c_uint = 2;
    // SAFETY: no pointer is passed; `fd` is the open descriptor of a file
    // borrowed for the call, and a bad range only makes the call fail.
    unsafe { sync_file_range(fd, offset, len, SYNC_FILE_RANGE_WRITE) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vectored write lands as the parts joined would, empty parts and
    /// all, over existing bytes and past the file's end.
    #[test]
    fn a_vectored_write_writes_its_parts_in_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        let file = StdFs.create(&path).expect("create");
        file.write_at(0, &[7u8; 10_000]).expect("write");
        let big = vec![3u8; 70_000];
        let parts: [&[u8]; 4] = [b"abc", &[], &big, &[0u8; 1000]];
        file.write_vectored_at(4093, &parts)
            .expect("vectored write");
        let mut want = vec![7u8; 4093];
        want.extend_from_slice(&parts.concat());
        assert_eq!(file.len().expect("len"), want.len() as u64);
        let mut got = vec![0u8; want.len()];
        file.read_at(0, &mut got).expect("read");
        assert!(got == want, "the file holds the parts in order");
    }
}
