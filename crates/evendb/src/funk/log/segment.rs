//! One log segment file: appends through a small user-space buffer,
//! positional reads, group syncs, and replay at open.
//!
//! Invariants:
//! - `buffer` (mutex) holds the bytes from `buffer.start` to the logical end;
//!   everything before `buffer.start` has been written to the file. Appends
//!   and buffer flushes happen under this mutex, so records land in the file
//!   in append order and a record is never split between file and buffer.
//! - `synced` (mutex) is the logical length known durable. One thread at a
//!   time syncs; threads that find their record already covered return at
//!   once, so concurrent synchronous puts share one fsync.

use super::format::{self, Header, HEADER_LEN};
use crate::codec::{self, FileKind};
use crate::error::{Error, Result};
use crate::vfs::{Storage, StorageFile};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes buffered in user space before they are written to the file.
const WRITE_BUFFER: usize = 64 * 1024;

/// Where one record sits, with what is needed to order and find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordPtr {
    pub version: u64,
    pub counter: u64,
    pub offset: u64,
    pub key_len: u32,
    pub value_len: u32,
    pub tombstone: bool,
}

impl RecordPtr {
    pub fn record_len(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.key_len) + u64::from(self.value_len)
    }
}

#[derive(Debug)]
struct Buffer {
    start: u64,
    bytes: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct LogSegment {
    pub number: u64,
    pub path: PathBuf,
    seed: u32,
    file: Arc<dyn StorageFile>,
    buffer: Mutex<Buffer>,
    synced: Mutex<u64>,
    dirty: AtomicBool,
}

/// What replay found in a segment.
pub(crate) struct Replay {
    pub segment: LogSegment,
    pub records: Vec<(Vec<u8>, RecordPtr)>,
    /// Bytes cut off a torn tail.
    pub truncated: u64,
}

impl LogSegment {
    pub fn file_name(number: u64) -> String {
        format!("{number:06}.log")
    }

    /// Creates an empty segment. The caller syncs the directory.
    pub fn create(storage: &dyn Storage, dir: &Path, number: u64) -> Result<Self> {
        let path = dir.join(Self::file_name(number));
        let file = storage.create(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Self::with_file(number, path, file, 0))
    }

    fn with_file(number: u64, path: PathBuf, file: Arc<dyn StorageFile>, len: u64) -> Self {
        LogSegment {
            number,
            path,
            seed: codec::seed(FileKind::Log, number),
            file,
            buffer: Mutex::new(Buffer {
                start: len,
                bytes: Vec::new(),
            }),
            synced: Mutex::new(len),
            dirty: AtomicBool::new(false),
        }
    }

    /// Opens a segment and decodes every record. A torn tail (a damaged
    /// record with no valid record after it) is cut off; damage followed by a
    /// valid record is corruption and fails the open.
    pub fn open(storage: &dyn Storage, dir: &Path, number: u64) -> Result<Replay> {
        let path = dir.join(Self::file_name(number));
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile(path))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        let len_usize = usize::try_from(len)
            .map_err(|_| Error::corruption(&path, 0, "log larger than the address space"))?;
        let mut data = vec![0u8; len_usize];
        file.read_at(0, &mut data)
            .map_err(|e| Error::io(&path, e))?;
        let seed = codec::seed(FileKind::Log, number);
        let mut records = Vec::new();
        let mut pos = 0usize;
        while pos < data.len() {
            match decode_at(&data, pos, seed) {
                Some((h, key)) => {
                    records.push((
                        key.to_vec(),
                        RecordPtr {
                            version: h.version,
                            counter: h.counter,
                            offset: pos as u64,
                            key_len: h.key_len,
                            value_len: h.value_len,
                            tombstone: h.kind == crate::entry::KIND_DELETE,
                        },
                    ));
                    pos += HEADER_LEN + h.body_len();
                }
                None => break,
            }
        }
        let mut truncated = 0;
        if pos < data.len() {
            if (pos + 1..data.len()).any(|p| decode_at(&data, p, seed).is_some()) {
                return Err(Error::corruption(
                    &path,
                    pos as u64,
                    "damaged log record followed by valid records",
                ));
            }
            truncated = (data.len() - pos) as u64;
            log::warn!(
                "{}: cutting a torn tail of {truncated} bytes at offset {pos}",
                path.display()
            );
            file.truncate(pos as u64)
                .and_then(|()| file.sync())
                .map_err(|e| Error::io(&path, e))?;
        }
        let segment = Self::with_file(number, path, file, pos as u64);
        Ok(Replay {
            segment,
            records,
            truncated,
        })
    }

    /// Logical length: bytes appended so far, written or buffered.
    pub fn len(&self) -> u64 {
        let b = self.buffer.lock();
        b.start + b.bytes.len() as u64
    }

    /// Appends one record; returns its pointer and the logical end after it.
    pub fn append(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
        counter: u64,
    ) -> Result<(RecordPtr, u64)> {
        let mut b = self.buffer.lock();
        let offset = b.start + b.bytes.len() as u64;
        format::encode(&mut b.bytes, self.seed, key, value, version, counter);
        let end = b.start + b.bytes.len() as u64;
        if b.bytes.len() >= WRITE_BUFFER {
            self.write_buffer(&mut b)?;
        }
        self.dirty.store(true, Ordering::Release);
        let ptr = RecordPtr {
            version,
            counter,
            offset,
            key_len: key.len() as u32,
            value_len: value.map_or(0, <[u8]>::len) as u32,
            tombstone: value.is_none(),
        };
        Ok((ptr, end))
    }

    fn write_buffer(&self, b: &mut Buffer) -> Result<()> {
        if b.bytes.is_empty() {
            return Ok(());
        }
        self.file
            .write_at(b.start, &b.bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        b.start += b.bytes.len() as u64;
        b.bytes.clear();
        Ok(())
    }

    /// Makes the log durable at least up to logical offset `upto`. Returns
    /// true if this call synced the file (false: already durable).
    pub fn sync_to(&self, upto: u64) -> Result<bool> {
        let mut synced = self.synced.lock();
        if *synced >= upto {
            return Ok(false);
        }
        let target = {
            let mut b = self.buffer.lock();
            self.write_buffer(&mut b)?;
            b.start
        };
        self.file.sync().map_err(|e| Error::io(&self.path, e))?;
        *synced = target;
        if self.len() == target {
            self.dirty.store(false, Ordering::Release);
        }
        Ok(true)
    }

    /// Writes buffered bytes to the file (without syncing it).
    pub fn write_out(&self) -> Result<()> {
        let mut b = self.buffer.lock();
        self.write_buffer(&mut b)
    }

    /// Makes everything appended so far durable.
    pub fn sync_all(&self) -> Result<bool> {
        self.sync_to(self.len())
    }

    /// True if something was appended since the last full sync.
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    /// Reads and checks the record at `ptr`; returns its key and value.
    pub fn read_record(&self, ptr: &RecordPtr) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let len = usize::try_from(ptr.record_len())
            .map_err(|_| Error::corruption(&self.path, ptr.offset, "record too long"))?;
        let mut buf = vec![0u8; len];
        {
            let b = self.buffer.lock();
            if ptr.offset >= b.start {
                let from = (ptr.offset - b.start) as usize;
                let src = b.bytes.get(from..from + len).ok_or_else(|| {
                    Error::corruption(&self.path, ptr.offset, "record past the end of the log")
                })?;
                buf.copy_from_slice(src);
            } else {
                drop(b);
                self.file
                    .read_at(ptr.offset, &mut buf)
                    .map_err(|e| Error::io(&self.path, e))?;
            }
        }
        let (h, key) = decode_at(&buf, 0, self.seed).ok_or_else(|| {
            Error::corruption(&self.path, ptr.offset, "log record failed its checksum")
        })?;
        if h.counter != ptr.counter || h.version != ptr.version {
            return Err(Error::corruption(
                &self.path,
                ptr.offset,
                "log record changed since it was indexed",
            ));
        }
        let value = buf.get(HEADER_LEN + key.len()..).map(<[u8]>::to_vec);
        let value = if ptr.tombstone { None } else { value };
        Ok((key.to_vec(), value))
    }
}

/// Decodes the record at `pos` if its header and body check out; returns the
/// header and the key.
fn decode_at(data: &[u8], pos: usize, seed: u32) -> Option<(Header, &[u8])> {
    let header = data.get(pos..pos.checked_add(HEADER_LEN)?)?;
    let h = format::decode_header(header, seed)?;
    let body_start = pos + HEADER_LEN;
    let body = data.get(body_start..body_start.checked_add(h.body_len())?)?;
    if !format::body_matches(&h, body, seed) {
        return None;
    }
    body.get(..h.key_len as usize).map(|k| (h, k))
}
