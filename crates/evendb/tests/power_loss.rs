//! Simulated power loss: thousands of crash–recover cycles over the
//! in-memory file system, each file keeping a random prefix of its unsynced
//! writes (the last one possibly torn) and the directory a random prefix of
//! its unsynced entry changes. Crashes hit writes, munk loads and
//! evictions, splits, merges, rebalances, checkpoints and recovery itself.
//!
//! The check uses the engine's versions as the commit order: the recovered
//! store must equal exactly the writes up to some point (no prefix
//! violation), that point must be at or after the last acknowledged
//! checkpoint (`Buffered`) or include every acknowledged write (`Sync`),
//! and nothing else may appear.
//!
//! `EVENDB_ITERATIONS` sets the cycles per test (default: CI-sized);
//! `EVENDB_SEED` replays a run.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::{Db, Durability, Options};
use std::collections::BTreeMap;
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
struct Write {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    version: u64,
}

fn apply(state: &mut Model, w: &Write) {
    match &w.value {
        Some(v) => state.insert(w.key.clone(), v.clone()),
        None => state.remove(&w.key),
    };
}

fn options(fs: &MemFs, sync: bool) -> Options {
    common::tiny(fs)
        .durability(if sync {
            Durability::Sync
        } else {
            // Checkpoints come from the test's flushes only, so each cycle
            // is reproducible from its seed.
            Durability::Buffered {
                sync_interval: Duration::from_secs(3600),
            }
        })
        // Small enough that munks are loaded and evicted all the time.
        .memory_budget(96 << 10)
}

#[derive(Debug, Default)]
struct Report {
    cycles: u64,
    crashes_in_recovery: u64,
    writes: u64,
    acknowledged_checkpoints: u64,
    /// Cycles that recovered past the last acknowledged checkpoint (a
    /// checkpoint whose record landed although its call failed).
    recovered_past_checkpoint: u64,
}

/// What the last cycle wrote, for checking the next recovery.
struct Pending {
    base: Model,
    writes: Vec<Write>,
    /// Writes acknowledged durable: before the last successful flush
    /// (`Buffered`), or every acknowledged write (`Sync`).
    durable: usize,
    /// A write that failed (it may or may not have landed in `Sync` mode).
    failed: Option<Write>,
}

/// Checks `got` against the allowed recovered states; returns the state.
fn check(got: &Model, p: &Pending, sync: bool, ctx: &str, report: &mut Report) {
    let mut state = p.base.clone();
    let mut allowed = Vec::new();
    if sync {
        for w in &p.writes {
            apply(&mut state, w);
        }
        allowed.push(state.clone());
        if let Some(f) = &p.failed {
            apply(&mut state, f);
            allowed.push(state);
        }
        assert!(
            allowed.iter().any(|a| a == got),
            "{ctx}: recovered state is not every acknowledged write (plus maybe the failed one)"
        );
        return;
    }
    // Buffered: a cut between two versions, at or after `durable`.
    for (i, w) in p.writes.iter().enumerate() {
        let boundary = i == 0 || p.writes[i - 1].version < w.version;
        if boundary && i >= p.durable && *got == state {
            if i > p.durable {
                report.recovered_past_checkpoint += 1;
            }
            return;
        }
        apply(&mut state, w);
    }
    if p.writes.len() >= p.durable && *got == state {
        return;
    }
    // Diagnose: was it a prefix below the checkpoint (lost), or no prefix?
    let mut state = p.base.clone();
    let mut below = None;
    for (i, w) in p.writes.iter().enumerate() {
        if *got == state {
            below = Some(i);
        }
        apply(&mut state, w);
    }
    match below {
        Some(i) => panic!(
            "{ctx}: lost acknowledged writes: recovered the first {i} of {} writes, {} were checkpointed",
            p.writes.len(),
            p.durable
        ),
        None => {
            let extra: Vec<_> = got
                .keys()
                .chain(state.keys())
                .filter(|k| got.get(*k) != state.get(*k))
                .take(3)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            panic!("{ctx}: recovered state is no prefix of the writes (e.g. keys {extra:?})")
        }
    }
}

/// Opens after a crash, crashing again during recovery now and then;
/// returns the store with no fault armed.
fn recover(fs: &MemFs, sync: bool, rng: &mut fastrand::Rng, report: &mut Report) -> Db {
    loop {
        if rng.u8(0..4) == 0 {
            fs.set_fault(Some(Fault::CrashAt(rng.u64(1..12))));
        }
        match options(fs, sync).open(common::dir()) {
            Ok(db) => {
                fs.set_fault(None);
                return db;
            }
            Err(_) => {
                report.crashes_in_recovery += 1;
                fs.crash(CrashMode::Random { seed: rng.u64(..) });
            }
        }
    }
}

fn cycles(sync: bool, name: &str, default: u64) -> Report {
    let seed = common::seed(name);
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let mut report = Report::default();
    let mut pending = Pending {
        base: Model::new(),
        writes: Vec::new(),
        durable: 0,
        failed: None,
    };
    for cycle in 0..common::iterations(default) {
        let ctx = format!("seed {seed}, cycle {cycle}");
        let db = recover(&fs, sync, &mut rng, &mut report);
        let got: Model = common::all(&db).into_iter().collect();
        check(&got, &pending, sync, &ctx, &mut report);
        if cycle % 16 == 0 {
            let integrity = db.verify_integrity().expect("verify");
            assert!(integrity.is_ok(), "{ctx}: {integrity:?}");
        }
        pending = Pending {
            base: got,
            writes: Vec::new(),
            durable: 0,
            failed: None,
        };
        fs.set_fault(Some(Fault::CrashAt(rng.u64(1..600))));
        for i in 0..rng.u32(50..400) {
            let roll = rng.u8(0..100);
            if roll < 80 {
                // Keys of 24 "apps", spread over many chunks.
                let key = format!("{:02}|{:05}", rng.u8(0..24), rng.u32(0..400)).into_bytes();
                let value = (roll >= 10).then(|| vec![i as u8; rng.usize(1..120)]);
                match db.write_stamped(&key, value.as_deref()) {
                    Ok((version, _)) => {
                        pending.writes.push(Write {
                            key,
                            value,
                            version,
                        });
                        if sync {
                            pending.durable = pending.writes.len();
                        }
                    }
                    Err(_) => {
                        pending.failed = Some(Write {
                            key,
                            value,
                            version: u64::MAX,
                        });
                        break;
                    }
                }
            } else if roll < 92 {
                // Reads heat chunks: munks are loaded (and others evicted).
                let app = format!("{:02}|", rng.u8(0..24));
                if db.prefix(&app).take(20).any(|r| r.is_err()) {
                    break;
                }
            } else if roll < 98 {
                match db.flush() {
                    Ok(()) => {
                        pending.durable = pending.writes.len();
                        report.acknowledged_checkpoints += 1;
                    }
                    Err(_) => break,
                }
            } else if db.compact().is_err() {
                break;
            }
        }
        report.writes += pending.writes.len() as u64;
        // Power loss: if nothing failed yet, it strikes now, before the
        // clean close could mark the epoch durable.
        fs.set_fault(Some(Fault::CrashAt(1)));
        drop(db);
        fs.crash(CrashMode::Random { seed: rng.u64(..) });
        report.cycles += 1;
    }
    let db = recover(&fs, sync, &mut rng, &mut report);
    let got: Model = common::all(&db).into_iter().collect();
    check(
        &got,
        &pending,
        sync,
        &format!("seed {seed}, last"),
        &mut report,
    );
    eprintln!("{name}: {report:?}");
    report
}

#[test]
fn buffered_mode_recovers_a_prefix_at_or_after_the_last_checkpoint() {
    let r = cycles(false, "buffered_power_loss", 300);
    assert!(r.crashes_in_recovery > 0 && r.acknowledged_checkpoints > 0);
}

#[test]
fn sync_mode_recovers_every_acknowledged_write() {
    let r = cycles(true, "sync_power_loss", 200);
    assert!(r.crashes_in_recovery > 0 && r.writes > 0);
}
