//! Scans and the maintenance queue: a scan of a munk-less chunk whose
//! unsorted log waits in the queue for its run moves the chunk's task
//! ahead of the queue (design §8).

use crate::chunk::{task, Chunk};
use crate::db::DbInner;
use crate::stats;
use std::sync::Arc;

/// Moves the queued rebuild of the munk-less `chunk` ahead of the queue
/// (see `Maintenance::promote`) if its unsorted logs hold at least
/// `max_log_size` (what a rebuild is queued for): a scan
/// just read it through a sorted index and would again until the run
/// (with indexes past their share of the budget, each scan reads the
/// whole log again). Once per queued task: the mark
/// [`task::SCANNED`] stays until the task runs.
pub(crate) fn scanned_while_queued(inner: &DbInner, chunk: &Arc<Chunk>) {
    let waits = task::FUNK_REBALANCE | task::COMPACT_LOG;
    let large = |f: Arc<crate::funk::Funk>| f.log_shape().1 >= inner.opts.max_log_size;
    if !chunk.is_queued(waits) || !chunk.funk().is_some_and(large) {
        return;
    }
    if !chunk.mark_queued(task::SCANNED) {
        return;
    }
    if inner.maintenance.promote(chunk) {
        stats::add(&inner.counters.local().scan_promotions, 1);
    } else {
        // Running, or in the urgent queue, already: nothing to move.
        chunk.clear_queued(task::SCANNED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemFs;
    use crate::Options;
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// A store whose one chunk has a munk-less, unsorted log of about
    /// 600 KB, opened with a log limit of 400 KiB (over it, but not so far
    /// over that a scan asks for a compaction, which would run in line)
    /// and no maintenance threads (nothing drains the queue but the
    /// test); and what it holds.
    fn chunk_with_a_large_log() -> (crate::Db, BTreeMap<Vec<u8>, Vec<u8>>) {
        let fs = MemFs::new();
        let opts = |log| {
            Options::default()
                .storage(Arc::new(fs.clone()))
                .max_chunk_size(8 << 20)
                .max_log_size(log)
                .memory_budget(0)
                .maintenance_threads(0)
        };
        let mut rng = fastrand::Rng::with_seed(7);
        let mut model = BTreeMap::new();
        // Under a 1 MiB limit nothing is rebuilt: the log stays as written.
        let db = opts(1 << 20).open("/db").expect("open");
        for i in 0..3000u32 {
            let key = format!("k{:06}", rng.u32(0..50_000)).into_bytes();
            let mut value = format!("{i}-").into_bytes();
            value.resize(200, b'v');
            db.put(&key, &value).expect("put");
            model.insert(key, value);
        }
        drop(db);
        let db = opts(400 << 10).open("/db").expect("reopen");
        let chunk = db.inner.chunk_for(b"").expect("chunk");
        let funk = db.inner.open_funk(&chunk).expect("funk");
        let unsorted = funk.log_shape().1;
        assert!((400 << 10..800 << 10).contains(&unsorted), "{unsorted}");
        (db, model)
    }

    fn scan_all(db: &crate::Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
        db.snapshot()
            .scan::<&[u8], _>(..)
            .map(|kv| kv.expect("scan"))
            .collect()
    }

    /// The next queued task, if any.
    fn next_task(db: &crate::Db) -> Option<(Arc<Chunk>, u8)> {
        db.inner
            .maintenance
            .next(Duration::ZERO, false)
            .expect("not shut down")
    }

    #[test]
    fn a_scan_moves_the_queued_rebuild_of_the_log_it_read_ahead() {
        let (db, model) = chunk_with_a_large_log();
        let inner = &db.inner;
        let chunk = inner.chunk_for(b"").expect("chunk");
        // Another chunk's task came first (the chunk itself stands in:
        // the queue knows tasks, not ranges).
        let other = Arc::new(Chunk::new(99, b"zz".to_vec(), None, Default::default()));
        inner.maintenance.push(other.clone(), task::MERGE);
        assert!(chunk.mark_queued(task::FUNK_REBALANCE));
        inner.maintenance.push(chunk.clone(), task::FUNK_REBALANCE);
        assert_eq!(scan_all(&db), model);
        assert!(chunk.is_queued(task::SCANNED));
        // Scanned again: moved once.
        assert_eq!(scan_all(&db), model);
        assert_eq!(db.stats().scan_promotions, 1);
        let (first, bits) = next_task(&db).expect("a task");
        assert!(Arc::ptr_eq(&first, &chunk), "the scanned chunk comes first");
        assert_eq!(bits, task::FUNK_REBALANCE | task::SCANNED);
        crate::maintenance::run_task(inner, &first, bits).expect("run");
        assert!(!chunk.is_queued(task::FUNK_REBALANCE | task::SCANNED));
        let (second, _) = next_task(&db).expect("the other task");
        assert!(Arc::ptr_eq(&second, &other));
        // The log is sorted now: a scan moves nothing.
        let chunk = inner.chunk_for(b"").expect("chunk");
        let unsorted = inner.open_funk(&chunk).expect("funk").log_shape().1;
        assert!(
            unsorted < inner.opts.max_log_size,
            "{unsorted} bytes unsorted"
        );
        assert!(chunk.mark_queued(task::FUNK_REBALANCE));
        inner.maintenance.push(chunk.clone(), task::FUNK_REBALANCE);
        assert_eq!(scan_all(&db), model);
        assert!(!chunk.is_queued(task::SCANNED));
        assert_eq!(db.stats().scan_promotions, 1);
    }

    #[test]
    fn a_scan_of_a_chunk_with_nothing_queued_marks_nothing() {
        let (db, model) = chunk_with_a_large_log();
        let chunk = db.inner.chunk_for(b"").expect("chunk");
        assert_eq!(scan_all(&db), model);
        assert!(!chunk.is_queued(task::SCANNED));
        // Marked queued but not in the queue (a task being run): the mark
        // is taken back.
        assert!(chunk.mark_queued(task::COMPACT_LOG));
        assert_eq!(scan_all(&db), model);
        assert!(!chunk.is_queued(task::SCANNED));
        assert_eq!(db.stats().scan_promotions, 0);
        assert!(!db.inner.maintenance.has_tasks());
    }
}
