//! Compaction of a store that stopped taking writes.
//!
//! A write phase leaves munk-less chunks whose data lies in several log
//! segments: runs of its updates, adopted logs, the unsorted active log.
//! A get then consults each segment that may hold its key and reads a
//! block of records from the newest that does; the stale versions the
//! older segments keep (and, in adopted and active logs, the records'
//! missing compression) make what the reads touch several times larger
//! than a table of the same data. Runs are kept while puts go on because they are cheap to
//! write; once puts stop, nothing makes them cheaper to read.
//!
//! So when the store has taken no write for [`IDLE_AFTER`](super::queue::IDLE_AFTER), a maintenance
//! thread with nothing queued rebuilds such chunks into tables (the funk
//! rebalance of `rebuild.rs`, with its crash safety), the most read first,
//! two at a time, and stops as soon as a write or a queued task arrives
//! (or the store closes).
//!
//! Invariants:
//! - One maintenance thread at a time compacts idle chunks (`busy`), with
//!   [`IDLE_REBUILDS`] chunks rebuilt at once, each by one thread.
//! - A chunk is rebuilt only if no other thread is changing it
//!   (`funk_change` taken with `try_lock`) and it has no munk (a munk
//!   serves its reads).
//! - A rebuild's working memory must be free in the budget or under a
//!   quarter of it: idle compaction takes a bounded room from munks and
//!   the row cache, for a while.

use super::rebuild;
use crate::chunk::Chunk;
use crate::db::DbInner;
use crate::error::Result;
use crate::stats;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one turn of idle compaction may go on before the thread looks
/// at its queue again.
const TURN: Duration = Duration::from_secs(1);

/// Chunks rebuilt at once (the maintenance thread and helpers it starts for
/// the turn): a rebuild waits for the device about half its time, and the
/// sooner the logs are tables, the sooner gets read less.
const IDLE_REBUILDS: usize = 2;

/// True if the store has taken no write for [`IDLE_AFTER`](super::queue::IDLE_AFTER) (as far as
/// maintenance has looked: every task and every idle wake-up looks).
pub(crate) fn store_is_idle(inner: &DbInner) -> bool {
    inner.idle.quiet(inner.counters.writes(), Instant::now())
}

/// Segments of `chunk`'s funk holding records of its range.
fn segments_in_range(chunk: &Chunk) -> usize {
    let (from, to) = (&chunk.min_key, chunk.end_key.as_deref());
    chunk.funk().map_or(0, |f| {
        f.logs()
            .filter(|l| l.records() > 0 && l.overlaps(from, to))
            .filter(|l| l.window(from, to, u64::MAX).bytes() > 0)
            .count()
    })
}

/// True if `chunk` is worth rebuilding once the store is idle: no munk, an
/// open funk, and records of its range in more than one log segment (a
/// get may then read several). A chunk whose logs are one sorted log (a
/// sequential load's adopted log) or one log over a table is read with one
/// read a get, and is left alone.
pub(crate) fn worth_compacting(inner: &DbInner, chunk: &Chunk) -> bool {
    if chunk.is_retired() || chunk.has_munk() {
        return false;
    }
    let Some(f) = chunk.funk() else {
        return false;
    };
    let work = f.merge_memory(
        &chunk.min_key,
        chunk.end_key.as_deref(),
        super::room::images_cap(inner),
    );
    segments_in_range(chunk) >= 2 && work <= inner.budget.free().max(idle_work_limit(inner))
}

/// Working memory an idle rebuild may take even if the budget must make
/// room for it (the row cache and munks fill whatever is free once gets
/// run): a quarter of the budget. A banded segment is read a few blocks
/// at a time (at most `BANDED_SCAN_MEMORY`, 384 KiB), an unsorted one
/// whole; a sixteenth left the chunks with the most runs, the ones whose
/// gets read most, as they were (a chunk with three runs over a 4 MiB
/// budget needs 880 KiB).
fn idle_work_limit(inner: &DbInner) -> u64 {
    inner.budget.limit() / 4
}

/// The most read chunk worth compacting that this turn has not tried.
fn pick(inner: &DbInner, tried: &HashSet<u64>) -> Option<Arc<Chunk>> {
    let index = inner.index.load();
    index
        .chunks
        .iter()
        .filter(|c| !tried.contains(&c.id) && worth_compacting(inner, c))
        .max_by_key(|c| c.heat.load(Ordering::Relaxed))
        .cloned()
}

/// Work of a maintenance thread with an empty queue: if the store has
/// been idle for [`IDLE_AFTER`](super::queue::IDLE_AFTER), rebuilds the chunks [`worth_compacting`],
/// most read first, for up to [`TURN`], stopping early at a write or a
/// queued task.
pub(crate) fn compact_idle_chunks(inner: &DbInner) -> Result<()> {
    let Some(_busy) = inner.idle.busy.try_lock() else {
        return Ok(());
    };
    let writes = inner.counters.writes();
    if !store_is_idle(inner) {
        return Ok(());
    }
    let started = Instant::now();
    let tried = Mutex::new(HashSet::new());
    let work = || -> Result<()> {
        while started.elapsed() < TURN
            && !inner.maintenance.has_tasks()
            && inner.counters.writes() == writes
            && !inner.shutdown.load(Ordering::Acquire)
        {
            let chunk = {
                let mut tried = tried.lock();
                let Some(chunk) = pick(inner, &tried) else {
                    break;
                };
                tried.insert(chunk.id);
                chunk
            };
            if rebuild::rebuild_idle(inner, &chunk)? {
                stats::add(&inner.counters.local().idle_compactions, 1);
            }
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..IDLE_REBUILDS).map(|_| s.spawn(work)).collect();
        let mut outcome = work();
        for h in helpers {
            // A helper's panic goes on in this thread, which poisons the
            // store like any maintenance panic.
            let done = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            outcome = outcome.and(done);
        }
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maintenance::queue::{IdleWatch, IDLE_AFTER};

    #[test]
    fn the_store_is_quiet_only_after_a_whole_wait_without_writes() {
        let watch = IdleWatch::default();
        let t = Instant::now();
        assert!(!watch.quiet(5, t), "a new count starts the wait");
        assert!(!watch.quiet(5, t + IDLE_AFTER / 2));
        assert!(watch.quiet(5, t + IDLE_AFTER));
        assert!(!watch.quiet(6, t + IDLE_AFTER * 2), "a write ends it");
        assert!(!watch.quiet(6, t + IDLE_AFTER * 2 + IDLE_AFTER / 2));
        assert!(watch.quiet(6, t + IDLE_AFTER * 3));
    }
}
