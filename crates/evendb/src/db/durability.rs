//! Durability: syncing logs, checkpoints, and the clean close.
//!
//! In `Sync` mode every write is durable through the commit journal
//! (`recovery/journal.rs`) when acknowledged, and the epoch's first
//! checkpoint says at once that the epoch is durable whole. In `Buffered`
//! mode a checkpoint (every interval, on [`Db::flush`](crate::Db::flush),
//! and at open) runs:
//!
//! 1. Take a snapshot of the whole key space: GV is fetched and
//!    incremented to `v`, and the snapshot waits for the puts that read a
//!    version `<= v`, so each of them has its record in its log (or in its
//!    log's buffer).
//! 2. Sync every dirty log of the live chunks. A chunk replaced meanwhile
//!    had its data written to a synced table before its manifest was
//!    published, so its records are durable either way.
//! 3. Record `(epoch, v)` in `CHECKPOINT` (both slots, one after the
//!    other, each synced).
//! 4. Keep the snapshot registered until the next checkpoint is recorded,
//!    so rebuilds keep what recovery to `v` would show.
//!
//! A crash before step 3 leaves the previous checkpoint in force; recovery
//! (`db/open.rs`) cuts the epoch at the newest recorded checkpoint. A clean
//! close records the epoch's last possible version: nothing is cut.

use super::DbInner;
use crate::error::Result;
use crate::funk::log::DurableLengths;
use crate::options::Durability;
use crate::recovery::last_version;
use crate::stats;

/// How often `Sync` mode records a checkpoint (its logs are synced and
/// its journal trimmed every 200 ms).
const SYNC_RECORD_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl DbInner {
    /// Records the epoch's first checkpoint, at open, before any put.
    pub(crate) fn start_checkpoints(&self) -> Result<()> {
        match self.opts.durability {
            Durability::Sync => self.record_checkpoint(last_version(self.checkpoints.epoch)),
            Durability::Buffered { .. } => self.checkpoint(),
        }
    }

    /// Makes every put completed before the call durable, and in `Buffered`
    /// mode part of what recovery keeps.
    pub(crate) fn flush(&self) -> Result<()> {
        // Never report data durable after a failed write or sync.
        self.check_poison()?;
        match self.opts.durability {
            Durability::Sync if self.journal.is_some() => {
                let _serial = self.checkpoints.serial.lock();
                self.sync_journaled()?;
            }
            Durability::Sync => self.sync_logs()?,
            Durability::Buffered { .. } => self.checkpoint()?,
        }
        // A checkpoint may have passed a range delete: its space can go,
        // and a delete reclaimed already can leave the manifest.
        self.schedule_reclaims()?;
        self.retire_swept()
    }

    /// One checkpoint (see the module docs for the steps).
    pub(crate) fn checkpoint(&self) -> Result<()> {
        let _serial = self.checkpoints.serial.lock();
        // Never record a checkpoint after a failed write or sync.
        self.check_poison()?;
        let v = self.versions.acquire_snapshot(&[], None);
        if let Err(e) = self.sync_and_record(v) {
            self.versions.release(v);
            return Err(e);
        }
        stats::add(&self.counters.local().checkpoints, 1);
        self.hold_checkpoint_snapshot(Some(v));
        Ok(())
    }

    /// Steps 2 and 3 of a checkpoint at `v`.
    fn sync_and_record(&self, v: u64) -> Result<()> {
        crate::failpoint::failpoint!(self, "checkpoint.after_snapshot");
        self.sync_logs()?;
        crate::failpoint::failpoint!(self, "checkpoint.before_record");
        // A put may have failed while the logs were synced.
        self.check_poison()?;
        self.record_checkpoint(v)?;
        crate::failpoint::failpoint!(self, "checkpoint.after_record");
        Ok(())
    }

    /// Records `(epoch, version)`, the manifest's generation and every live
    /// log's durable length in `CHECKPOINT`; a failure poisons. The caller
    /// holds `checkpoints.serial`.
    fn record_checkpoint(&self, version: u64) -> Result<()> {
        let (generation, live): (u64, Vec<u64>) = {
            let p = self.published.lock();
            let m = &p.manifest;
            let logs = m.chunks.iter().flat_map(|c| c.files.logs.iter().copied());
            (m.generation, logs.collect())
        };
        let mut carried = self.checkpoints.logs.lock();
        let open = self.open_files.durable_marks(&live);
        let marks: DurableLengths = live
            .into_iter()
            .filter_map(|n| open.get(&n).or_else(|| carried.get(&n)).map(|&m| (n, m)))
            .collect();
        let unchanged = self.checkpoints.file.last().is_some_and(|c| {
            (c.epoch, c.version, c.generation) == (self.checkpoints.epoch, version, generation)
        }) && marks == *carried;
        if unchanged {
            return Ok(());
        }
        match self
            .checkpoints
            .file
            .record(self.checkpoints.epoch, version, generation, &marks)
        {
            Ok(()) => {
                *carried = marks;
                Ok(())
            }
            Err(e) => self.poison(e),
        }
    }

    /// In `Sync` mode, where every put is durable when acknowledged: records
    /// the logs' durable lengths and the manifest's generation (the epoch is
    /// durable whole already).
    pub(crate) fn record_lengths(&self) -> Result<()> {
        let _serial = self.checkpoints.serial.lock();
        self.check_poison()?;
        self.sync_journaled()?;
        // The record (two synced slots) at most once a second: nothing
        // waits for it, since the logs are synced already and the journal
        // trimmed; lengths recorded late only check less of a log's end
        // (§10).
        let mut recorded = self.checkpoints.recorded.lock();
        if recorded.is_some_and(|t| t.elapsed() < SYNC_RECORD_EVERY) {
            return Ok(());
        }
        self.record_checkpoint(last_version(self.checkpoints.epoch))?;
        *recorded = Some(std::time::Instant::now());
        Ok(())
    }

    /// `Sync` mode: writes the deferred records of munks to their logs
    /// (`db::deferred`), syncs the chunk logs, then drops the journal
    /// segments whose writes were all in them (sealed first, so writes
    /// journaled meanwhile wait for the next round), keeping a few to write
    /// over.
    pub(super) fn sync_journaled(&self) -> Result<()> {
        let Some(j) = &self.journal else {
            return Ok(());
        };
        // After a failed write the journal may hold the only copy of a
        // write: never trim it then.
        self.check_poison()?;
        let st = self.storage.as_ref();
        let done = j.seal(st).and_then(|sealed| {
            crate::failpoint::failpoint!(self, "journal.after_seal");
            self.log_deferred()?;
            crate::failpoint::failpoint!(self, "journal.after_deferred");
            self.sync_logs()?;
            crate::failpoint::failpoint!(self, "journal.before_remove");
            let renamed = j.remove(st, &sealed)?;
            crate::failpoint::failpoint!(self, "journal.after_rename");
            j.keep_spares(st, renamed)
        });
        done.or_else(|e| self.poison(e))
    }

    /// Makes `v` the snapshot the last checkpoint holds, releasing the one
    /// held before.
    fn hold_checkpoint_snapshot(&self, v: Option<u64>) {
        let older = std::mem::replace(&mut *self.checkpoints.held.lock(), v);
        if let Some(o) = older {
            self.versions.release(o);
        }
    }

    /// At a clean close, when no put can run: syncs every log and records
    /// that the epoch is durable whole.
    pub(crate) fn close_durably(&self) -> Result<()> {
        if self.opts.read_only {
            return Ok(()); // Nothing was written.
        }
        let _serial = self.checkpoints.serial.lock();
        self.check_poison()?;
        self.sync_logs()?;
        self.sync_journaled()?;
        if let Some(j) = &self.journal {
            j.close(self.storage.as_ref())?;
        }
        self.record_checkpoint(last_version(self.checkpoints.epoch))?;
        self.hold_checkpoint_snapshot(None);
        Ok(())
    }
}
