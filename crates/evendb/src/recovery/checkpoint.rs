//! The checkpoint file: the last version of the current epoch known durable
//! in every chunk.
//!
//! Byte map of `CHECKPOINT` (all integers little-endian): two slots, at
//! offsets 0 and [`SLOT_STRIDE`], each
//!
//! ```text
//!  0  magic u64 = CHECKPOINT_MAGIC
//!  8  format_version u32 = 1
//! 12  reserved u32 = 0
//! 16  sequence u64          grows by one per checkpoint written
//! 24  epoch u64
//! 32  version u64           every put of `epoch` at or below it is durable
//! 40  crc u32 = crc32c(seed, bytes 0..40)
//! ```
//!
//! A checkpoint is written to slot 0 and synced, then to slot 1 and synced,
//! so at any moment at most one slot is being written: a torn write leaves
//! the other slot whole (the previous checkpoint, or already the new one),
//! and a slot damaged later is repaired by the copy in the other. Reading
//! takes the valid slot with the larger sequence and reports invalid ones;
//! the bytes between the slots are unused.

use crate::codec::{self, checksum, Decoder, FileKind, PutLe};
use crate::error::{Error, Result};
use crate::vfs::{Storage, StorageFile};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const CHECKPOINT: &str = "CHECKPOINT";
const CHECKPOINT_MAGIC: u64 = u64::from_le_bytes(*b"EVNCKPT1");
const CHECKPOINT_FORMAT_VERSION: u32 = 1;
/// The checkpoint file's number for checksum seeding.
const SEED_NUMBER: u64 = 1;
const SLOT_LEN: usize = 44;
/// Slots sit in different disk sectors.
const SLOT_STRIDE: u64 = 4096;

/// A checkpoint as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub sequence: u64,
    pub epoch: u64,
    pub version: u64,
}

impl Checkpoint {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SLOT_LEN);
        out.put_u64(CHECKPOINT_MAGIC);
        out.put_u32(CHECKPOINT_FORMAT_VERSION);
        out.put_u32(0);
        out.put_u64(self.sequence);
        out.put_u64(self.epoch);
        out.put_u64(self.version);
        let crc = checksum(codec::seed(FileKind::Checkpoint, SEED_NUMBER), &out);
        out.put_u32(crc);
        out
    }

    /// The checkpoint in `slot`, if the slot holds a whole one.
    fn decode(slot: &[u8]) -> Option<Checkpoint> {
        let covered = slot.get(..40)?;
        let mut d = Decoder::new(slot);
        if d.u64()? != CHECKPOINT_MAGIC || d.u32()? != CHECKPOINT_FORMAT_VERSION {
            return None;
        }
        let _reserved = d.u32()?;
        let c = Checkpoint {
            sequence: d.u64()?,
            epoch: d.u64()?,
            version: d.u64()?,
        };
        let crc = d.u32()?;
        (checksum(codec::seed(FileKind::Checkpoint, SEED_NUMBER), covered) == crc).then_some(c)
    }
}

/// The open checkpoint file.
#[derive(Debug)]
pub(crate) struct CheckpointFile {
    path: PathBuf,
    file: Arc<dyn StorageFile>,
    /// The last checkpoint written (or read); the next goes to the other slot.
    last: Mutex<Option<Checkpoint>>,
}

impl CheckpointFile {
    /// Opens the store's checkpoint file, creating it (synced, with its
    /// directory) if missing. Returns the file and the newest whole
    /// checkpoint in it.
    /// Also returns how many slots were present but invalid (a torn write
    /// at a crash, or damage).
    pub fn open(
        storage: &dyn Storage,
        dir: &Path,
    ) -> Result<(CheckpointFile, Option<Checkpoint>, u64)> {
        let path = dir.join(CHECKPOINT);
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let f = storage.create(&path).map_err(|e| Error::io(&path, e))?;
                f.sync().map_err(|e| Error::io(&path, e))?;
                storage.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
                f
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        let mut best: Option<Checkpoint> = None;
        let mut invalid = 0;
        for slot in 0..2u64 {
            let at = slot * SLOT_STRIDE;
            if len < at + SLOT_LEN as u64 {
                continue;
            }
            let mut buf = [0u8; SLOT_LEN];
            file.read_at(at, &mut buf)
                .map_err(|e| Error::io(&path, e))?;
            match Checkpoint::decode(&buf) {
                Some(c) => {
                    if best.is_none_or(|b| c.sequence > b.sequence) {
                        best = Some(c);
                    }
                }
                None => {
                    log::warn!(
                        "{}: checkpoint slot {slot} is invalid (torn at a crash, or damaged); using the other",
                        path.display()
                    );
                    invalid += 1;
                }
            }
        }
        Ok((
            CheckpointFile {
                path,
                file,
                last: Mutex::new(best),
            },
            best,
            invalid,
        ))
    }

    /// Durably records that every put of `epoch` at or below `version` is
    /// durable.
    /// A checkpoint older than the last one recorded is not written:
    /// checkpoints only move forward.
    pub fn record(&self, epoch: u64, version: u64) -> Result<()> {
        let mut last = self.last.lock();
        if last.is_some_and(|c| (c.epoch, c.version) >= (epoch, version)) {
            return Ok(());
        }
        let sequence = last.map_or(1, |c| c.sequence + 1);
        let c = Checkpoint {
            sequence,
            epoch,
            version,
        };
        let bytes = c.encode();
        for slot in 0..2 {
            self.file
                .write_at(slot * SLOT_STRIDE, &bytes)
                .and_then(|()| self.file.sync())
                .map_err(|e| Error::io(&self.path, e))?;
        }
        *last = Some(c);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{CrashMode, Fault, MemFs};

    fn dir() -> &'static Path {
        Path::new("/ck")
    }

    #[test]
    fn the_newest_whole_checkpoint_wins() {
        let fs = MemFs::new();
        fs.create_dir_all(dir()).unwrap();
        let (f, none, _) = CheckpointFile::open(&fs, dir()).unwrap();
        assert_eq!(none, None);
        f.record(3, 100).unwrap();
        f.record(3, 200).unwrap();
        f.record(3, 300).unwrap();
        let (_, best, _) = CheckpointFile::open(&fs, dir()).unwrap();
        assert_eq!(best.map(|c| (c.epoch, c.version)), Some((3, 300)));
    }

    #[test]
    fn a_torn_checkpoint_leaves_the_previous_one_or_the_new_one() {
        // A crash at each step of a checkpoint (two writes, two syncs),
        // keeping a random part of what was not synced.
        for step in 1..=4 {
            for seed in 0..20 {
                let fs = MemFs::new();
                fs.create_dir_all(dir()).unwrap();
                let (f, _, _) = CheckpointFile::open(&fs, dir()).unwrap();
                f.record(5, 10).unwrap();
                fs.set_fault(Some(Fault::CrashAt(step)));
                assert!(f.record(5, 20).is_err());
                fs.crash(CrashMode::Random { seed });
                let (_, best, _) = CheckpointFile::open(&fs, dir()).unwrap();
                assert!(
                    matches!(best, Some(c) if c.epoch == 5 && (c.version == 10 || c.version == 20)),
                    "step {step}, seed {seed}: {best:?}"
                );
            }
        }
    }

    #[test]
    fn a_damaged_slot_is_reported_and_the_other_copy_used() {
        let fs = MemFs::new();
        fs.create_dir_all(dir()).unwrap();
        let (f, _, _) = CheckpointFile::open(&fs, dir()).unwrap();
        f.record(5, 10).unwrap();
        f.record(5, 30).unwrap();
        let path = dir().join(CHECKPOINT);
        for at in [3usize, SLOT_STRIDE as usize + 30] {
            let mut bytes = fs.read_file(&path).unwrap();
            bytes[at] ^= 1;
            let g = MemFs::new();
            g.create_dir_all(dir()).unwrap();
            g.create(&path).unwrap();
            assert!(g.write_file(&path, &bytes));
            let (_, best, invalid) = CheckpointFile::open(&g, dir()).unwrap();
            assert_eq!((best.map(|c| c.version), invalid), (Some(30), 1));
        }
    }

    #[test]
    fn every_flipped_byte_of_a_slot_is_detected() {
        let c = Checkpoint {
            sequence: 7,
            epoch: 2,
            version: 99,
        };
        let good = c.encode();
        assert_eq!(Checkpoint::decode(&good), Some(c));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert_ne!(Checkpoint::decode(&bad), Some(c), "flip at {i}");
        }
    }
}
