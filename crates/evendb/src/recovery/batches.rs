//! The batch log, `BATCHES`: which write batches of a `Sync` epoch may be
//! durable only in part.
//!
//! A `Sync` batch writes its records to the logs of every chunk it touches
//! and syncs each; a crash between those syncs would leave part of it. So
//! before its first record the batch appends `intent(version)` here and
//! syncs, and after its last log sync it appends `commit(version)` and
//! syncs; only then is it acknowledged. The next open reads the file,
//! adds every version with an intent and no commit to the manifest's
//! hidden versions (reads skip records of a hidden version everywhere,
//! like a recovery cut), stores the manifest, and deletes the file. A
//! batch version is taken by no other write (see `Versions::begin_batch`),
//! so hiding it hides that batch alone.
//!
//! Records are 16 bytes: `crc u32 | kind u32 | version u64`, the crc over
//! bytes 4..16 seeded with the store's id. Reading stops at the first
//! record that fails its check: a torn append belongs to a batch that was
//! never acknowledged, and an intent is synced before any of its batch's
//! records is written.

use crate::codec::{self, checksum, FileKind, StoreId};
use crate::error::{Error, Result};
use crate::vfs::{Storage, StorageFile};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The batch log's file name.
pub(crate) const BATCHES: &str = "BATCHES";
const RECORD: usize = 16;
const INTENT: u32 = 1;
const COMMIT: u32 = 2;
/// Past this length, the file is emptied when no batch is in progress.
const TRIM_AT: u64 = 1 << 20;

/// The batch log of a running store (written in `Sync` mode only).
///
/// Appends take `state`; syncs take `synced` and are shared: a batch whose
/// record an fsync already covered returns without one (group commit, as
/// log segments do). Lock order: `synced`, then `state`.
pub(crate) struct BatchLog {
    path: PathBuf,
    store: StoreId,
    state: Mutex<State>,
    /// How far the file is known durable.
    synced: Mutex<u64>,
}

#[derive(Default)]
struct State {
    file: Option<Arc<dyn StorageFile>>,
    len: u64,
    /// Batches with an intent and no commit yet.
    open: usize,
}

impl std::fmt::Debug for BatchLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchLog")
            .field("path", &self.path)
            .finish()
    }
}

fn encode(store: StoreId, kind: u32, version: u64) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[4..8].copy_from_slice(&kind.to_le_bytes());
    r[8..16].copy_from_slice(&version.to_le_bytes());
    let crc = checksum(codec::seed(store, FileKind::Batches, 0), &r[4..]);
    r[..4].copy_from_slice(&crc.to_le_bytes());
    r
}

impl BatchLog {
    pub fn new(dir: &Path, store: StoreId) -> Self {
        BatchLog {
            path: dir.join(BATCHES),
            store,
            state: Mutex::new(State::default()),
            synced: Mutex::new(0),
        }
    }

    /// Appends a record (not synced); returns the file and the end of the
    /// record.
    fn append(
        &self,
        st: &dyn Storage,
        kind: u32,
        version: u64,
    ) -> Result<(Arc<dyn StorageFile>, u64)> {
        let io = |e| Error::io(&self.path, e);
        let mut state = self.state.lock();
        let file = match &state.file {
            Some(f) => f.clone(),
            None => {
                let f = st.create(&self.path).map_err(io)?;
                // The name must survive a crash with the intent it holds.
                let dir = self.path.parent().unwrap_or(Path::new("."));
                st.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
                state.file = Some(f.clone());
                state.len = 0;
                f
            }
        };
        file.write_at(state.len, &encode(self.store, kind, version))
            .map_err(io)?;
        state.len += RECORD as u64;
        if kind == INTENT {
            state.open += 1;
        } else {
            state.open = state.open.saturating_sub(1);
        }
        Ok((file, state.len))
    }

    /// Makes the file durable up to `end`, unless a sync already did.
    fn sync_to(&self, file: &Arc<dyn StorageFile>, end: u64) -> Result<()> {
        let mut synced = self.synced.lock();
        if *synced >= end {
            return Ok(());
        }
        // Everything appended so far is covered by this sync.
        let covered = self.state.lock().len;
        file.sync().map_err(|e| Error::io(&self.path, e))?;
        *synced = covered.max(end);
        Ok(())
    }

    /// Records, durably, that batch `version` is about to write.
    pub fn intent(&self, st: &dyn Storage, version: u64) -> Result<()> {
        let (file, end) = self.append(st, INTENT, version)?;
        self.sync_to(&file, end)
    }

    /// Records, durably, that every record of batch `version` is durable.
    pub fn commit(&self, st: &dyn Storage, version: u64) -> Result<()> {
        let (file, end) = self.append(st, COMMIT, version)?;
        self.sync_to(&file, end)?;
        let mut synced = self.synced.lock();
        let mut state = self.state.lock();
        if state.open == 0 && state.len >= TRIM_AT && *synced >= state.len {
            // Every intent has its commit, durably: nothing here is needed.
            if let Some(f) = &state.file {
                let io = |e| Error::io(&self.path, e);
                f.truncate(0).map_err(io)?;
                f.sync().map_err(io)?;
                state.len = 0;
                *synced = 0;
            }
        }
        Ok(())
    }
}

/// The versions of batches with an intent and no commit in `dir`'s batch
/// log (none if there is no batch log).
pub(crate) fn unfinished(st: &dyn Storage, dir: &Path, store: StoreId) -> Result<Vec<u64>> {
    let path = dir.join(BATCHES);
    if !st.exists(&path).map_err(|e| Error::io(&path, e))? {
        return Ok(Vec::new());
    }
    let io = |e| Error::io(&path, e);
    let file = st.open_read(&path).map_err(io)?;
    let len = file.len().map_err(io)?;
    let seed = codec::seed(store, FileKind::Batches, 0);
    let mut open = BTreeSet::new();
    let mut buf = vec![0u8; 64 * RECORD];
    let mut at = 0u64;
    'read: while at + RECORD as u64 <= len {
        let n = ((len - at) as usize / RECORD).min(64) * RECORD;
        file.read_at(at, &mut buf[..n]).map_err(io)?;
        for r in buf[..n].chunks_exact(RECORD) {
            let crc = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            if checksum(seed, &r[4..]) != crc {
                if at + (RECORD as u64) < len {
                    log::warn!(
                        "{}: record at {at} fails its check; the rest is ignored",
                        path.display()
                    );
                }
                break 'read;
            }
            let kind = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
            let mut v = [0u8; 8];
            v.copy_from_slice(&r[8..16]);
            let version = u64::from_le_bytes(v);
            match kind {
                INTENT => {
                    open.insert(version);
                }
                COMMIT => {
                    open.remove(&version);
                }
                _ => break 'read,
            }
            at += RECORD as u64;
        }
    }
    Ok(open.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemFs;

    #[test]
    fn intents_without_commits_are_unfinished_and_a_torn_tail_is_ignored() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let store = StoreId(7);
        assert!(unfinished(&fs, dir, store).unwrap().is_empty());
        let log = BatchLog::new(dir, store);
        log.intent(&fs, 11).unwrap();
        log.intent(&fs, 13).unwrap();
        log.commit(&fs, 11).unwrap();
        assert_eq!(unfinished(&fs, dir, store).unwrap(), vec![13]);
        // A torn record, then one more valid-looking record after it:
        // reading stops at the damage.
        let f = fs.open(&dir.join(BATCHES)).unwrap();
        let len = f.len().unwrap();
        f.write_at(len, &[0xAB; 10]).unwrap();
        assert_eq!(unfinished(&fs, dir, store).unwrap(), vec![13]);
        // Another store's records fail their checks.
        assert!(unfinished(&fs, dir, StoreId(8)).unwrap().is_empty());
    }

    #[test]
    fn the_log_is_emptied_past_its_limit_only_when_every_intent_has_its_commit() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let store = StoreId(7);
        let log = BatchLog::new(dir, store);
        let len = || fs.open(&dir.join(BATCHES)).unwrap().len().unwrap();
        log.intent(&fs, 1).unwrap(); // Left open throughout.
        let pairs = TRIM_AT / (2 * RECORD as u64) + 2;
        for v in 0..pairs {
            log.intent(&fs, 10 + v).unwrap();
            log.commit(&fs, 10 + v).unwrap();
        }
        assert!(len() > TRIM_AT, "an open intent keeps the log");
        assert_eq!(unfinished(&fs, dir, store).unwrap(), vec![1]);
        log.commit(&fs, 1).unwrap();
        assert_eq!(len(), 0, "every intent committed: emptied");
        log.intent(&fs, 99).unwrap();
        assert_eq!(unfinished(&fs, dir, store).unwrap(), vec![99]);
    }
}
