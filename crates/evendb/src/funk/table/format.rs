//! Byte map of a sorted table (all integers little-endian):
//!
//! ```text
//! file header   48 bytes, see `codec::FileHeader` (store, kind, number)
//! data block*   entries sorted by (key asc, version desc, counter desc)
//!   entry:      kind u8 | key_len u32 | value_len u32 | version u64 |
//!               counter u64 | key | value                (25-byte header)
//!   body:       format 1: the entries; format 2: the stored bytes, then
//!               codec u8: 0 = the entries as they are, 1 = raw_len u32 |
//!               LZ4 block of the entries (kept only when it saves an
//!               eighth or more)
//!   trailer:    crc u32 = crc32c(seed, block_offset_le64 ++ body)
//! index block   count u32, then per data block:
//!                 last_key_len u32 | last_key | offset u64 | len u32
//!               (len includes the trailer)
//!   trailer:    crc u32 = crc32c(seed, index_offset_le64 ++ body)
//! footer        64 bytes:
//!   0  magic u64 = TABLE_MAGIC       8  format_version u32
//!  12  index_len u32                16  index_offset u64
//!  24  entry_count u64              32  max_counter u64
//!  40  max_version u64              48  user_bytes u64
//!  56  reserved u32 = 0             60  footer_crc u32 = crc32c(seed, bytes 0..60)
//! ```
//!
//! `seed` is [`codec::seed`](crate::codec::seed) of (Table, file number); the
//! block offset is mixed in too, so a block read from the wrong place or the
//! wrong file fails its check.

use crate::codec::{checksum, Decoder, PutLe};
use crate::entry::{Entry, KIND_DELETE, KIND_PUT, MAX_KEY_SIZE, MAX_VALUE_SIZE};

pub(crate) const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"EVNTABL1");
/// Format 2 ends each block with its codec byte; format 1 tables (no
/// codec byte) are still read.
pub(crate) const TABLE_FORMAT_VERSION: u32 = 2;
/// A block stored as its entries.
const CODEC_RAW: u8 = 0;
/// A block stored LZ4-compressed.
const CODEC_LZ4: u8 = 1;
/// The most bytes a compressed block may expand to (a block holds at most
/// one block size plus one entry, and an entry is at most 16 MiB and 16
/// KiB): a larger length read from disk is corruption, never allocated.
const MAX_PLAIN_BLOCK: usize = 64 << 20;

/// The body of a format-2 block holding `entries`: compressed when asked
/// and worth it (an eighth or more saved), else as they are.
pub(crate) fn encode_block(entries: &[u8], compress: bool, out: &mut Vec<u8>) {
    out.clear();
    if compress && entries.len() >= 64 {
        let bound = lz4_flex::block::get_maximum_output_size(entries.len());
        out.resize(4 + bound, 0);
        out[..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        if let Ok(n) = lz4_flex::block::compress_into(entries, &mut out[4..]) {
            if 4 + n < entries.len() - entries.len() / 8 {
                out.truncate(4 + n);
                out.push(CODEC_LZ4);
                return;
            }
        }
        out.clear();
    }
    out.extend_from_slice(entries);
    out.push(CODEC_RAW);
}

/// The entries of a checked block body of a table of `format`: the body
/// itself (format 1), its stored bytes, or those decompressed into
/// `plain`. `None` if malformed.
pub(crate) fn block_entries<'a>(
    body: &'a [u8],
    format: u32,
    plain: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    if format < 2 {
        return Some(body);
    }
    let (&codec, stored) = body.split_last()?;
    match codec {
        CODEC_RAW => Some(stored),
        CODEC_LZ4 => {
            let (len, lz) = stored.split_at_checked(4)?;
            let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
            if len > MAX_PLAIN_BLOCK {
                return None;
            }
            plain.resize(len, 0);
            let n = lz4_flex::block::decompress_into(lz, plain).ok()?;
            (n == len).then_some(&plain[..])
        }
        _ => None,
    }
}
pub(crate) const FOOTER_LEN: usize = 64;

pub(crate) fn encode_entry(out: &mut Vec<u8>, e: &Entry) {
    out.put_u8(if e.value.is_some() {
        KIND_PUT
    } else {
        KIND_DELETE
    });
    out.put_u32(e.key.len() as u32);
    out.put_u32(e.value.as_ref().map_or(0, Vec::len) as u32);
    out.put_u64(e.version);
    out.put_u64(e.counter);
    out.extend_from_slice(&e.key);
    if let Some(v) = &e.value {
        out.extend_from_slice(v);
    }
}

/// One entry of a block, borrowed from the block's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryRef<'a> {
    pub key: &'a [u8],
    /// `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    pub version: u64,
    pub counter: u64,
}

impl EntryRef<'_> {
    pub fn to_entry(self) -> Entry {
        Entry {
            key: self.key.to_vec(),
            value: self.value.map(<[u8]>::to_vec),
            version: self.version,
            counter: self.counter,
        }
    }
}

/// Walks the entries of a block body (trailer already checked) without
/// copying them. Yields `None` once, at the first structural error.
pub(crate) fn entry_refs(body: &[u8]) -> impl Iterator<Item = Option<EntryRef<'_>>> {
    let mut d = Decoder::new(body);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || d.remaining() == 0 {
            return None;
        }
        let e = decode_one(&mut d);
        failed = e.is_none();
        Some(e)
    })
}

pub(crate) fn decode_one<'a>(d: &mut Decoder<'a>) -> Option<EntryRef<'a>> {
    let kind = d.u8()?;
    let key_len = d.u32()? as usize;
    let value_len = d.u32()? as usize;
    if key_len > MAX_KEY_SIZE || value_len > MAX_VALUE_SIZE {
        return None;
    }
    let version = d.u64()?;
    let counter = d.u64()?;
    let key = d.bytes(key_len)?;
    let value = d.bytes(value_len)?;
    let value = match kind {
        KIND_PUT => Some(value),
        KIND_DELETE if value_len == 0 => None,
        _ => return None,
    };
    Some(EntryRef {
        key,
        value,
        version,
        counter,
    })
}

/// Decodes the entries of a block body (trailer already checked). `None` on
/// any structural error.
pub(crate) fn decode_entries(body: &[u8]) -> Option<Vec<Entry>> {
    entry_refs(body)
        .map(|e| e.map(EntryRef::to_entry))
        .collect()
}

/// Checksum of a block or index stored at `offset`.
pub(crate) fn block_crc(seed: u32, offset: u64, body: &[u8]) -> u32 {
    checksum(checksum(seed, &offset.to_le_bytes()), body)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The table's format (set by `decode`; `encode` writes the current).
    pub version: u32,
    pub index_len: u32,
    pub index_offset: u64,
    pub entry_count: u64,
    pub max_counter: u64,
    pub max_version: u64,
    pub user_bytes: u64,
}

impl Footer {
    pub fn encode(&self, seed: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        out.put_u64(TABLE_MAGIC);
        out.put_u32(self.version);
        out.put_u32(self.index_len);
        out.put_u64(self.index_offset);
        out.put_u64(self.entry_count);
        out.put_u64(self.max_counter);
        out.put_u64(self.max_version);
        out.put_u64(self.user_bytes);
        out.put_u32(0);
        let crc = checksum(seed, &out);
        out.put_u32(crc);
        out
    }

    /// Decodes a footer. Errors are human-readable details for `Corruption`,
    /// except a newer format version, returned as `Ok(Err(version))`.
    pub fn decode(bytes: &[u8], seed: u32) -> Result<Result<Footer, u32>, &'static str> {
        let body = bytes.get(..60).ok_or("short footer")?;
        let mut d = Decoder::new(bytes);
        let magic = d.u64().ok_or("short footer")?;
        if magic != TABLE_MAGIC {
            return Err("bad table magic");
        }
        let version = d.u32().ok_or("short footer")?;
        let mut tail = Decoder::new(bytes.get(60..).ok_or("short footer")?);
        let crc = tail.u32().ok_or("short footer")?;
        if checksum(seed, body) != crc {
            return Err("table footer failed its checksum");
        }
        if version > TABLE_FORMAT_VERSION {
            return Ok(Err(version));
        }
        let f = (|| {
            Some(Footer {
                version,
                index_len: d.u32()?,
                index_offset: d.u64()?,
                entry_count: d.u64()?,
                max_counter: d.u64()?,
                max_version: d.u64()?,
                user_bytes: d.u64()?,
            })
        })()
        .ok_or("short footer")?;
        Ok(Ok(f))
    }
}
