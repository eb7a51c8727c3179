//! Opening over a `Sync` commit journal a crash left (see
//! `recovery::journal`): replaying it, or, for a read-only open, holding
//! what the chunk logs lack in memory.

use super::DbInner;
use crate::error::{Error, Result};
use crate::recovery::replayed::ReplayedWrites;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// Replays the `Sync` journal a crash left (see `recovery::journal`): every
/// write it holds goes into its chunk's log again with its version (a
/// write already there gets a second record of the same version and
/// value, which reads the same), the logs are synced, and the segments
/// removed. Runs before the store takes writes; a crash during it replays
/// again at the next open.
pub(super) fn replay_journal(inner: &DbInner, numbers: &[u64]) -> Result<()> {
    let (st, dir) = (inner.storage.as_ref(), inner.dir.as_path());
    let store = inner.identity().0;
    let mut records = 0u64;
    for &n in numbers {
        for (version, ops) in crate::recovery::journal::read(st, dir, store, n)? {
            for (key, value) in &ops {
                let applied =
                    inner.apply(key, value.as_deref(), super::write::Stamp::Given(version))?;
                inner.after_apply_paced(&applied, false);
            }
            records += 1;
        }
    }
    inner.sync_logs()?;
    for &n in numbers {
        let path = dir.join(crate::recovery::journal::file_name(n));
        st.remove(&path).map_err(|e| Error::io(&path, e))?;
    }
    st.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    crate::stats::add(&inner.counters.local().journal_replayed, records);
    log::info!("{}: replayed {records} journaled writes", dir.display());
    Ok(())
}

/// What a replay of the `Sync` journal would add, held in memory for a
/// read-only open, which cannot write it to the chunk logs (see
/// `recovery::replayed`): per key, its newest journaled write, if the
/// chunks hold no record of that version or a newer one. (A key whose
/// own record is gone while a newer one is there, as after a rebuild that
/// kept no version it overwrote, reads from the chunks.) A write a
/// recovery cut hides, or a range delete newer than it, is left out, as
/// reads of a replayed store skip it. Returns the writes and the number
/// of journal records read.
///
/// The memory this holds is charged to the budget as write buffers (the
/// appends a replay would make): at most about the journal's size, which
/// is a few segments (sealed every 200 ms and at 16 MiB).
pub(super) fn replay_in_memory(inner: &DbInner, numbers: &[u64]) -> Result<(ReplayedWrites, u64)> {
    let (st, dir) = (inner.storage.as_ref(), inner.dir.as_path());
    let store = inner.identity().0;
    let mut newest: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> = BTreeMap::new();
    let mut records = 0u64;
    for &n in numbers {
        for (version, ops) in crate::recovery::journal::read(st, dir, store, n)? {
            records += 1;
            if !inner.recovery.visible(version) {
                continue;
            }
            for (key, value) in ops {
                // Versions are unique to a put or a batch; within a batch
                // the later operation on a key wins, as its record would
                // take the larger chunk counter.
                match newest.entry(key) {
                    Entry::Vacant(e) => {
                        e.insert((version, value));
                    }
                    Entry::Occupied(mut e) => {
                        if e.get().0 <= version {
                            e.insert((version, value));
                        }
                    }
                }
            }
        }
    }
    let tombstones = inner.tombstones.load();
    let mut held = ReplayedWrites::default();
    for (key, (version, value)) in newest {
        if inner.newest_version(&key)? >= version {
            continue; // In the chunks already, or overwritten there.
        }
        // Every record of the key is older than this write: a range
        // delete newer than it hides the key whole, as the chunks show.
        if version < tombstones.floor(&key, u64::MAX) {
            continue;
        }
        held.insert(key, value);
    }
    Ok((held, records))
}
