//! I/O error loops, as SQLite runs them: the N-th state-changing I/O
//! operation fails, once or from then on, for every N over a workload of
//! puts, deletes, munk loads, splits, merges, rebalances and checkpoints.
//! No panic; after the first failed write no write is acknowledged (the
//! store stays poisoned until reopened); and after a power loss the store
//! holds every acknowledged write (`Sync`) or a prefix at or after the last
//! acknowledged flush (`Buffered`).

mod common;

use common::prefix::{check, Model, Pending};
use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::{Db, Options};

fn options(fs: &MemFs, sync: bool) -> Options {
    common::crash_options(fs, sync, 64 << 10)
}

/// Runs the workload; returns what was acknowledged and whether any
/// operation failed. Panics if a write or flush is acknowledged after an
/// earlier failure of any operation.
fn workload(db: &Db, sync: bool, seed: u64) -> (Pending, bool) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut p = Pending::new(Model::new());
    let mut failed = false;
    for i in 0..700u32 {
        let roll = rng.u8(0..100);
        if roll < 80 {
            let app = if rng.bool() {
                rng.u8(0..2)
            } else {
                rng.u8(0..8)
            };
            let key = format!("{app:02}|{:04}", rng.u32(0..300)).into_bytes();
            let value = (roll >= 8).then(|| vec![i as u8; rng.usize(8..100)]);
            if p.write(db, key, value, sync) {
                assert!(!failed, "write {i} acknowledged after a failed write");
            } else {
                failed = true;
            }
        } else if roll < 92 {
            let app = rng.u8(0..2);
            // Reads may fail too (a munk load that needed a rebuild); they
            // must not panic.
            if db.prefix(format!("{app:02}|")).take(40).any(|r| r.is_err()) {
                failed = true;
            }
        } else if roll < 97 {
            match db.flush() {
                Ok(()) => {
                    assert!(!failed, "flush {i} acknowledged after a failed write");
                    p.durable = p.writes.len();
                }
                Err(_) => failed = true,
            }
        } else if db.compact().is_err() {
            failed = true;
        }
    }
    (p, failed)
}

fn error_loop(sync: bool, persistent: bool) -> (u64, u64) {
    let seed = common::seed("io_error_loop");
    // How many operations the workload does without faults.
    let fs = MemFs::new();
    let db = options(&fs, sync).open(common::dir()).expect("open");
    fs.set_fault(None);
    drop(workload(&db, sync, seed));
    let total = fs.counted_ops();
    drop(db);
    let step = (total / common::iterations(120)).max(1);
    let (mut runs, mut failures) = (0, 0);
    let mut n = 1;
    while n <= total {
        let fs = MemFs::new();
        let db = options(&fs, sync).open(common::dir()).expect("open");
        fs.set_fault(Some(if persistent {
            Fault::FailFrom(n)
        } else {
            Fault::FailOnce(n)
        }));
        let (p, failed) = workload(&db, sync, seed);
        if failed {
            failures += 1;
        }
        drop(db);
        fs.crash(CrashMode::Random { seed: seed ^ n });
        let ctx = format!("seed {seed}, sync {sync}, persistent {persistent}, op {n} of {total}");
        let db = options(&fs, sync)
            .open(common::dir())
            .unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let got: Model = common::all(&db).into_iter().collect();
        check(&got, &p, sync, &ctx);
        runs += 1;
        n += step;
    }
    eprintln!(
        "io_error_loop sync={sync} persistent={persistent}: {runs} runs over {total} operations, {failures} with a failure"
    );
    (runs, failures)
}

#[test]
fn sync_writes_survive_a_failure_at_every_operation() {
    for persistent in [false, true] {
        let (runs, failures) = error_loop(true, persistent);
        assert!(
            runs >= 50 && failures > runs / 2,
            "{runs} runs, {failures} failed writes"
        );
    }
}

#[test]
fn buffered_flushes_survive_a_failure_at_every_operation() {
    for persistent in [false, true] {
        let (runs, failures) = error_loop(false, persistent);
        assert!(
            runs >= 50 && failures > runs / 2,
            "{runs} runs, {failures} failed writes"
        );
    }
}
