//! Crash safety of rebalance, split and merge: a simulated power loss at
//! every state-changing I/O step of a rebuild, through the in-memory
//! storage. In sync mode every acknowledged put must survive, and the
//! reopened store must hold no orphan or dangling file.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::Db;
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One chunk with a long log: nothing rebuilt yet.
fn one_big_chunk(fs: &MemFs) -> Model {
    let db = common::tiny(fs)
        .max_log_size(1 << 30)
        .max_chunk_size(1 << 30)
        .open(common::dir())
        .unwrap();
    let mut m = Model::new();
    for i in 0..120u32 {
        let (k, v) = (
            format!("key{:04}", i * 7 % 120).into_bytes(),
            vec![i as u8; 50 + (i % 40) as usize],
        );
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    for i in (0..120u32).step_by(9) {
        let k = format!("key{i:04}").into_bytes();
        db.delete(&k).unwrap();
        m.remove(&k);
    }
    m
}

/// Many small chunks, most of their keys then deleted: compaction merges.
fn many_sparse_chunks(fs: &MemFs) -> Model {
    let db = common::open_tiny(fs);
    let mut m = Model::new();
    for i in 0..300u32 {
        let (k, v) = (format!("key{i:04}").into_bytes(), vec![i as u8; 60]);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    assert!(db.stats().chunks > 3, "setup must produce several chunks");
    for i in 0..300u32 {
        if i % 10 != 0 {
            let k = format!("key{i:04}").into_bytes();
            db.delete(&k).unwrap();
            m.remove(&k);
        }
    }
    m
}

fn check_recovered(fs: &MemFs, want: &Model, ctx: &str) -> Db {
    let db = common::open_tiny(fs);
    let got: Model = common::all(&db).into_iter().collect();
    assert_eq!(&got, want, "data after crash ({ctx})");
    let report = db.verify_integrity().unwrap();
    assert!(report.is_ok(), "integrity after crash ({ctx}): {report:?}");
    db
}

/// Reads every key of the store enough times that its chunks get munks, so
/// the compaction that follows rebuilds and splits from munks.
fn warm(db: &Db, want: &Model) {
    for _ in 0..10 {
        for k in want.keys() {
            db.get(k).unwrap();
        }
    }
    assert!(db.stats().munks > 0, "warming must load munks");
}

/// Crashes the compaction of `setup`'s store at each counted I/O step
/// (after loading munks first, with `warm_up`).
fn crash_at_every_step(setup: fn(&MemFs) -> Model, mode: CrashMode) -> (u64, u64, u64) {
    crash_at_every_step_with(setup, mode, false)
}

fn crash_at_every_step_with(
    setup: fn(&MemFs) -> Model,
    mode: CrashMode,
    warm_up: bool,
) -> (u64, u64, u64) {
    // Dry run: how many steps does the compaction take, and does it rebuild?
    let fs = MemFs::new();
    let want = setup(&fs);
    let db = open_for_compaction(&fs, warm_up, &want);
    fs.set_fault(None);
    db.compact().unwrap();
    let steps = fs.counted_ops();
    let s = db.stats();
    assert!(s.rebalances + s.splits + s.merges > 0);
    drop(db);

    let mut crashed = 0;
    for n in 1..=steps {
        let fs = MemFs::new();
        let want_n = setup(&fs);
        assert_eq!(want_n, want);
        let db = open_for_compaction(&fs, warm_up, &want);
        fs.set_fault(Some(Fault::CrashAt(n)));
        let result = db.compact();
        drop(db);
        if result.is_err() {
            crashed += 1;
        }
        fs.crash(mode);
        let db = check_recovered(&fs, &want, &format!("crash at step {n} of {steps}"));
        // The recovered store keeps working and compacts cleanly.
        db.compact().unwrap();
        let report = db.verify_integrity().unwrap();
        assert!(
            report.is_ok(),
            "after compaction of the recovered store: {report:?}"
        );
    }
    (steps, crashed, s.splits + s.merges)
}

/// The store of `setup`, reopened, its munks loaded if `warm_up`; with a
/// chunk size that the one big chunk of `one_big_chunk` exceeds.
fn open_for_compaction(fs: &MemFs, warm_up: bool, want: &Model) -> Db {
    let db = common::open_tiny(fs);
    if warm_up {
        warm(&db, want);
    }
    db
}

#[test]
fn a_crash_at_any_step_of_a_munk_split_keeps_every_acknowledged_put() {
    for mode in [CrashMode::DropUnsynced, CrashMode::Random { seed: 7 }] {
        let (steps, crashed, structural) = crash_at_every_step_with(one_big_chunk, mode, true);
        eprintln!(
            "munk split ({mode:?}): {steps} steps, {crashed} crashes, {structural} splits/merges"
        );
        assert!(structural > 0 && crashed > 0);
    }
}

#[test]
fn a_crash_at_any_step_of_a_split_keeps_every_acknowledged_put() {
    let (steps, crashed, structural) = crash_at_every_step(one_big_chunk, CrashMode::DropUnsynced);
    eprintln!("split: {steps} steps, {crashed} crashes, {structural} splits/merges in the dry run");
    assert!(structural > 0 && crashed > 0);
}

#[test]
fn a_crash_at_any_step_of_a_merge_keeps_every_acknowledged_put() {
    let (steps, crashed, structural) =
        crash_at_every_step(many_sparse_chunks, CrashMode::DropUnsynced);
    eprintln!("merge: {steps} steps, {crashed} crashes, {structural} splits/merges in the dry run");
    assert!(structural > 0 && crashed > 0);
}

#[test]
fn random_partial_writes_at_a_crash_keep_every_acknowledged_put() {
    let seed = common::seed("random_partial_writes_at_a_crash_keep_every_acknowledged_put");
    for (i, setup) in [one_big_chunk as fn(&MemFs) -> Model, many_sparse_chunks]
        .into_iter()
        .enumerate()
    {
        let (steps, crashed, _) = crash_at_every_step(
            setup,
            CrashMode::Random {
                seed: seed + i as u64,
            },
        );
        assert!(steps > 0 && crashed > 0);
    }
}

#[test]
fn acknowledged_sync_puts_survive_a_crash_during_writes_and_rebuilds() {
    let seed = common::seed("acknowledged_sync_puts_survive_a_crash_during_writes_and_rebuilds");
    let mut rng = fastrand::Rng::with_seed(seed);
    for round in 0..common::iterations(60) {
        let fs = MemFs::new();
        let db = common::open_tiny(&fs);
        fs.set_fault(Some(Fault::CrashAt(rng.u64(1..400))));
        let mut acked = Model::new();
        let mut pending: Option<(Vec<u8>, Option<Vec<u8>>)> = None;
        for i in 0..400u32 {
            let k = format!("k{:03}", rng.u32(0..150)).into_bytes();
            let v = if rng.u8(0..5) == 0 {
                None
            } else {
                Some(vec![i as u8; rng.usize(1..90)])
            };
            let r = match &v {
                Some(v) => db.put(&k, v),
                None => db.delete(&k),
            };
            if r.is_err() {
                pending = Some((k, v));
                break;
            }
            match v {
                Some(v) => acked.insert(k, v),
                None => acked.remove(&k),
            };
        }
        drop(db);
        fs.crash(CrashMode::Random { seed: seed ^ round });
        let db = common::tiny(&fs)
            .open(common::dir())
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let got: Model = common::all(&db).into_iter().collect();
        // The failed write may or may not have landed; nothing else differs.
        let mut with_pending = acked.clone();
        if let Some((k, v)) = pending {
            match v {
                Some(v) => with_pending.insert(k, v),
                None => with_pending.remove(&k),
            };
        }
        assert!(
            got == acked || got == with_pending,
            "round {round}, seed {seed}"
        );
        assert!(
            db.verify_integrity().unwrap().is_ok(),
            "round {round}, seed {seed}"
        );
    }
}
