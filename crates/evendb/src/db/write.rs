//! The one write path: puts and deletes.
//!
//! 1. Check sizes (before any I/O) and the poison flag.
//! 2. Find the chunk (lock-free index), open its funk if needed, and take
//!    its rebalance lock shared; retry if the chunk was replaced meanwhile.
//! 3. If the chunk has a munk, reserve room in it first (a cell for a new
//!    key, bytes in the memory budget), so nothing can refuse the put after
//!    its record is in the log. A full munk is rebalanced, and a full budget
//!    evicts colder munks, with no lock held; then the put starts over.
//! 4. Announce the put in the pending-operations array and read its version.
//! 5. Append the record to the funk's active log segment (which takes the
//!    chunk's next counter), then add the version to the munk, or, for a
//!    munk-less chunk, refresh the key in the row cache if it is there. A
//!    `Sync` put to a munk appends nothing: its version goes into the munk
//!    marked unlogged, and the checkpointer writes it to the log later
//!    (`db::deferred`).
//! 6. Clear the announcement, release the lock; in `Sync` mode append the
//!    record to the commit journal and wait for its group commit. Queue maintenance the chunk
//!    now needs (a failure there poisons the store but does not fail this
//!    put, which is applied); a put to a chunk whose log is far past its
//!    limit sleeps a little (pacing: maintenance is behind).

use super::DbInner;
use crate::cache::budget::Kind;
use crate::cache::row::Tag;
use crate::chunk::{task, Chunk};
use crate::entry::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::error::{Error, Result};
use crate::funk::log::AppendMode;
use crate::funk::Funk;
use crate::munk::{Munk, Refusal, Version};
use crate::stats;
use crate::version::PutTicket;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A put to a chunk whose log has passed this many times its limit is
/// slowed down (see [`DbInner::pace`]).
const PACE_FROM: u64 = 4;

/// A paced put's sleep per multiple of its log's limit from [`PACE_FROM`].
const PACE_STEP: Duration = Duration::from_micros(250);

/// The longest a paced put sleeps.
const PACE_MAX: Duration = Duration::from_millis(2);

/// The version [`DbInner::apply`] gives a record.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stamp {
    /// A put's: it announces itself and reads GV.
    Put,
    /// A put's that no other write shares (`Versions::begin_unique_put`).
    UniquePut,
    /// A batch's, or a replayed write's (the batch holds the announcement).
    Given(u64),
}

/// Where [`DbInner::apply`] put one key's record.
pub(crate) struct Applied {
    pub chunk: Arc<Chunk>,
    pub funk: Arc<Funk>,
    pub munk: Option<Arc<Munk>>,
    pub version: u64,
    pub counter: u64,
}

/// Counts an applied put or delete and its user bytes; returns the
/// thread's stripe for the caller's own counts.
fn count_write<'a>(inner: &'a DbInner, key: &[u8], value: Option<&[u8]>) -> &'a stats::Stripe {
    let c = inner.counters.local();
    stats::add(if value.is_some() { &c.puts } else { &c.deletes }, 1);
    let len = key.len() + value.map_or(0, <[u8]>::len);
    stats::add(&c.user_bytes_written, len as u64);
    c
}

/// [`Error::InvalidArgument`] for a value over [`MAX_VALUE_SIZE`].
pub(crate) fn check_value(value: Option<&[u8]>) -> Result<()> {
    let len = value.map_or(0, <[u8]>::len);
    if len > MAX_VALUE_SIZE {
        return Err(Error::InvalidArgument(format!(
            "value of {len} bytes exceeds the limit of {MAX_VALUE_SIZE}"
        )));
    }
    Ok(())
}

/// [`Error::InvalidArgument`] for a key over [`MAX_KEY_SIZE`].
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_SIZE}",
            key.len()
        )));
    }
    Ok(())
}

impl DbInner {
    /// [`Error::ReadOnly`] for a write through a read-only open.
    pub(crate) fn refuse_if_read_only(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly(self.dir.clone()));
        }
        Ok(())
    }

    /// Returns the put's stamp: its version and its chunk counter.
    pub(crate) fn write(&self, key: &[u8], value: Option<&[u8]>) -> Result<(u64, u64)> {
        check_key(key)?;
        check_value(value)?;
        self.refuse_if_read_only()?;
        self.check_poison()?;
        // `Sync` mode (and only it) has a journal.
        let stamp = match self.journal {
            Some(_) => Stamp::UniquePut,
            None => Stamp::Put,
        };
        let applied = self.apply(key, value, stamp)?;
        if let Some(j) = &self.journal {
            self.journal_applied(j, &applied, key, value)?;
        }
        self.after_apply(&applied);
        Ok((applied.version, applied.counter))
    }

    /// Makes an applied `Sync` put durable through the commit journal: its
    /// record there is synced with those of every other writer waiting (one
    /// fsync however many chunks they wrote); the chunk logs are synced
    /// later by the checkpointer, which drops the journal segments they
    /// cover. An open after a crash replays the journal (its versions are
    /// unique, so the order does not matter).
    fn journal_applied(
        &self,
        journal: &crate::recovery::journal::Journal,
        applied: &Applied,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        crate::failpoint::failpoint!(self, "sync_put.before_journal");
        let c = self.counters.local();
        let since = Instant::now();
        // Already in its chunk log: the checkpointer may drop the segment
        // once the logs are synced.
        let storage = self.storage.as_ref();
        let ticket = match journal.append_applied(storage, applied.version, &[(key, value)]) {
            Ok(t) => t,
            Err(e) => return self.poison(e),
        };
        match journal.sync(ticket) {
            Ok(true) => stats::add(&c.journal_syncs, 1),
            Ok(false) => {}
            Err(e) => return self.poison(e),
        }
        stats::put_waited(c, &c.put_sync_waits, &c.put_sync_wait_micros, since);
        Ok(())
    }

    /// Queues the maintenance an applied write made its chunk need. The
    /// write is applied (and, in `Sync` mode, durable): a failure here
    /// poisons the store for later writes but does not fail this one.
    pub(crate) fn after_apply(&self, applied: &Applied) {
        self.after_apply_paced(applied, true);
    }

    /// [`DbInner::after_apply`], with `pace` false for a journal replay at
    /// open: no maintenance thread runs yet to catch up, and the journal
    /// it replays is bounded (sealed every 200 ms and at 16 MiB).
    pub(crate) fn after_apply_paced(&self, applied: &Applied, pace: bool) {
        let done = self.after_put(&applied.chunk, &applied.funk, applied.munk.as_deref(), pace);
        if let Err(e) = done {
            log::error!("maintenance after a put to {}: {e}", self.dir.display());
            let _ = self.poison::<()>(e);
        }
    }

    /// Steps 2–6 of the write path for one key: the record is in its log
    /// and visible, with the version `stamp` says.
    pub(crate) fn apply(&self, key: &[u8], value: Option<&[u8]>, stamp: Stamp) -> Result<Applied> {
        let value_len = value.map_or(0, <[u8]>::len);
        loop {
            let chunk = self.chunk_for(key)?;
            self.touch(&chunk);
            self.open_funk(&chunk)?;
            let guard = match chunk.rebalance.try_read() {
                Some(g) => g,
                None => {
                    let since = Instant::now();
                    let g = chunk.rebalance.read();
                    let c = self.counters.local();
                    stats::put_waited(c, &c.put_lock_waits, &c.put_lock_wait_micros, since);
                    g
                }
            };
            if chunk.is_retired() {
                continue;
            }
            let Some(funk) = chunk.funk() else {
                continue;
            };
            let munk = chunk.munk();
            let reservation = match &munk {
                None => None,
                Some(m) => match m.reserve(key, value_len, self.munk_headroom()) {
                    Ok(r) => {
                        if crate::maintenance::keeper_margin_used(self) {
                            self.maintenance.wake_keeper();
                        }
                        Some(r)
                    }
                    Err(Refusal::Full) => {
                        drop(guard);
                        // Compact in memory now; a split, if the munk
                        // outgrew the chunk, is left to maintenance.
                        let since = Instant::now();
                        crate::maintenance::munk_rebalance(self, &chunk, false)
                            .or_else(|e| self.poison(e))?;
                        let c = self.counters.local();
                        let (n, us) = (&c.put_munk_full_waits, &c.put_munk_full_wait_micros);
                        stats::put_waited(c, n, us, since);
                        self.schedule(&chunk, task::MUNK_REBALANCE)?;
                        continue;
                    }
                    Err(Refusal::NoMemory(n)) => {
                        drop(guard);
                        let since = Instant::now();
                        if !crate::maintenance::make_room(self, n, Some(&chunk)) {
                            // Nothing colder to evict: this chunk goes on
                            // without its munk.
                            crate::maintenance::evict_munk(self, &chunk);
                        }
                        let c = self.counters.local();
                        let (n, us) = (&c.put_memory_waits, &c.put_memory_wait_micros);
                        stats::put_waited(c, n, us, since);
                        // An eviction that could not write the munk's log
                        // poisons the store and leaves the munk: stop here
                        // rather than retry forever.
                        self.check_poison()?;
                        continue;
                    }
                },
            };
            let with_version = |t: PutTicket| (t.version, Some(t));
            let (version, ticket) = match stamp {
                Stamp::Given(v) => (v, None),
                Stamp::Put => with_version(self.versions.begin_put(key)),
                Stamp::UniquePut => with_version(self.versions.begin_unique_put(key)),
            };
            let reservation = match (reservation, &munk, stamp) {
                (Some(r), Some(m), Stamp::UniquePut) => {
                    // A `Sync` put to a munk: the journal makes it durable, the
                    // munk serves it, and its log record waits for the next
                    // checkpoint round (`db::deferred`), which writes a key put
                    // many times meanwhile once.
                    let counter = chunk.counter.fetch_add(1, Ordering::Relaxed);
                    let node = Version::unlogged(value, version, counter);
                    chunk.note_deferred(version);
                    // The directory its record will take in the log, charged
                    // now, as a logged put's would be (`db::deferred`).
                    let directory = crate::db::DEFERRED_DIRECTORY;
                    self.budget.add(Kind::Filters, directory);
                    chunk
                        .deferred_directory
                        .fetch_add(directory, Ordering::AcqRel);
                    m.insert(r, key, node, self.versions.watermark());
                    // After the insert: a round that clears the flag first
                    // finds the version.
                    chunk.unlogged.store(true, Ordering::Release);
                    drop(ticket);
                    drop(guard);
                    let c = count_write(self, key, value);
                    stats::add(&c.puts_deferred, 1);
                    return Ok(Applied {
                        chunk,
                        funk,
                        munk,
                        version,
                        counter,
                    });
                }
                (r, _, _) => r,
            };
            // Without a munk the record must be readable from the log at
            // once: from its write buffer until that is written (at 4 KiB,
            // at the next sync, or at once while the log is in key order).
            // A `Sync` put to a munk-less chunk is written to its log file
            // (not synced): if the disk fills up after it is acknowledged,
            // the log still holds it, and a read-only open (which cannot
            // replay the journal) reads it from there rather than holding
            // it in memory.
            let mode = match (&munk, stamp) {
                (_, Stamp::UniquePut) => AppendMode::Through,
                (None, _) => AppendMode::Readable,
                (Some(_), _) => AppendMode::Held,
            };
            let appended = match funk
                .active
                .append_as(key, value, version, &chunk.counter, mode)
            {
                Ok(a) => a,
                Err(e) => return self.poison(e),
            };
            match (&munk, reservation) {
                (Some(m), Some(r)) => {
                    let node = Version::new(value, version, appended.ptr.counter);
                    m.insert(r, key, node, self.versions.watermark());
                }
                _ => {
                    chunk.applied.fetch_add(1, Ordering::AcqRel);
                    let tag = Tag {
                        chunk_id: chunk.id,
                        generation: chunk.generation.load(Ordering::Acquire),
                    };
                    let stamp = (version, appended.ptr.counter);
                    self.row_cache.update_if_present(key, value, stamp, tag);
                    // The append may have sealed a log part, whose
                    // directory is growth the budget cannot refuse.
                    crate::maintenance::keep_floor(self);
                }
            }
            drop(ticket);
            drop(guard);

            let c = count_write(self, key, value);
            stats::add(&c.log_bytes_written, appended.ptr.record_len());
            return Ok(Applied {
                chunk,
                funk,
                munk,
                version: appended.ptr.version,
                counter: appended.ptr.counter,
            });
        }
    }

    /// Budget bytes munk puts leave free, for growth that cannot wait (log
    /// filters, table indexes, rebuilds).
    pub(crate) fn munk_headroom(&self) -> u64 {
        (self.budget.limit() / 64).min(4 << 20)
    }

    /// Queues (or, without maintenance threads, runs) what the chunk needs
    /// after a put: a funk rebalance when its log is full, a munk rebalance
    /// (and maybe a split) when its munk is.
    fn after_put(
        &self,
        chunk: &std::sync::Arc<Chunk>,
        funk: &Funk,
        munk: Option<&Munk>,
        pace: bool,
    ) -> Result<()> {
        let log = funk.active.appended();
        let limit = match munk {
            Some(_) => self.opts.munk_log_limit(),
            None => self.opts.max_log_size,
        };
        match munk {
            Some(m) => {
                if m.wants_rebalance() || m.data_bytes() > self.opts.max_chunk_size {
                    self.schedule(chunk, task::MUNK_REBALANCE)?;
                }
            }
            None => self.wants_munk(chunk)?,
        }
        if log > limit {
            self.schedule(chunk, task::FUNK_REBALANCE)?;
            // (The raw log first: the exact figure takes a lock.)
            if pace && log / limit.max(1) >= PACE_FROM && self.opts.maintenance_threads > 0 {
                let over = crate::maintenance::overdue(self, chunk);
                if over >= PACE_FROM {
                    self.pace(chunk, over);
                }
            }
        }
        Ok(())
    }

    /// Slows a put to a chunk whose log is `over` times past its limit
    /// (maintenance is behind): the chunk goes to the front of the
    /// maintenance queue, and the put sleeps [`PACE_STEP`] for every
    /// multiple from [`PACE_FROM`] on, at most [`PACE_MAX`]. Puts slow
    /// down as the backlog grows instead of stopping: a put never rebuilds
    /// a chunk itself nor waits for another thread's rebuild (either took
    /// up to hundreds of milliseconds at 8x the memory).
    fn pace(&self, chunk: &Arc<Chunk>, over: u64) {
        if chunk.mark_queued(task::URGENT) {
            self.maintenance
                .push_urgent(chunk.clone(), task::FUNK_REBALANCE | task::URGENT);
        }
        let steps = (over + 1 - PACE_FROM) as u32;
        let delay = PACE_STEP.saturating_mul(steps).min(PACE_MAX);
        let since = Instant::now();
        std::thread::sleep(delay);
        let c = self.counters.local();
        stats::put_waited(c, &c.put_pace_waits, &c.put_pace_wait_micros, since);
    }

    /// Queues `task` for `chunk`, or runs it now when there are no
    /// maintenance threads.
    pub(crate) fn schedule(&self, chunk: &std::sync::Arc<Chunk>, bits: u8) -> Result<()> {
        if self.opts.read_only {
            return Ok(()); // No maintenance: it would write.
        }
        if self.opts.maintenance_threads == 0 {
            let since = Instant::now();
            let done = crate::maintenance::run_task(self, chunk, bits);
            let c = self.counters.local();
            stats::add(&c.inline_tasks, 1);
            stats::add(&c.inline_task_micros, stats::micros(since));
            return done;
        }
        if chunk.mark_queued(bits) {
            self.maintenance.push(chunk.clone(), bits);
        }
        Ok(())
    }
}
