//! Recovery to a consistent point: which versions written before a crash
//! may be read.
//!
//! Every version carries its epoch in its top bits (see `version`). The
//! recovery table maps each epoch that ended in a crash to the last version
//! of it known durable everywhere; reads from funks skip versions of such an
//! epoch above that point, so every chunk shows the same point in time.
//! Epochs not in the table (the current one, and epochs that ended with a
//! clean close) are read whole.

use crate::version::epoch_of;

/// Epochs cut short by a crash, with the last version of each to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecoveryTable {
    /// (epoch, last visible version), in epoch order.
    cuts: Vec<(u64, u64)>,
}

impl RecoveryTable {
    /// True if a record of `version` may be read.
    pub fn visible(&self, version: u64) -> bool {
        let epoch = epoch_of(version);
        match self.cuts.binary_search_by_key(&epoch, |&(e, _)| e) {
            Ok(i) => self.cuts.get(i).is_none_or(|&(_, last)| version <= last),
            Err(_) => true,
        }
    }
}
