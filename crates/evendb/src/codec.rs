//! Byte-level helpers shared by every on-disk format: little-endian
//! encoding, a bounds-checked decoder, and checksums seeded with the identity
//! of the file that holds them.

/// Kinds of files, mixed into checksum seeds so that a block copied into the
/// wrong file fails its check. Values are on disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FileKind {
    Manifest = 1,
    Table = 2,
    Log = 3,
    Checkpoint = 4,
    Journal = 5,
}

/// The checksum seed of one file: crc32c over a tag, the store's id, the
/// file's kind and its number. A block or record copied from another store,
/// another kind of file or another file fails its check.
pub(crate) fn seed(store: StoreId, kind: FileKind, file_number: u64) -> u32 {
    let mut tag = [0u8; 23];
    tag[..6].copy_from_slice(b"evendb");
    tag[6..14].copy_from_slice(&store.0.to_le_bytes());
    tag[14] = kind as u8;
    tag[15..].copy_from_slice(&file_number.to_le_bytes());
    crc32c::crc32c(&tag)
}

/// The random identity of a store, drawn when it is created and written in
/// the header of every file it owns (and into every checksum seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct StoreId(pub u64);

impl StoreId {
    /// A new random, non-zero id.
    pub fn random() -> StoreId {
        use std::hash::{BuildHasher, Hasher};
        // `RandomState` is keyed from the operating system's randomness.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        StoreId(h.finish().max(1))
    }
}

impl std::fmt::Display for StoreId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Byte map of the header that opens every table and log file (all
/// integers little-endian):
///
/// ```text
///  0  magic u64 = FILE_MAGIC
///  8  format_version u32 = FILE_FORMAT_VERSION, or BLOCK_LOG_FORMAT_VERSION
///                          for a log whose records are stored in blocks
///                          (a sorted run, see `funk::log::blocks`)
/// 12  kind u8 | reserved 3 bytes = 0
/// 16  store_id u64
/// 24  file_number u64
/// 32  generation u64       the MANIFEST generation durable when the file
///                          was created
/// 40  reserved u32 = 0
/// 44  crc u32 = crc32c(seed(store_id, kind, file_number), bytes 0..44)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileHeader {
    /// [`FILE_FORMAT_VERSION`], or [`BLOCK_LOG_FORMAT_VERSION`] (logs only).
    pub format_version: u32,
    pub kind: FileKind,
    pub store: StoreId,
    pub number: u64,
    pub generation: u64,
}

pub(crate) const FILE_MAGIC: u64 = u64::from_le_bytes(*b"EVNFILE3");
pub(crate) const FILE_FORMAT_VERSION: u32 = 3;
/// A log whose records are stored in checked, possibly compressed blocks
/// (a sorted run written whole). Format 3 logs and tables are unchanged,
/// so a store of format 3 opens as it is; an older build refuses a
/// format 4 log as written by a newer format instead of misreading it.
pub(crate) const BLOCK_LOG_FORMAT_VERSION: u32 = 4;
/// The newest format of any file this build reads.
pub(crate) const NEWEST_FILE_FORMAT_VERSION: u32 = BLOCK_LOG_FORMAT_VERSION;
pub(crate) const FILE_HEADER_LEN: usize = 48;

/// Why a file header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// Shorter than a header, or not an evendb file header at all.
    Unreadable(&'static str),
    /// A whole, valid header, but of another store, kind or file.
    Foreign(String),
    /// Written by a newer format.
    Newer(u32),
}

impl FileHeader {
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut out = Vec::with_capacity(FILE_HEADER_LEN);
        out.put_u64(FILE_MAGIC);
        out.put_u32(self.format_version);
        out.extend_from_slice(&[self.kind as u8, 0, 0, 0]);
        out.put_u64(self.store.0);
        out.put_u64(self.number);
        out.put_u64(self.generation);
        out.put_u32(0);
        let crc = checksum(seed(self.store, self.kind, self.number), &out);
        out.put_u32(crc);
        let mut fixed = [0u8; FILE_HEADER_LEN];
        fixed.copy_from_slice(&out);
        fixed
    }

    /// Decodes a header without expectations (for listing unknown files).
    pub fn decode(bytes: &[u8]) -> Result<FileHeader, HeaderError> {
        let mut d = Decoder::new(bytes);
        if d.u64() != Some(FILE_MAGIC) {
            return Err(HeaderError::Unreadable("no evendb file header"));
        }
        let version = d.u32().ok_or(HeaderError::Unreadable("short header"))?;
        if version > NEWEST_FILE_FORMAT_VERSION {
            return Err(HeaderError::Newer(version));
        }
        let kind = match d.u8() {
            Some(2) => FileKind::Table,
            Some(3) => FileKind::Log,
            _ => return Err(HeaderError::Unreadable("unknown file kind")),
        };
        if version == BLOCK_LOG_FORMAT_VERSION && kind != FileKind::Log {
            return Err(HeaderError::Unreadable("a block format header on a table"));
        }
        let _ = d.bytes(3);
        let store = StoreId(d.u64().ok_or(HeaderError::Unreadable("short header"))?);
        let number = d.u64().ok_or(HeaderError::Unreadable("short header"))?;
        let generation = d.u64().ok_or(HeaderError::Unreadable("short header"))?;
        let _ = d.u32();
        let crc = d.u32().ok_or(HeaderError::Unreadable("short header"))?;
        let covered = bytes
            .get(..FILE_HEADER_LEN - 4)
            .ok_or(HeaderError::Unreadable("short header"))?;
        if checksum(seed(store, kind, number), covered) != crc {
            return Err(HeaderError::Unreadable("file header failed its checksum"));
        }
        Ok(FileHeader {
            format_version: version,
            kind,
            store,
            number,
            generation,
        })
    }

    /// Decodes a header and checks that it names `store`, `kind` and
    /// `number`.
    pub fn check(
        bytes: &[u8],
        store: StoreId,
        kind: FileKind,
        number: u64,
    ) -> Result<FileHeader, HeaderError> {
        let h = Self::decode(bytes)?;
        if h.store != store {
            return Err(HeaderError::Foreign(format!(
                "file belongs to store {}, not to this store {store}",
                h.store
            )));
        }
        if h.kind != kind || h.number != number {
            return Err(HeaderError::Foreign(format!(
                "file header names {:?} file {}, not {kind:?} file {number}",
                h.kind, h.number
            )));
        }
        Ok(h)
    }
}

impl HeaderError {
    /// The typed error for `path`.
    pub fn into_error(self, path: &std::path::Path) -> crate::error::Error {
        match self {
            HeaderError::Unreadable(d) => crate::error::Error::corruption(path, 0, d),
            HeaderError::Foreign(d) => crate::error::Error::corruption(path, 0, d),
            HeaderError::Newer(found) => crate::error::Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found,
                supported: NEWEST_FILE_FORMAT_VERSION,
            },
        }
    }
}

/// crc32c of `data`, continuing from `seed`.
pub(crate) fn checksum(seed: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(seed, data)
}

/// Appends little-endian integers and byte strings to a buffer.
pub(crate) trait PutLe {
    fn put_u8(&mut self, v: u8);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
}

impl PutLe for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
}

/// A cursor over bytes read from disk. Every read is bounds-checked and
/// returns `None` past the end, so decoders never panic on bad input.
#[derive(Debug, Clone)]
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.bytes(1).and_then(|b| b.first().copied())
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_by_kind_and_number() {
        let s = StoreId(7);
        assert_ne!(seed(s, FileKind::Table, 1), seed(s, FileKind::Log, 1));
        assert_ne!(seed(s, FileKind::Table, 1), seed(s, FileKind::Table, 2));
        assert_ne!(
            seed(s, FileKind::Table, 1),
            seed(StoreId(8), FileKind::Table, 1)
        );
    }

    #[test]
    fn a_file_header_names_its_store_kind_and_number() {
        let h = FileHeader {
            format_version: FILE_FORMAT_VERSION,
            kind: FileKind::Log,
            store: StoreId(11),
            number: 5,
            generation: 9,
        };
        let bytes = h.encode();
        assert_eq!(
            FileHeader::check(&bytes, StoreId(11), FileKind::Log, 5),
            Ok(h)
        );
        assert!(matches!(
            FileHeader::check(&bytes, StoreId(12), FileKind::Log, 5),
            Err(HeaderError::Foreign(_))
        ));
        assert!(matches!(
            FileHeader::check(&bytes, StoreId(11), FileKind::Table, 5),
            Err(HeaderError::Foreign(_))
        ));
        assert!(matches!(
            FileHeader::check(&bytes, StoreId(11), FileKind::Log, 6),
            Err(HeaderError::Foreign(_))
        ));
        for i in 0..bytes.len() {
            let mut bad = bytes;
            bad[i] ^= 0x10;
            assert!(
                FileHeader::check(&bad, StoreId(11), FileKind::Log, 5).is_err(),
                "flip at {i}"
            );
        }
    }

    #[test]
    fn a_block_log_header_is_read_and_newer_formats_are_refused() {
        let mut h = FileHeader {
            format_version: BLOCK_LOG_FORMAT_VERSION,
            kind: FileKind::Log,
            store: StoreId(11),
            number: 5,
            generation: 9,
        };
        assert_eq!(FileHeader::decode(&h.encode()), Ok(h));
        h.kind = FileKind::Table;
        assert!(matches!(
            FileHeader::decode(&h.encode()),
            Err(HeaderError::Unreadable(_))
        ));
        h.kind = FileKind::Log;
        h.format_version = NEWEST_FILE_FORMAT_VERSION + 1;
        assert_eq!(
            FileHeader::decode(&h.encode()),
            Err(HeaderError::Newer(NEWEST_FILE_FORMAT_VERSION + 1))
        );
    }

    #[test]
    fn decoder_returns_none_past_the_end() {
        let mut d = Decoder::new(&[1, 2, 3]);
        assert_eq!(d.u8(), Some(1));
        assert_eq!(d.u32(), None);
        assert_eq!(d.bytes(2), Some(&[2u8, 3][..]));
        assert_eq!(d.u8(), None);
    }
}
