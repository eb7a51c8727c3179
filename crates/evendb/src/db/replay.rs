//! Opening over a `Sync` commit journal a crash left (see
//! `recovery::journal`): replaying it, or, for a read-only open, counting
//! what the chunk logs lack.

use super::DbInner;
use crate::error::{Error, Result};

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

/// How many journaled writes the chunk logs lack: a read-only open, which
/// cannot replay them, refuses to show a store without them.
pub(super) fn journal_missing(inner: &DbInner, numbers: &[u64]) -> Result<u64> {
    let (st, dir) = (inner.storage.as_ref(), inner.dir.as_path());
    let store = inner.identity().0;
    let mut missing = 0;
    for &n in numbers {
        for (version, ops) in crate::recovery::journal::read(st, dir, store, n)? {
            for (key, _) in &ops {
                // A replay would change what the store shows only if the
                // key has no record at or past the write's (unique)
                // version. (Its own record may be gone while a newer one
                // is there: a rebuild keeps no version it overwrote.)
                if inner.newest_version(key)? < version {
                    missing += 1;
                }
            }
        }
    }
    Ok(missing)
}
