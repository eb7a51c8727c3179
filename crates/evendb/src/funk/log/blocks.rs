//! Byte map of a log stored in blocks (file format 4: a sorted run written
//! whole), all integers little-endian:
//!
//! ```text
//! file header  48 bytes, format_version 4 (see `codec::FileHeader`)
//! block*       from offset 48, back to back up to the end of the file:
//!  0  crc u32         crc32c(seed, logical_offset_le64 ++ bytes 4..16 ++ body)
//!  4  codec u8        0 = the records as they are, 1 = an LZ4 block of them
//!  5  reserved [3]    zero
//!  8  stored_len u32  bytes of body (= raw_len for codec 0)
//! 12  raw_len u32     bytes of records the block holds, 1 ..= MAX_RAW_BLOCK
//! 16  body            stored_len bytes
//! ```
//!
//! The blocks hold log records (see `format`), unchanged, at **logical**
//! offsets: the first block's records start at 48, each next block's where
//! the previous block's end. Everything a segment knows of its records
//! (directory, span, block index, windows, checkpointed lengths) speaks of
//! logical offsets; only reads of the file go through the segment's
//! [`BlockMap`]. A block is compressed when that saves an eighth of it or
//! more, else stored as it is (random values cost only the attempt).
//!
//! `seed` is [`codec::seed`](crate::codec::seed) of (Log, file number) and
//! the block's logical offset is mixed in, so a block read from another
//! place or another file fails its check. The crc covers the stored bytes:
//! damage is found before anything is decompressed, and lengths are
//! bounded before anything is allocated.

use crate::codec::{checksum, Decoder, PutLe};

/// Bytes of a block's header.
pub(crate) const BLOCK_HEADER_LEN: usize = 16;
/// A block stored as its records.
const CODEC_RAW: u8 = 0;
/// A block stored LZ4-compressed.
const CODEC_LZ4: u8 = 1;
/// The most records a block may hold: a block is cut at the first record
/// past its size (4 to 16 KiB by default), and one record is at most 16 KiB of
/// key and 16 MiB of value. A larger length read from disk is corruption,
/// never allocated.
pub(crate) const MAX_RAW_BLOCK: usize = 64 << 20;

/// A block's header, its lengths bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockHead {
    crc: u32,
    codec: u8,
    pub stored_len: u32,
    pub raw_len: u32,
}

impl BlockHead {
    /// Bytes of the whole block: header and body.
    pub fn frame_len(&self) -> usize {
        BLOCK_HEADER_LEN + self.stored_len as usize
    }
}

/// Appends the block of `raw` (whole records at logical offset `logical`)
/// to `out`: LZ4-compressed if `compress` and that saves an eighth or
/// more, else as it is.
pub(crate) fn encode_block(out: &mut Vec<u8>, seed: u32, logical: u64, raw: &[u8], compress: bool) {
    let start = out.len();
    out.resize(start + BLOCK_HEADER_LEN, 0);
    let mut codec = CODEC_RAW;
    if compress && raw.len() >= 64 {
        let bound = lz4_flex::block::get_maximum_output_size(raw.len());
        out.resize(start + BLOCK_HEADER_LEN + bound, 0);
        match lz4_flex::block::compress_into(raw, &mut out[start + BLOCK_HEADER_LEN..]) {
            Ok(n) if n < raw.len() - raw.len() / 8 => {
                out.truncate(start + BLOCK_HEADER_LEN + n);
                codec = CODEC_LZ4;
            }
            _ => out.truncate(start + BLOCK_HEADER_LEN),
        }
    }
    if codec == CODEC_RAW {
        out.extend_from_slice(raw);
    }
    let stored = (out.len() - start - BLOCK_HEADER_LEN) as u32;
    let mut head = Vec::with_capacity(12);
    head.put_u8(codec);
    head.extend_from_slice(&[0, 0, 0]);
    head.put_u32(stored);
    head.put_u32(raw.len() as u32);
    out[start + 4..start + BLOCK_HEADER_LEN].copy_from_slice(&head);
    let crc = block_crc(seed, logical, &out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

fn block_crc(seed: u32, logical: u64, covered: &[u8]) -> u32 {
    checksum(checksum(seed, &logical.to_le_bytes()), covered)
}

/// Decodes a block header and bounds its lengths (the crc is checked with
/// the body, by [`decode_block`]).
pub(crate) fn decode_head(bytes: &[u8]) -> Result<BlockHead, &'static str> {
    let mut d = Decoder::new(bytes);
    let short = "a block header cut short";
    let crc = d.u32().ok_or(short)?;
    let codec = d.u8().ok_or(short)?;
    if d.bytes(3).ok_or(short)? != [0, 0, 0] {
        return Err("a block header's reserved bytes are not zero");
    }
    let stored_len = d.u32().ok_or(short)?;
    let raw_len = d.u32().ok_or(short)?;
    if raw_len == 0 || raw_len as usize > MAX_RAW_BLOCK {
        return Err("a block's length is out of bounds");
    }
    let bounded = match codec {
        CODEC_RAW => stored_len == raw_len,
        CODEC_LZ4 => {
            (stored_len as usize) <= lz4_flex::block::get_maximum_output_size(raw_len as usize)
        }
        _ => return Err("a block of an unknown codec"),
    };
    if !bounded {
        return Err("a block's stored length does not fit its length");
    }
    Ok(BlockHead {
        crc,
        codec,
        stored_len,
        raw_len,
    })
}

/// Checks the block `frame` (header and body, exactly) read at logical
/// offset `logical` and appends its records to `out`.
pub(crate) fn decode_block(
    frame: &[u8],
    seed: u32,
    logical: u64,
    out: &mut Vec<u8>,
) -> Result<BlockHead, &'static str> {
    let head = decode_head(frame)?;
    if frame.len() != head.frame_len() {
        return Err("a block cut short");
    }
    let covered = frame.get(4..).ok_or("a block cut short")?;
    if block_crc(seed, logical, covered) != head.crc {
        return Err("log block failed its checksum");
    }
    let body = frame.get(BLOCK_HEADER_LEN..).ok_or("a block cut short")?;
    match head.codec {
        CODEC_LZ4 => {
            let at = out.len();
            out.resize(at + head.raw_len as usize, 0);
            let n = lz4_flex::block::decompress_into(body, &mut out[at..]);
            if n.ok() != Some(head.raw_len as usize) {
                out.truncate(at);
                return Err("log block does not decompress to its length");
            }
        }
        _ => out.extend_from_slice(body),
    }
    Ok(head)
}

/// Where the blocks of a segment lie: per block, its logical offset (of
/// its first record) and its file offset (of its header), both ascending,
/// and where the last block ends in both. 16 bytes a block (0.1-0.4% of
/// a run), charged as filter memory.
#[derive(Debug, Clone)]
pub(crate) struct BlockMap {
    starts: Vec<(u64, u64)>,
    end: (u64, u64),
}

impl BlockMap {
    /// The map of a segment with no block yet, whose records and blocks
    /// start at `first`.
    pub fn new(first: u64) -> Self {
        BlockMap {
            starts: Vec::new(),
            end: (first, first),
        }
    }

    /// Adds a block at the end: its records `logical..logical_end`, its
    /// bytes `file..file_end`.
    pub fn push(&mut self, logical: u64, file: u64, logical_end: u64, file_end: u64) {
        self.starts.push((logical, file));
        self.end = (logical_end, file_end);
    }

    /// Logical and file offsets where the last block ends.
    pub fn end(&self) -> (u64, u64) {
        self.end
    }

    /// Memory the map takes.
    pub fn bytes(&self) -> u64 {
        self.starts.len() as u64 * 16
    }

    /// Logical starts of the blocks, and the end last.
    #[cfg(test)]
    pub fn logical_offsets(&self) -> Vec<u64> {
        self.starts
            .iter()
            .map(|s| s.0)
            .chain([self.end.0])
            .collect()
    }

    /// (logical, file) start of block `i`; the end for `i == len()`.
    pub fn at(&self, i: usize) -> (u64, u64) {
        self.starts.get(i).copied().unwrap_or(self.end)
    }

    /// The blocks `i..j` that hold the logical bytes `start..end`
    /// (`start < end`), or `None` if those are not all in blocks.
    pub fn cover(&self, start: u64, end: u64) -> Option<(usize, usize)> {
        if start >= end || end > self.end.0 || self.starts.first()?.0 > start {
            return None;
        }
        let i = self.starts.partition_point(|s| s.0 <= start) - 1;
        let j = self.starts.partition_point(|s| s.0 < end);
        Some((i, j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_records(n: usize) -> Vec<u8> {
        let mut raw = Vec::new();
        for i in 0..n {
            let value = format!("{{\"user\":\"user{i:08}\",\"field\":\"lorem ipsum dolor\"}}");
            super::super::format::encode(
                &mut raw,
                7,
                format!("key{i:08}").as_bytes(),
                Some(value.as_bytes()),
                i as u64,
                i as u64,
            );
        }
        raw
    }

    #[test]
    fn a_compressible_block_round_trips_smaller() {
        let raw = json_records(40);
        let mut frame = Vec::new();
        encode_block(&mut frame, 7, 48, &raw, true);
        assert!(
            frame.len() < raw.len() / 2,
            "{} stored for {} bytes",
            frame.len(),
            raw.len()
        );
        let mut out = vec![1, 2, 3];
        let head = decode_block(&frame, 7, 48, &mut out).expect("a valid block");
        assert_eq!(head.frame_len(), frame.len());
        assert_eq!(&out[3..], &raw[..], "appended after what the buffer held");
    }

    #[test]
    fn an_incompressible_block_is_stored_raw() {
        let mut rng = fastrand::Rng::with_seed(5);
        let raw: Vec<u8> = (0..4096).map(|_| rng.u8(..)).collect();
        let mut frame = Vec::new();
        encode_block(&mut frame, 7, 48, &raw, true);
        assert_eq!(frame.len(), BLOCK_HEADER_LEN + raw.len());
        assert_eq!(frame[4], CODEC_RAW);
        assert_eq!(&frame[BLOCK_HEADER_LEN..], &raw[..]);
        let mut out = Vec::new();
        decode_block(&frame, 7, 48, &mut out).expect("a valid block");
        assert_eq!(out, raw);
        // Without compression asked, even compressible records are raw.
        let raw = json_records(40);
        frame.clear();
        encode_block(&mut frame, 7, 48, &raw, false);
        assert_eq!(frame[4], CODEC_RAW);
    }

    #[test]
    fn every_flipped_byte_and_every_wrong_place_is_detected() {
        for raw in [json_records(30), vec![9u8; 100]] {
            for compress in [true, false] {
                let mut frame = Vec::new();
                encode_block(&mut frame, 7, 1000, &raw, compress);
                for i in 0..frame.len() {
                    for bit in [0x01, 0x80] {
                        let mut bad = frame.clone();
                        bad[i] ^= bit;
                        let mut out = Vec::new();
                        // A length flipped may make the frame look short
                        // or long; either way it must not decode.
                        assert!(
                            decode_block(&bad, 7, 1000, &mut out).is_err(),
                            "flip {bit:#x} at byte {i} went unnoticed"
                        );
                    }
                }
                let mut out = Vec::new();
                assert!(
                    decode_block(&frame, 8, 1000, &mut out).is_err(),
                    "other file"
                );
                assert!(
                    decode_block(&frame, 7, 1001, &mut out).is_err(),
                    "other place"
                );
                assert!(decode_block(&frame[..frame.len() - 1], 7, 1000, &mut out).is_err());
                assert!(out.is_empty(), "nothing is appended from a bad block");
            }
        }
    }

    #[test]
    fn lengths_out_of_bounds_are_refused_before_any_allocation() {
        let mut frame = Vec::new();
        encode_block(&mut frame, 7, 48, &[5u8; 200], true);
        let mut huge = frame.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_head(&huge).is_err());
        let mut zero = frame.clone();
        zero[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert!(decode_head(&zero).is_err());
        let mut codec = frame;
        codec[4] = 9;
        assert!(decode_head(&codec).is_err());
    }

    #[test]
    fn a_map_finds_the_blocks_of_any_logical_range() {
        let mut m = BlockMap::new(48);
        assert_eq!(m.cover(48, 49), None, "no block yet");
        m.push(48, 48, 4100, 1000);
        m.push(4100, 1000, 8200, 2000);
        m.push(8200, 2000, 9000, 2800);
        assert_eq!(m.cover(48, 4100), Some((0, 1)));
        assert_eq!(m.cover(100, 4101), Some((0, 2)));
        assert_eq!(m.cover(4100, 9000), Some((1, 3)));
        assert_eq!(m.cover(8999, 9000), Some((2, 3)));
        assert_eq!(m.cover(8999, 9001), None, "past the end");
        assert_eq!(m.cover(40, 100), None, "before the first block");
        assert_eq!(m.at(3), (9000, 2800));
        assert_eq!(m.bytes(), 48);
    }
}
