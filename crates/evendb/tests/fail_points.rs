//! A crash at each named fail point of split, merge, funk rebalance,
//! write batches and single puts (in `Sync` mode), range deletes,
//! checkpoint and recovery: the step fails there, the machine loses power
//! (each file keeping a random part of what was not synced), and the store
//! must recover a prefix of the writes at or after the last checkpoint.
//! Every fail point must be reached.

mod common;

use common::prefix::{check, Model, Pending};
use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::{Db, Options};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const POINTS: &[&str] = &[
    "rebalance.after_divert",
    "rebalance.after_tables",
    "rebalance.before_cleanup",
    "split.after_tables",
    "split.after_publish",
    "split_part.after_table",
    "split_part.before_cleanup",
    "munk_split.after_segments",
    "munk_split.after_swap",
    "munk_split.after_publish",
    "adopt.after_divert",
    "adopt_split.after_segments",
    "adopt_split.after_swap",
    "run.after_write",
    "run.after_publish",
    "merge.between_diverts",
    "merge.after_table",
    "merge.after_publish",
    "merge.before_cleanup",
    "batch.after_journal",
    "batch.after_first_record",
    "sync_put.before_journal",
    "journal.after_seal",
    "journal.after_deferred",
    "journal.before_remove",
    "journal.after_rename",
    "range_delete.before_publish",
    "range_delete.after_publish",
    "range_delete.before_retire",
    "drop_run.after_segment",
    "drop_run.after_swap",
    "drop_run.after_publish",
    "checkpoint.after_snapshot",
    "checkpoint.before_record",
    "checkpoint.after_record",
    "recovery.before_manifest",
    "recovery.after_manifest",
    "recovery.after_orphans",
];

/// The hook of one run: when armed, the first pass through `point` kills
/// the file system (every later operation fails, as in a dead process)
/// and fails the step.
#[derive(Clone)]
struct Trap {
    fs: MemFs,
    point: &'static str,
    armed: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    /// Passes through the point to let go by before it fires.
    skip: Arc<std::sync::atomic::AtomicU64>,
}

impl Trap {
    /// The batch and journal points (and that of single puts through the
    /// journal) run in `Sync` mode with batches in the workload.
    fn batches(&self) -> bool {
        ["batch.", "journal.", "sync_put."]
            .iter()
            .any(|p| self.point.starts_with(p))
    }

    fn options(&self) -> Options {
        let t = self.clone();
        // Runs and adopted logs are kept only while log filters take under
        // a third of the budget: give their points room for a few.
        // Their logs need a few band sections too: longer logs and chunks.
        let adopting = self.point.starts_with("run.") || self.point.starts_with("adopt");
        let options = if self.batches() {
            // `Sync` mode: the batch log's intents and commits are written.
            common::crash_options(&self.fs, true, 64 << 10)
        } else if adopting {
            common::crash_options(&self.fs, false, 128 << 10)
                .max_log_size(8 << 10)
                .max_chunk_size(32 << 10)
        } else if self.point.starts_with("split_part.") {
            // A split part writes its own table only when the logs it
            // would share cost many times its own data to read back: logs
            // far longer than chunks. Munks need room to be split, beside
            // the shares kept for write buffers and working memory.
            common::crash_options(&self.fs, false, 76 << 10).max_log_size(24 << 10)
        } else {
            common::crash_options(&self.fs, false, 64 << 10)
        };
        options.fail_points(move |name| {
            if name == t.point
                && t.armed.load(Ordering::SeqCst)
                && t.skip
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_err()
                && !t.fired.swap(true, Ordering::SeqCst)
            {
                t.fs.set_fault(Some(Fault::CrashAt(1)));
                return true;
            }
            false
        })
    }
}

/// Writes, reads (munk loads), flushes (checkpoints), mass deletes and
/// compactions (merges) until the trap fires or an operation fails.
fn workload(db: &Db, trap: &Trap, ops: u32, rng: &mut fastrand::Rng, p: &mut Pending) {
    for i in 0..ops {
        if trap.fired.load(Ordering::SeqCst) {
            return;
        }
        let phase = i % 600;
        if (500..540).contains(&phase) {
            // Empty a range of keys so its chunks become mergeable.
            let app = (i / 600) % 12;
            let keys: Vec<Vec<u8>> = match db
                .prefix(format!("{app:02}|"))
                .map(|r| r.map(|(k, _)| k))
                .collect()
            {
                Ok(k) => k,
                Err(_) => return,
            };
            for key in keys {
                if !p.write(db, key, None, false) {
                    return;
                }
            }
            if db.compact().is_err() {
                return;
            }
            continue;
        }
        let roll = rng.u8(0..100);
        if trap.point.starts_with("range_delete.") && roll < 3 {
            let app = rng.u8(0..12);
            let (a, b) = (rng.u32(0..500), rng.u32(0..500));
            let lo = format!("{app:02}|{:05}", a.min(b));
            let hi = format!("{app:02}|{:05}", a.max(b));
            if !p.delete_range(db, lo.as_bytes(), hi.as_bytes(), false) {
                return;
            }
            continue;
        }
        if trap.point.starts_with("drop_run.") && roll < 2 {
            // Whole apps: the chunks inside are dropped unread.
            let (a, b) = (rng.u8(0..12), rng.u8(0..12));
            let lo = format!("{:02}|", a.min(b));
            let hi = format!("{:02}|", a.max(b) + 1);
            if !p.delete_range(db, lo.as_bytes(), hi.as_bytes(), false) {
                return;
            }
            continue;
        }
        if trap.batches() && roll < 30 {
            let mut batch = evendb::WriteBatch::new();
            for _ in 0..rng.usize(2..10) {
                let key = format!("{:02}|{:05}", rng.u8(0..12), rng.u32(0..500));
                batch.put(key, vec![i as u8; rng.usize(8..100)]);
            }
            if !p.write_batch(db, &batch, true) {
                return;
            }
            continue;
        }
        // More of them for the points of adoption and runs.
        // The first ones all time-ordered, a sequential load: the chunks
        // of a load adopt their logs and split sharing them.
        let ordered = if trap.point.starts_with("run.") || trap.point.starts_with("adopt") {
            if i < 1500 {
                100
            } else {
                40
            }
        } else {
            15
        };
        if roll < ordered {
            // Time-ordered appends: their logs are kept as they are
            // (adopted), and their chunks split sharing them; in between,
            // rewrites of older ones in random order, which a munk-less
            // chunk writes again sorted (a run) over its adopted logs.
            let event = if (i / 200) % 2 == 0 {
                i
            } else {
                rng.u32(0..i.max(1))
            };
            // A quarter of them a second app's, just below: a chunk holding
            // the ends of both is cut around each (see `write_run`).
            let app = if rng.u8(0..4) == 0 { "zy" } else { "zz" };
            let key = format!("{app}|{event:08}").into_bytes();
            if !p.write(db, key, Some(vec![i as u8; 60]), false) {
                return;
            }
        } else if roll < 85 {
            // Most writes go to a few hot apps, whose chunks get munks.
            let app = if rng.bool() {
                rng.u8(0..3)
            } else {
                rng.u8(0..12)
            };
            let key = format!("{app:02}|{:05}", rng.u32(0..500)).into_bytes();
            let value = vec![i as u8; rng.usize(8..100)];
            if !p.write(db, key, Some(value), false) {
                return;
            }
        } else if roll < 97 {
            let app = rng.u8(0..3);
            if db.prefix(format!("{app:02}|")).take(50).any(|r| r.is_err()) {
                return;
            }
        } else {
            match db.flush() {
                Ok(()) => p.durable = p.writes.len(),
                Err(_) => return,
            }
        }
    }
}

/// Runs the workload on a fresh store with `point` armed, then loses
/// power; returns the trap and what was written if the point was passed.
fn crash_at(point: &'static str, rng: &mut fastrand::Rng, ops: u32) -> Option<(Trap, Pending)> {
    let trap = Trap {
        fs: MemFs::new(),
        point,
        armed: Arc::new(AtomicBool::new(false)),
        fired: Arc::new(AtomicBool::new(false)),
        // Batches come every few writes: let a random number of them
        // commit first, so the crash has acknowledged ones to lose.
        skip: Arc::new(
            (if point.starts_with("batch.")
                || point.ends_with("_publish") && point.starts_with("range_delete.")
            {
                rng.u64(5..80)
            } else if point.starts_with("journal.")
                || point.starts_with("drop_run.")
                || point == "range_delete.before_retire"
            {
                rng.u64(0..3)
            } else {
                0
            })
            .into(),
        ),
    };
    let fs = &trap.fs;
    let db = trap.options().open(common::dir()).expect("open");
    let mut p = Pending::new(Model::new());
    trap.armed.store(true, Ordering::SeqCst);
    workload(&db, &trap, ops, rng, &mut p);
    fs.set_fault(Some(Fault::CrashAt(1)));
    drop(db);
    fs.crash(CrashMode::Random { seed: rng.u64(..) });
    if !trap.fired.load(Ordering::SeqCst) {
        // Recovery's own points: crash while opening.
        if trap.options().open(common::dir()).is_err() {
            fs.crash(CrashMode::Random { seed: rng.u64(..) });
        }
    }
    trap.armed.store(false, Ordering::SeqCst);
    trap.fired.load(Ordering::SeqCst).then_some((trap, p))
}

#[test]
fn a_crash_at_every_fail_point_recovers_a_prefix() {
    let seed = common::seed("a_crash_at_every_fail_point_recovers_a_prefix");
    let mut unreached = Vec::new();
    // EVENDB_FAIL_POINT=name replays one point.
    let only = std::env::var("EVENDB_FAIL_POINT").ok();
    for (n, point) in POINTS.iter().enumerate() {
        if only.as_deref().is_some_and(|o| o != *point) {
            continue;
        }
        let mut rng = fastrand::Rng::with_seed(seed + n as u64);
        // Recovery's points are passed at the reopen: a short run will do.
        let ops = if point.starts_with("recovery.") {
            800
        } else {
            6000
        };
        // A rare point may not come up in one random run (one seed in
        // about forty missed `split_part.after_table`): up to three runs,
        // each longer, on the same random stream.
        let Some((trap, p)) = (1..=3).find_map(|run| crash_at(point, &mut rng, ops * run)) else {
            unreached.push(*point);
            continue;
        };
        let ctx = format!("seed {seed}, crash at {point}");
        let db = trap
            .options()
            .open(common::dir())
            .unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let got: Model = common::all(&db).into_iter().collect();
        check(&got, &p, trap.batches(), &ctx);
        let report = db.verify_integrity().expect("verify");
        assert!(report.is_ok(), "{ctx}: {report:?}");
        eprintln!(
            "{point}: crashed after {} writes, {} checkpointed",
            p.writes.len(),
            p.durable
        );
    }
    assert!(
        unreached.is_empty(),
        "fail points never reached: {unreached:?}"
    );
}
