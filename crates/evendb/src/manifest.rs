//! The manifest: the durable list of chunks and their files.
//!
//! Byte map of `MANIFEST` (all integers little-endian):
//!
//! ```text
//!  0  magic u64 = MANIFEST_MAGIC
//!  8  format_version u32 = 3
//! 12  body_len u32            bounded by the file length and
//!                             MAX_MANIFEST_BYTES before use
//! 16  store_id u64
//! 24  body:
//!       generation u64 | epoch u64 | next_file u64 | next_chunk_id u64
//!       | chunk_count u32
//!       per chunk, in key order:
//!         chunk_id u64 | min_key_len u32 | min_key | table u64 (0 = none)
//!         | log_count u32 | log u64 * log_count
//!       cut_count u32, then per cut, in epoch order:
//!         epoch u64 | last_version u64      (the recovery table)
//!       obsolete_count u32, then obsolete file numbers u64 * count
//! 24+body_len  crc u32 = crc32c(seed(store_id, Manifest, 0), bytes 0 .. 24+body_len)
//! ```
//!
//! `generation` grows by one at every store. `obsolete` lists files that
//! an earlier manifest referred to and this one no longer does: they may be
//! deleted, and are dropped from the list once they are gone. No other
//! file is ever deleted for being unlisted (see `db/open.rs`).
//!
//! It is replaced whole: written to `MANIFEST.tmp`, synced, renamed over
//! `MANIFEST`, and the directory synced. A crash at any step leaves either
//! the old or the new manifest, never a mix.

use crate::codec::{self, checksum, Decoder, FileKind, PutLe, StoreId};
use crate::entry::MAX_KEY_SIZE;
use crate::error::{Error, Result};
use crate::funk::FunkFiles;
use crate::vfs::Storage;
use std::path::Path;

pub(crate) const MANIFEST: &str = "MANIFEST";
pub(crate) const MANIFEST_TMP: &str = "MANIFEST.tmp";
pub(crate) const MANIFEST_MAGIC: u64 = u64::from_le_bytes(*b"EVNMANI1");
/// Format 3 added the store id, the generation and the obsolete files
/// (and file headers in tables and logs); older stores are refused.
pub(crate) const MANIFEST_FORMAT_VERSION: u32 = 3;
/// The largest manifest this build reads: far above any real one (about
/// 40 bytes plus the first key per chunk).
pub(crate) const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// The manifest's file number for checksum seeding.
const MANIFEST_SEED_NUMBER: u64 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkRecord {
    pub id: u64,
    pub min_key: Vec<u8>,
    pub files: FunkFiles,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub store: StoreId,
    /// Grows by one at every store of the manifest.
    pub generation: u64,
    pub epoch: u64,
    pub next_file: u64,
    pub next_chunk_id: u64,
    pub chunks: Vec<ChunkRecord>,
    /// The recovery table: (epoch, last visible version) of crashed epochs.
    pub cuts: Vec<(u64, u64)>,
    /// Files no longer referred to, not yet known deleted.
    pub obsolete: Vec<u64>,
    /// Range deletes (see `tombstones`).
    pub tombstones: Vec<crate::tombstones::RangeTombstone>,
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.put_u64(self.generation);
        body.put_u64(self.epoch);
        body.put_u64(self.next_file);
        body.put_u64(self.next_chunk_id);
        body.put_u32(self.chunks.len() as u32);
        for c in &self.chunks {
            body.put_u64(c.id);
            body.put_u32(c.min_key.len() as u32);
            body.extend_from_slice(&c.min_key);
            body.put_u64(c.files.table.unwrap_or(0));
            body.put_u32(c.files.logs.len() as u32);
            for &l in &c.files.logs {
                body.put_u64(l);
            }
        }
        body.put_u32(self.cuts.len() as u32);
        for &(epoch, last) in &self.cuts {
            body.put_u64(epoch);
            body.put_u64(last);
        }
        body.put_u32(self.obsolete.len() as u32);
        for &n in &self.obsolete {
            body.put_u64(n);
        }
        // Written only when there are some, so stores that never deleted
        // a range keep the layout older releases read.
        if !self.tombstones.is_empty() {
            body.put_u32(self.tombstones.len() as u32);
            for t in &self.tombstones {
                body.put_u64(t.version);
                body.put_u32(t.lo.len() as u32);
                body.extend_from_slice(&t.lo);
                match &t.hi {
                    Some(h) => {
                        body.put_u8(1);
                        body.put_u32(h.len() as u32);
                        body.extend_from_slice(h);
                    }
                    None => body.put_u8(0),
                }
            }
        }
        let mut out = Vec::with_capacity(body.len() + 28);
        out.put_u64(MANIFEST_MAGIC);
        out.put_u32(MANIFEST_FORMAT_VERSION);
        out.put_u32(body.len() as u32);
        out.put_u64(self.store.0);
        out.extend_from_slice(&body);
        let crc = checksum(
            codec::seed(self.store, FileKind::Manifest, MANIFEST_SEED_NUMBER),
            &out,
        );
        out.put_u32(crc);
        out
    }

    pub fn decode(bytes: &[u8], path: &Path) -> Result<Manifest> {
        let corrupt = |off: usize, d: &str| Error::corruption(path, off as u64, d);
        let mut d = Decoder::new(bytes);
        if d.u64() != Some(MANIFEST_MAGIC) {
            return Err(corrupt(0, "bad manifest magic"));
        }
        let version = d.u32().ok_or_else(|| corrupt(8, "short manifest"))?;
        if version != MANIFEST_FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: MANIFEST_FORMAT_VERSION,
            });
        }
        let body_len = d.u32().ok_or_else(|| corrupt(12, "short manifest"))? as usize;
        let store = StoreId(d.u64().ok_or_else(|| corrupt(16, "short manifest"))?);
        if Some(bytes.len()) != body_len.checked_add(24 + 4) {
            return Err(corrupt(12, "manifest length does not match its header"));
        }
        let (covered, tail) = bytes.split_at(24 + body_len);
        let stored = u32::from_le_bytes(tail.try_into().map_err(|_| corrupt(0, "short"))?);
        if checksum(
            codec::seed(store, FileKind::Manifest, MANIFEST_SEED_NUMBER),
            covered,
        ) != stored
        {
            return Err(corrupt(0, "manifest failed its checksum"));
        }
        let parsed = (|| {
            let generation = d.u64()?;
            let epoch = d.u64()?;
            let next_file = d.u64()?;
            let next_chunk_id = d.u64()?;
            let count = d.u32()? as usize;
            if count > d.remaining() / 24 {
                return None;
            }
            let mut chunks = Vec::with_capacity(count);
            for _ in 0..count {
                let id = d.u64()?;
                let key_len = d.u32()? as usize;
                if key_len > MAX_KEY_SIZE {
                    return None;
                }
                let min_key = d.bytes(key_len)?.to_vec();
                let table = Some(d.u64()?).filter(|&t| t != 0);
                let logs_len = d.u32()? as usize;
                if logs_len == 0 || logs_len > d.remaining() / 8 {
                    return None;
                }
                let logs = (0..logs_len).map(|_| d.u64()).collect::<Option<Vec<_>>>()?;
                chunks.push(ChunkRecord {
                    id,
                    min_key,
                    files: FunkFiles { table, logs },
                });
            }
            let n = d.u32()? as usize;
            if n > d.remaining() / 16 {
                return None;
            }
            let mut cuts = Vec::with_capacity(n);
            for _ in 0..n {
                cuts.push((d.u64()?, d.u64()?));
            }
            let n = d.u32()? as usize;
            if n > d.remaining() / 8 {
                return None;
            }
            let obsolete = (0..n).map(|_| d.u64()).collect::<Option<Vec<_>>>()?;
            let mut tombstones = Vec::new();
            if d.remaining() > 4 {
                let n = d.u32()? as usize;
                if n > d.remaining() / 13 {
                    return None;
                }
                for _ in 0..n {
                    let version = d.u64()?;
                    let lo_len = d.u32()? as usize;
                    if lo_len > MAX_KEY_SIZE {
                        return None;
                    }
                    let lo = d.bytes(lo_len)?.to_vec();
                    let hi = match d.u8()? {
                        0 => None,
                        1 => {
                            let hi_len = d.u32()? as usize;
                            if hi_len > MAX_KEY_SIZE {
                                return None;
                            }
                            Some(d.bytes(hi_len)?.to_vec())
                        }
                        _ => return None,
                    };
                    tombstones.push(crate::tombstones::RangeTombstone { lo, hi, version });
                }
            }
            (d.remaining() == 4).then_some(Manifest {
                store,
                generation,
                epoch,
                next_file,
                next_chunk_id,
                chunks,
                cuts,
                obsolete,
                tombstones,
            })
        })();
        let m = parsed.ok_or_else(|| corrupt(16, "malformed manifest body"))?;
        let partitions = m.chunks.first().is_some_and(|c| c.min_key.is_empty())
            && m.chunks.windows(2).all(|w| w[0].min_key < w[1].min_key);
        let numbered = m
            .live_files()
            .chain(m.obsolete.iter().copied())
            .all(|n| n > 0 && n < m.next_file);
        let max_epoch = (1u64 << crate::version::EPOCH_BITS) - 1;
        if m.epoch > max_epoch || m.cuts.iter().any(|&(e, _)| e > max_epoch) {
            return Err(corrupt(16, "manifest epoch out of range"));
        }
        if !numbered {
            return Err(corrupt(
                16,
                "manifest lists a file numbered at or past its next file number",
            ));
        }
        if !partitions {
            return Err(corrupt(
                16,
                "manifest chunks do not partition the key space",
            ));
        }
        Ok(m)
    }

    /// Reads the manifest of `dir`; `Ok(None)` if there is none.
    pub fn load(storage: &dyn Storage, dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST);
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        // A manifest holds at most a few bytes per chunk; refuse absurd sizes.
        if len > MAX_MANIFEST_BYTES {
            return Err(Error::corruption(
                &path,
                0,
                format!("manifest of {len} bytes is larger than the format's limit of {MAX_MANIFEST_BYTES}"),
            ));
        }
        let mut buf = vec![0u8; len as usize];
        file.read_at(0, &mut buf).map_err(|e| Error::io(&path, e))?;
        Manifest::decode(&buf, &path).map(Some)
    }

    /// Durably replaces the manifest of `dir` with `self`; the caller has
    /// advanced `generation`.
    pub fn store(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        let tmp = dir.join(MANIFEST_TMP);
        let path = dir.join(MANIFEST);
        let file = storage.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        file.write_at(0, &self.encode())
            .and_then(|()| file.sync())
            .map_err(|e| Error::io(&tmp, e))?;
        storage
            .rename(&tmp, &path)
            .map_err(|e| Error::io(&path, e))?;
        storage.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }

    /// Every file number the manifest refers to.
    pub fn live_files(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks.iter().flat_map(|c| {
            c.files
                .table
                .into_iter()
                .chain(c.files.logs.iter().copied())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            store: StoreId(0xfeed),
            generation: 12,
            epoch: 3,
            next_file: 10,
            next_chunk_id: 4,
            chunks: vec![
                ChunkRecord {
                    id: 1,
                    min_key: vec![],
                    files: FunkFiles {
                        table: Some(5),
                        logs: vec![6],
                    },
                },
                ChunkRecord {
                    id: 3,
                    min_key: b"m".to_vec(),
                    files: FunkFiles {
                        table: None,
                        logs: vec![7, 9],
                    },
                },
            ],
            cuts: vec![(2, (2 << 40) + 17)],
            obsolete: vec![2, 8],
            tombstones: Vec::new(),
        }
    }

    #[test]
    fn manifest_round_trips() {
        let m = sample();
        assert_eq!(Manifest::decode(&m.encode(), Path::new("M")).unwrap(), m);
        // Range deletes add a section only when there are some.
        let mut h = sample();
        // Range deletes, bounded and not.
        h.tombstones = vec![
            crate::tombstones::RangeTombstone {
                lo: b"app7|".to_vec(),
                hi: Some(b"app7}".to_vec()),
                version: (3 << 40) + 11,
            },
            crate::tombstones::RangeTombstone {
                lo: b"z".to_vec(),
                hi: None,
                version: (3 << 40) + 12,
            },
        ];
        assert_eq!(Manifest::decode(&h.encode(), Path::new("M")).unwrap(), h);
        assert!(h.encode().len() > m.encode().len());
    }

    #[test]
    fn a_manifest_of_another_store_with_the_same_contents_differs() {
        let mut other = sample();
        other.store = StoreId(0xbeef);
        let (a, b) = (sample().encode(), other.encode());
        assert_ne!(
            a[a.len() - 4..],
            b[b.len() - 4..],
            "store id seeds the checksum"
        );
        assert_eq!(
            Manifest::decode(&b, Path::new("M")).unwrap().store,
            StoreId(0xbeef)
        );
    }

    #[test]
    fn every_flipped_byte_of_a_manifest_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(
                Manifest::decode(&bad, Path::new("M")).is_err(),
                "flip at {i}"
            );
        }
    }
}
