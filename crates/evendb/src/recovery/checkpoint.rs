//! The checkpoint file: the last version of the current epoch known durable
//! in every chunk, and the durable length of every log.
//!
//! Byte map of one checkpoint slot (all integers little-endian):
//!
//! ```text
//!  0  magic u64 = CHECKPOINT_MAGIC
//!  8  format_version u32 = 2
//! 12  body_len u32          bounded by the file and MAX_BODY before use
//! 16  store_id u64
//! 24  sequence u64          grows by one per checkpoint written
//! 32  epoch u64
//! 40  version u64           every put of `epoch` at or below it is durable
//! 48  generation u64        the manifest generation current when written
//! 56  stride u32            where the second slot is (a power of two)
//! 60  body_crc u32 = crc32c(seed, body)
//! 64  reserved u32 = 0
//! 68  head_crc u32 = crc32c(seed, bytes 0..68)
//! 72  body: log_count u32, then per log, by number:
//!       number u64 | durable_len u64 | counter u64 (of the record ending
//!       at durable_len)
//! ```
//!
//! `seed` is `codec::seed(store_id, Checkpoint, 1)`. The file holds two
//! slots, at offset 0 and at `stride` (4 KiB, doubled while a slot does not
//! fit). A checkpoint is written to both, one after the other, each synced
//! before the next write starts, so a torn write leaves the other slot
//! whole. When a slot outgrows the stride, the copy at the new, larger
//! stride is written first, so the one at 0 can grow over the old second
//! slot. Reading tries offset 0 and every power of two from 4 KiB below the
//! file's length, and takes the valid slot with the largest sequence. A slot
//! of another store is an error, never skipped.

use crate::codec::{self, checksum, Decoder, FileKind, PutLe, StoreId};
use crate::error::{Error, Result};
use crate::funk::log::{DurableLengths, DurableMark};
use crate::vfs::{Storage, StorageFile};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const CHECKPOINT: &str = "CHECKPOINT";
const CHECKPOINT_MAGIC: u64 = u64::from_le_bytes(*b"EVNCKPT2");
const CHECKPOINT_FORMAT_VERSION: u32 = 2;
/// The checkpoint file's number for checksum seeding.
const SEED_NUMBER: u64 = 1;
const HEAD_LEN: usize = 72;
/// The smallest distance between the slots: they sit in different sectors.
const MIN_STRIDE: u64 = 4096;
/// The largest body this build reads: 2.7 million logs.
const MAX_BODY: u64 = 64 << 20;

/// A checkpoint as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub sequence: u64,
    pub epoch: u64,
    pub version: u64,
    pub generation: u64,
}

struct Head {
    store: StoreId,
    c: Checkpoint,
    stride: u64,
    body_len: u32,
    body_crc: u32,
}

fn encode(store: StoreId, c: &Checkpoint, stride: u64, logs: &[(u64, DurableMark)]) -> Vec<u8> {
    let seed = codec::seed(store, FileKind::Checkpoint, SEED_NUMBER);
    let mut body = Vec::with_capacity(4 + logs.len() * 24);
    body.put_u32(logs.len() as u32);
    for (n, m) in logs {
        body.put_u64(*n);
        body.put_u64(m.len);
        body.put_u64(m.counter);
    }
    let mut out = Vec::with_capacity(HEAD_LEN + body.len());
    out.put_u64(CHECKPOINT_MAGIC);
    out.put_u32(CHECKPOINT_FORMAT_VERSION);
    out.put_u32(body.len() as u32);
    out.put_u64(store.0);
    out.put_u64(c.sequence);
    out.put_u64(c.epoch);
    out.put_u64(c.version);
    out.put_u64(c.generation);
    out.put_u32(stride.trailing_zeros());
    out.put_u32(checksum(seed, &body));
    out.put_u32(0);
    let crc = checksum(seed, &out);
    out.put_u32(crc);
    out.extend_from_slice(&body);
    out
}

/// The head of the slot in `bytes`, if it is whole: `Err` with the store
/// id for a valid slot of another store.
fn decode_head(bytes: &[u8]) -> Option<Head> {
    let covered = bytes.get(..HEAD_LEN - 4)?;
    let mut d = Decoder::new(bytes);
    if d.u64()? != CHECKPOINT_MAGIC || d.u32()? != CHECKPOINT_FORMAT_VERSION {
        return None;
    }
    let body_len = d.u32()?;
    let store = StoreId(d.u64()?);
    let c = Checkpoint {
        sequence: d.u64()?,
        epoch: d.u64()?,
        version: d.u64()?,
        generation: d.u64()?,
    };
    let shift = d.u32()?;
    let body_crc = d.u32()?;
    let _reserved = d.u32()?;
    let crc = d.u32()?;
    let seed = codec::seed(store, FileKind::Checkpoint, SEED_NUMBER);
    let stride = 1u64.checked_shl(shift).filter(|&s| s >= MIN_STRIDE)?;
    (checksum(seed, covered) == crc).then_some(Head {
        store,
        c,
        stride,
        body_len,
        body_crc,
    })
}

fn decode_body(body: &[u8], head: &Head) -> Option<Vec<(u64, DurableMark)>> {
    let seed = codec::seed(head.store, FileKind::Checkpoint, SEED_NUMBER);
    if checksum(seed, body) != head.body_crc {
        return None;
    }
    let mut d = Decoder::new(body);
    let n = d.u32()? as usize;
    if n.checked_mul(24)? != d.remaining() {
        return None;
    }
    (0..n)
        .map(|_| {
            Some((
                d.u64()?,
                DurableMark {
                    len: d.u64()?,
                    counter: d.u64()?,
                },
            ))
        })
        .collect()
}

/// What an open found in the checkpoint file.
#[derive(Debug)]
pub(crate) struct OpenedCheckpoints {
    pub file: CheckpointFile,
    /// The newest whole checkpoint.
    pub newest: Option<Checkpoint>,
    /// The durable log lengths it recorded.
    pub logs: DurableLengths,
    /// Slots that should hold a checkpoint but do not (torn at a crash, or
    /// damaged).
    pub invalid: u64,
}

/// The open checkpoint file.
#[derive(Debug)]
pub(crate) struct CheckpointFile {
    path: PathBuf,
    store: StoreId,
    file: Arc<dyn StorageFile>,
    /// The last checkpoint written (or read) and the stride of its second
    /// copy.
    last: Mutex<(Option<Checkpoint>, u64)>,
    /// The slot that must be written last: the only one holding the newest
    /// checkpoint when the other is older or unreadable (a crash between
    /// the two writes). `None` while both hold the same.
    keep_last: Mutex<Option<u64>>,
}

impl CheckpointFile {
    /// Creates an empty checkpoint file (synced, with its directory): for a
    /// new store only.
    pub fn create(storage: &dyn Storage, dir: &Path) -> Result<()> {
        let path = dir.join(CHECKPOINT);
        let f = storage.create(&path).map_err(|e| Error::io(&path, e))?;
        f.sync().map_err(|e| Error::io(&path, e))?;
        storage.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }

    /// Opens the checkpoint file of store `store` and reads its newest
    /// whole checkpoint, without writing anything. A missing file is
    /// [`Error::MissingFile`]; a slot of another store is corruption.
    pub fn open(storage: &dyn Storage, dir: &Path, store: StoreId) -> Result<OpenedCheckpoints> {
        let path = dir.join(CHECKPOINT);
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile(path))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        let mut at_candidates = vec![0u64];
        let mut s = MIN_STRIDE;
        while s < len {
            at_candidates.push(s);
            s = s.saturating_mul(2);
        }
        let mut best: Option<(Head, Vec<(u64, DurableMark)>)> = None;
        let mut best_at = 0;
        let mut valid_at = Vec::new();
        let mut sequences = Vec::new();
        for at in at_candidates {
            if len < at + HEAD_LEN as u64 {
                continue;
            }
            let mut buf = [0u8; HEAD_LEN];
            file.read_at(at, &mut buf)
                .map_err(|e| Error::io(&path, e))?;
            let Some(head) = decode_head(&buf) else {
                continue;
            };
            let body_len = u64::from(head.body_len);
            if body_len > MAX_BODY || at + HEAD_LEN as u64 + body_len > len {
                continue;
            }
            let mut body = vec![0u8; head.body_len as usize];
            file.read_at(at + HEAD_LEN as u64, &mut body)
                .map_err(|e| Error::io(&path, e))?;
            let Some(logs) = decode_body(&body, &head) else {
                continue;
            };
            if head.store != store {
                return Err(Error::corruption(
                    &path,
                    at,
                    format!(
                        "checkpoint belongs to store {}, not to this store {store}",
                        head.store
                    ),
                ));
            }
            valid_at.push(at);
            sequences.push(head.c.sequence);
            if best
                .as_ref()
                .is_none_or(|(b, _)| head.c.sequence > b.c.sequence)
            {
                best_at = at;
                best = Some((head, logs));
            }
        }
        let stride = best.as_ref().map_or(MIN_STRIDE, |(h, _)| h.stride);
        // An empty file is a new store's, before its first checkpoint.
        let invalid = if len == 0 {
            0
        } else {
            [0, stride]
                .iter()
                .filter(|at| !valid_at.contains(at))
                .count() as u64
        };
        if invalid > 0 {
            log::warn!(
                "{}: {invalid} of its 2 checkpoint slots are unreadable (torn at a crash, or damaged){}",
                path.display(),
                if best.is_some() { "; using the other" } else { "" }
            );
        }
        // Only one slot holds the newest checkpoint: the next one is
        // written to the other slot first, so a crash while writing cannot
        // lose it (it would leave an older checkpoint than the manifest
        // knows of).
        let newest_seq = best.as_ref().map(|(h, _)| h.c.sequence);
        let copies = sequences.iter().filter(|&&q| Some(q) == newest_seq).count();
        let keep_last = (best.is_some() && copies < 2).then_some(best_at);
        let newest = best.as_ref().map(|(h, _)| h.c);
        let logs = best
            .map(|(_, l)| l.into_iter().collect())
            .unwrap_or_default();
        Ok(OpenedCheckpoints {
            file: CheckpointFile {
                path,
                store,
                file,
                last: Mutex::new((newest, stride)),
                keep_last: Mutex::new(keep_last),
            },
            newest,
            logs,
            invalid,
        })
    }

    /// The last checkpoint written or read.
    pub fn last(&self) -> Option<Checkpoint> {
        self.last.lock().0
    }

    /// Durably records that every put of `epoch` at or below `version` is
    /// durable, that `generation` is the manifest's, and the logs' durable
    /// lengths. A checkpoint older than the last one recorded is not
    /// written: checkpoints only move forward.
    pub fn record(
        &self,
        epoch: u64,
        version: u64,
        generation: u64,
        logs: &DurableLengths,
    ) -> Result<()> {
        let mut last = self.last.lock();
        let (prev, stride) = *last;
        if prev.is_some_and(|c| (c.epoch, c.version, c.generation) > (epoch, version, generation)) {
            return Ok(());
        }
        let c = Checkpoint {
            sequence: prev.map_or(1, |c| c.sequence.saturating_add(1)),
            epoch,
            version,
            generation,
        };
        let mut sorted: Vec<(u64, DurableMark)> = logs.iter().map(|(&n, &m)| (n, m)).collect();
        sorted.sort_unstable_by_key(|&(n, _)| n);
        let need = (HEAD_LEN + 4 + sorted.len() * 24) as u64;
        let mut new_stride = stride.max(MIN_STRIDE);
        while new_stride < need {
            new_stride = new_stride.saturating_mul(2);
        }
        let bytes = encode(self.store, &c, new_stride, &sorted);
        // The copy at the stride first when the stride grows: the copy at
        // 0 then grows over the old second slot. Else the slot holding the
        // only copy of the newest checkpoint last.
        let mut keep_last = self.keep_last.lock();
        let order = if new_stride > stride || *keep_last == Some(0) {
            [new_stride, 0]
        } else {
            [0, new_stride]
        };
        for (at, other) in [(order[0], order[1]), (order[1], order[0])] {
            // While `at` is written (and may be left torn), `other` holds
            // the newest whole checkpoint: the old one, then the new one.
            *keep_last = Some(other);
            self.file
                .write_at(at, &bytes)
                .and_then(|()| self.file.sync())
                .map_err(|e| Error::io(&self.path, e))?;
        }
        *keep_last = None;
        *last = (Some(c), new_stride);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{CrashMode, Fault, MemFs};

    const STORE: StoreId = StoreId(0x51);

    fn dir() -> &'static Path {
        Path::new("/ck")
    }

    fn fresh() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir_all(dir()).unwrap();
        CheckpointFile::create(&fs, dir()).unwrap();
        fs
    }

    fn logs(n: u64) -> DurableLengths {
        (1..=n)
            .map(|i| {
                (
                    i,
                    DurableMark {
                        len: 48 + i * 100,
                        counter: i * 3,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_newest_whole_checkpoint_wins() {
        let fs = fresh();
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        assert_eq!(o.newest, None);
        o.file.record(3, 100, 1, &logs(1)).unwrap();
        o.file.record(3, 200, 1, &logs(2)).unwrap();
        o.file.record(3, 300, 2, &logs(3)).unwrap();
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        assert_eq!(
            o.newest.map(|c| (c.epoch, c.version, c.generation)),
            Some((3, 300, 2))
        );
        assert_eq!(o.logs, logs(3));
        assert_eq!(o.invalid, 0);
    }

    /// A crash between the two writes leaves the newest checkpoint in one
    /// slot only; a crash during the next checkpoint must not tear that
    /// slot (the store would then hold an older checkpoint than its
    /// manifest knows of).
    #[test]
    fn the_only_copy_of_the_newest_checkpoint_is_written_last() {
        // Operations of a record: write, sync, write, sync. A failed sync
        // leaves its write pending, kept in part (torn) or not at the crash.
        for (sync, seed) in [2u64, 4]
            .into_iter()
            .flat_map(|n| (0..20).map(move |s| (n, s)))
        {
            let fs = fresh();
            let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
            o.file.record(5, 100, 1, &logs(1)).unwrap();
            // Version 200 reaches one slot: the second write fails.
            fs.set_fault(Some(Fault::CrashAt(3)));
            assert!(o.file.record(5, 200, 1, &logs(1)).is_err());
            fs.crash(CrashMode::DropUnsynced);
            let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
            assert_eq!(o.newest.map(|c| c.version), Some(200));
            // A crash at the first or the second sync of the next one.
            fs.set_fault(Some(Fault::CrashAt(sync)));
            assert!(o.file.record(5, 300, 1, &logs(1)).is_err());
            fs.crash(CrashMode::Random { seed });
            let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
            let v = o.newest.map(|c| c.version);
            assert!(
                v == Some(200) || v == Some(300),
                "crash at op {sync}, seed {seed}: {v:?}"
            );
        }
    }

    #[test]
    fn slots_grow_past_one_sector_and_are_read_back() {
        let fs = fresh();
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        for (i, n) in [10u64, 400, 3000, 50].into_iter().enumerate() {
            o.file.record(4, 10 + i as u64, 1, &logs(n)).unwrap();
            let r = CheckpointFile::open(&fs, dir(), STORE).unwrap();
            assert_eq!((r.logs.len() as u64, r.invalid), (n, 0), "{n} logs");
        }
    }

    #[test]
    fn a_missing_file_is_an_error_and_an_empty_one_has_no_checkpoint() {
        let fs = MemFs::new();
        fs.create_dir_all(dir()).unwrap();
        assert!(matches!(
            CheckpointFile::open(&fs, dir(), STORE),
            Err(Error::MissingFile(_))
        ));
        CheckpointFile::create(&fs, dir()).unwrap();
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        assert_eq!((o.newest, o.invalid), (None, 0), "a new store's empty file");
        assert!(fs.write_file(&dir().join(CHECKPOINT), &[0u8; 100]));
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        assert_eq!(
            (o.newest, o.invalid),
            (None, 2),
            "both slots count as unreadable"
        );
    }

    #[test]
    fn a_checkpoint_of_another_store_is_refused() {
        let fs = fresh();
        let o = CheckpointFile::open(&fs, dir(), StoreId(0x99)).unwrap();
        o.file.record(3, 100, 1, &logs(2)).unwrap();
        let err = CheckpointFile::open(&fs, dir(), STORE).unwrap_err();
        assert!(err.to_string().contains("belongs to store"), "{err}");
    }

    #[test]
    fn a_torn_checkpoint_leaves_the_previous_one_or_the_new_one() {
        // A crash at each step of a checkpoint (two writes, two syncs),
        // keeping a random part of what was not synced; also when the new
        // checkpoint outgrows the stride.
        for grow in [false, true] {
            for step in 1..=4 {
                for seed in 0..20 {
                    let fs = fresh();
                    let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
                    o.file.record(5, 10, 1, &logs(3)).unwrap();
                    fs.set_fault(Some(Fault::CrashAt(step)));
                    let next = if grow { logs(500) } else { logs(4) };
                    assert!(o.file.record(5, 20, 1, &next).is_err());
                    fs.crash(CrashMode::Random { seed });
                    let r = CheckpointFile::open(&fs, dir(), STORE).unwrap();
                    let ok = match r.newest {
                        Some(c) if c.version == 10 => r.logs == logs(3),
                        Some(c) if c.version == 20 => r.logs == next,
                        _ => false,
                    };
                    assert!(ok, "grow {grow}, step {step}, seed {seed}: {:?}", r.newest);
                }
            }
        }
    }

    #[test]
    fn a_damaged_slot_is_reported_and_the_other_copy_used() {
        let fs = fresh();
        let o = CheckpointFile::open(&fs, dir(), STORE).unwrap();
        o.file.record(5, 10, 1, &logs(2)).unwrap();
        o.file.record(5, 30, 1, &logs(2)).unwrap();
        let path = dir().join(CHECKPOINT);
        for at in [
            3usize,
            80,
            MIN_STRIDE as usize + 30,
            MIN_STRIDE as usize + 90,
        ] {
            let mut bytes = fs.read_file(&path).unwrap();
            bytes[at] ^= 1;
            let g = MemFs::new();
            g.create_dir_all(dir()).unwrap();
            g.create(&path).unwrap();
            assert!(g.write_file(&path, &bytes));
            let r = CheckpointFile::open(&g, dir(), STORE).unwrap();
            assert_eq!(
                (r.newest.map(|c| c.version), r.invalid),
                (Some(30), 1),
                "flip at {at}"
            );
        }
    }

    #[test]
    fn every_flipped_byte_of_a_slot_is_detected() {
        let c = Checkpoint {
            sequence: 7,
            epoch: 2,
            version: 99,
            generation: 4,
        };
        let marks: Vec<_> = logs(2).into_iter().collect();
        let good = encode(STORE, &c, MIN_STRIDE, &marks);
        let whole = |b: &[u8]| {
            decode_head(b).and_then(|h| {
                let body = b.get(HEAD_LEN..)?;
                decode_body(body, &h).map(|_| h.c)
            })
        };
        assert_eq!(whole(&good), Some(c));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert_ne!(whole(&bad), Some(c), "flip at {i}");
        }
    }
}
