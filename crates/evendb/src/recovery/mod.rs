//! Recovery to a consistent point: which versions written before a crash
//! may be read.
//!
//! Every version carries its epoch in its top bits (see `version`), and the
//! epoch grows at every open. In `Buffered` mode a background checkpoint
//! records, every interval, a version of the current epoch at or below
//! which every put is durable in every chunk (`checkpoint`). When an open
//! finds that the previous epoch ended without recording its last version
//! (a crash), it appends `(epoch, last checkpointed version)` to the
//! **recovery table**, kept in the manifest; reads from funks — gets,
//! scans, munk loads, rebuilds — then skip versions of that epoch above
//! it. So after any crash the store shows one point in time across all
//! chunks, whatever depth each chunk's log reached, and nothing is replayed
//! at open. Epochs not in the table (the current one, and epochs that ended
//! with a clean close or ran in `Sync` mode) are read whole.

pub(crate) mod checkpoint;
pub(crate) mod journal;
pub(crate) mod replayed;

use crate::funk::log::DurableLengths;
use crate::version::{epoch_of, first_version};
pub(crate) use checkpoint::{Checkpoint, CheckpointFile, CHECKPOINT};

/// The checkpoints of the running epoch.
///
/// Invariants: `serial` is held for the whole of each checkpoint, so
/// checkpoints are taken one at a time and recorded in version order.
/// `held` is the snapshot version of the last recorded checkpoint; it stays
/// registered as a snapshot until the next checkpoint is recorded, so every
/// rebuild keeps, for each key, its newest version at or below the
/// checkpoint — the version recovery would show after a crash.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    pub file: CheckpointFile,
    pub epoch: u64,
    pub held: parking_lot::Mutex<Option<u64>>,
    pub serial: parking_lot::Mutex<()>,
    /// The durable log lengths last recorded (under `serial`): logs not
    /// opened since keep theirs from one checkpoint to the next.
    pub logs: parking_lot::Mutex<DurableLengths>,
    /// When `Sync` mode last recorded a checkpoint (under `serial`).
    pub recorded: parking_lot::Mutex<Option<std::time::Instant>>,
}

impl Checkpoints {
    pub fn new(file: CheckpointFile, epoch: u64, logs: DurableLengths) -> Self {
        Checkpoints {
            file,
            epoch,
            held: parking_lot::Mutex::new(None),
            serial: parking_lot::Mutex::new(()),
            logs: parking_lot::Mutex::new(logs),
            recorded: parking_lot::Mutex::new(None),
        }
    }
}

/// Epochs cut short by a crash, with the last version of each to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecoveryTable {
    /// (epoch, last visible version), in epoch order.
    cuts: Vec<(u64, u64)>,
}

impl RecoveryTable {
    pub fn from_cuts(mut cuts: Vec<(u64, u64)>) -> Self {
        cuts.sort_unstable();
        cuts.dedup_by_key(|c| c.0);
        RecoveryTable { cuts }
    }

    /// Records that of `epoch`, only versions at or below `last` may be read.
    #[cfg(test)]
    pub fn cut(&mut self, epoch: u64, last: u64) {
        if !self.cuts.iter().any(|&(e, _)| e == epoch) {
            self.cuts.push((epoch, last));
            self.cuts.sort_unstable();
        }
    }

    /// True if a record of `version` may be read.
    pub fn visible(&self, version: u64) -> bool {
        let epoch = epoch_of(version);
        match self.cuts.binary_search_by_key(&epoch, |&(e, _)| e) {
            Ok(i) => self.cuts.get(i).is_none_or(|&(_, last)| version <= last),
            Err(_) => true,
        }
    }
}

/// The last version `epoch` can have: a checkpoint at it means the whole
/// epoch is durable (a clean close, or `Sync` durability).
pub(crate) fn last_version(epoch: u64) -> u64 {
    first_version(epoch.saturating_add(1)).wrapping_sub(1)
}

/// The cut recovery makes in `epoch`, the epoch that ran before this open,
/// given the newest checkpoint found: `None` when the epoch is durable
/// whole, else the last version of the epoch to keep.
pub(crate) fn cut_after(epoch: u64, newest: Option<Checkpoint>) -> Option<u64> {
    let keep = cut_for(epoch, newest);
    (keep < last_version(epoch)).then_some(keep)
}

/// The last version of `epoch` recovery keeps, given the newest checkpoint
/// found: the checkpoint's version if it belongs to that epoch; otherwise
/// nothing of the epoch (no checkpoint completed before the crash).
pub(crate) fn cut_for(epoch: u64, newest: Option<Checkpoint>) -> u64 {
    match newest {
        Some(c) if c.epoch == epoch => c.version,
        _ => first_version(epoch).saturating_sub(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::first_version;

    #[test]
    fn versions_above_a_crashed_epochs_cut_are_hidden() {
        let mut t = RecoveryTable::default();
        t.cut(3, first_version(3) + 10);
        assert!(t.visible(first_version(3) + 10));
        assert!(!t.visible(first_version(3) + 11));
        assert!(t.visible(first_version(2) + 1_000_000));
        assert!(t.visible(first_version(4)));
    }

    #[test]
    fn a_whole_epoch_is_not_cut() {
        let whole = Checkpoint {
            generation: 1,
            sequence: 2,
            epoch: 6,
            version: last_version(6),
        };
        assert_eq!(cut_after(6, Some(whole)), None);
        let part = Checkpoint {
            version: first_version(6) + 3,
            ..whole
        };
        assert_eq!(cut_after(6, Some(part)), Some(first_version(6) + 3));
        assert_eq!(cut_after(6, None), Some(first_version(6) - 1));
        assert!(last_version(6) < first_version(7));
    }

    #[test]
    fn an_epoch_without_a_checkpoint_shows_nothing() {
        let mut t = RecoveryTable::default();
        t.cut(5, cut_for(5, None));
        assert!(!t.visible(first_version(5)));
        let older = Checkpoint {
            generation: 1,
            sequence: 9,
            epoch: 4,
            version: first_version(4) + 7,
        };
        assert_eq!(cut_for(5, Some(older)), first_version(5) - 1);
    }
}
