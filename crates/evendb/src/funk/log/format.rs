//! Byte map of one log record (all integers little-endian):
//!
//! ```text
//! offset size field
//!  0      4   header_crc  crc32c(seed, bytes 4..36)
//!  4      1   kind        1 = put, 2 = delete
//!  5      3   reserved    zero
//!  8      4   key_len     <= MAX_KEY_SIZE
//! 12      4   value_len   <= MAX_VALUE_SIZE; 0 for a delete
//! 16      8   version
//! 24      8   counter
//! 32      4   body_crc    crc32c(seed, key ++ value)
//! 36      key_len bytes of key, then value_len bytes of value
//! ```
//!
//! `seed` is [`codec::seed`](crate::codec::seed) of (Log, file number), so a
//! record copied into another log fails its check. Lengths are trusted only
//! after `header_crc` matches, and are bounded before anything is allocated.
//!
//! After its last record a log file may hold zero bytes up to the next
//! multiple of [`LOG_PAGE`] (appends are written in whole pages, the last
//! one padded): that padding is the file's end, not a torn tail.

use crate::codec::{checksum, Decoder, PutLe};
use crate::entry::{KIND_DELETE, KIND_PUT, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use std::sync::Arc;

pub(crate) const HEADER_LEN: usize = 36;

/// A log file is written in whole pages of this many bytes (offsets from
/// the file's start), its last page padded with zeros after the records.
pub(crate) const LOG_PAGE: u64 = 4096;

/// True if `tail`, the bytes of a file of `file_len` bytes after its last
/// whole record, is zero padding: all zeros, shorter than a page, ending
/// on a page boundary.
pub(crate) fn is_padding(tail: &[u8], file_len: u64) -> bool {
    (tail.len() as u64) < LOG_PAGE
        && file_len.is_multiple_of(LOG_PAGE)
        && tail.iter().all(|&b| b == 0)
}

/// The name of log file `number`.
pub(crate) fn file_name(number: u64) -> String {
    format!("{number:06}.log")
}

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

    pub fn stamp(&self) -> (u64, u64) {
        (self.version, self.counter)
    }
}

/// Per log, the length (and the counter of the record ending there) that a
/// checkpoint recorded as durable.
pub(crate) type DurableLengths = std::collections::HashMap<u64, DurableMark>;

/// A log's durable end as a checkpoint recorded it. Ordered by length
/// (then counter: both grow with the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct DurableMark {
    /// Bytes of the file known durable (header included).
    pub len: u64,
    /// Counter of the record that ends at `len` (0 for no record).
    pub counter: u64,
}

/// The records of a segment up to some length, read into memory: the raw
/// bytes and one pointer per record, in log order.
#[derive(Debug, Clone)]
pub(crate) struct SegmentImage {
    /// The bytes read (an `Arc` of the `Vec` read into: no copy).
    pub bytes: Arc<Vec<u8>>,
    pub records: Vec<RecordPtr>,
}

impl SegmentImage {
    /// Where a record's key lies in [`bytes`](Self::bytes).
    pub fn key_range(&self, r: &RecordPtr) -> std::ops::Range<usize> {
        let start = r.offset as usize + HEADER_LEN;
        start..start + r.key_len as usize
    }

    /// Where a record's value lies in [`bytes`](Self::bytes) (`None` for
    /// a tombstone).
    pub fn value_range(&self, r: &RecordPtr) -> Option<std::ops::Range<usize>> {
        if r.tombstone {
            return None;
        }
        let start = r.offset as usize + HEADER_LEN + r.key_len as usize;
        Some(start..start + r.value_len as usize)
    }

    pub fn key(&self, r: &RecordPtr) -> &[u8] {
        let start = r.offset as usize + HEADER_LEN;
        self.bytes
            .get(start..start + r.key_len as usize)
            .unwrap_or_default()
    }

    /// The value of a record (`None` for a tombstone).
    pub fn value(&self, r: &RecordPtr) -> Option<&[u8]> {
        if r.tombstone {
            return None;
        }
        let start = r.offset as usize + HEADER_LEN + r.key_len as usize;
        self.bytes.get(start..start + r.value_len as usize)
    }
}

/// A decoded record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: u8,
    pub key_len: u32,
    pub value_len: u32,
    pub version: u64,
    pub counter: u64,
    pub body_crc: u32,
}

impl Header {
    pub fn body_len(&self) -> usize {
        self.key_len as usize + self.value_len as usize
    }
}

/// Appends one encoded record to `out`.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    seed: u32,
    key: &[u8],
    value: Option<&[u8]>,
    version: u64,
    counter: u64,
) {
    let start = out.len();
    let body_crc = checksum(checksum(seed, key), value.unwrap_or(&[]));
    out.put_u32(0); // header_crc, filled below
    out.put_u8(if value.is_some() {
        KIND_PUT
    } else {
        KIND_DELETE
    });
    out.extend_from_slice(&[0, 0, 0]);
    out.put_u32(key.len() as u32);
    out.put_u32(value.map_or(0, <[u8]>::len) as u32);
    out.put_u64(version);
    out.put_u64(counter);
    out.put_u32(body_crc);
    let crc = checksum(seed, &out[start + 4..start + HEADER_LEN]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(key);
    if let Some(v) = value {
        out.extend_from_slice(v);
    }
}

/// Decodes and checks a header. `None` if the checksum fails or a field is
/// out of range.
pub(crate) fn decode_header(bytes: &[u8], seed: u32) -> Option<Header> {
    let mut d = Decoder::new(bytes);
    let crc = d.u32()?;
    let covered = bytes.get(4..HEADER_LEN)?;
    if checksum(seed, covered) != crc {
        return None;
    }
    let kind = d.u8()?;
    let _reserved = d.bytes(3)?;
    let key_len = d.u32()?;
    let value_len = d.u32()?;
    let h = Header {
        kind,
        key_len,
        value_len,
        version: d.u64()?,
        counter: d.u64()?,
        body_crc: d.u32()?,
    };
    let ok = (kind == KIND_PUT || (kind == KIND_DELETE && value_len == 0))
        && key_len as usize <= MAX_KEY_SIZE
        && value_len as usize <= MAX_VALUE_SIZE;
    ok.then_some(h)
}

/// True if `body` (key ++ value) matches the header's checksum.
pub(crate) fn body_matches(h: &Header, body: &[u8], seed: u32) -> bool {
    checksum(seed, body) == h.body_crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_detects_every_flip() {
        let seed = 99;
        let mut buf = Vec::new();
        encode(&mut buf, seed, b"key", Some(b"value"), 7, 3);
        let h = decode_header(&buf, seed).expect("valid header");
        assert_eq!((h.key_len, h.value_len, h.version, h.counter), (3, 5, 7, 3));
        assert!(body_matches(&h, &buf[HEADER_LEN..], seed));
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            let ok = decode_header(&bad, seed)
                .map(|h| body_matches(&h, &bad[HEADER_LEN..], seed))
                .unwrap_or(false);
            assert!(!ok, "flip at byte {i} went unnoticed");
        }
        assert!(decode_header(&buf, seed + 1).is_none(), "wrong file seed");
    }
}
