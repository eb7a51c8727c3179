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

use common::prefix::{check, Model, Pending, Write};
use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::{Db, Durability, Options};
use std::time::Duration;

fn options(fs: &MemFs, sync: bool) -> Options {
    common::crash_options(fs, sync, 96 << 10)
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
    /// `Sync` puts whose log record waited for the checkpointer, and of
    /// those, the records written to logs before the power failed.
    puts_deferred: u64,
    deferred_logged: u64,
}

/// Opens after a crash, crashing again during recovery now and then;
/// returns the store with no fault armed.
fn recover(fs: &MemFs, sync: bool, rng: &mut fastrand::Rng, report: &mut Report) -> Db {
    for attempt in 0.. {
        let armed = rng.u8(0..4) == 0;
        if armed {
            fs.set_fault(Some(Fault::CrashAt(rng.u64(1..12))));
        }
        match options(fs, sync).open(common::dir()) {
            Ok(db) => {
                fs.set_fault(None);
                return db;
            }
            // An open with no fault armed must succeed: recovery must
            // never leave a store it cannot open.
            Err(e) if !armed => panic!("open failed with no fault armed (attempt {attempt}): {e}"),
            Err(_) => {
                report.crashes_in_recovery += 1;
                fs.crash(CrashMode::Random { seed: rng.u64(..) });
            }
        }
    }
    unreachable!()
}

fn cycles(sync: bool, name: &str, default: u64) -> Report {
    let seed = common::seed(name);
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let mut report = Report::default();
    let mut pending = Pending::new(Model::new());
    for cycle in 0..common::iterations(default) {
        let ctx = format!("seed {seed}, cycle {cycle}");
        let db = recover(&fs, sync, &mut rng, &mut report);
        let got: Model = common::all(&db).into_iter().collect();
        if check(&got, &pending, sync, &ctx) {
            report.recovered_past_checkpoint += 1;
        }
        if cycle % 16 == 0 {
            let integrity = db.verify_integrity().expect("verify");
            assert!(integrity.is_ok(), "{ctx}: {integrity:?}");
        }
        pending = Pending::new(got);
        fs.set_fault(Some(Fault::CrashAt(rng.u64(1..600))));
        for i in 0..rng.u32(50..400) {
            let roll = rng.u8(0..100);
            if roll < 2 {
                // Drop part of an app: all of it or none survives.
                let app = rng.u8(0..24);
                let (a, b) = (rng.u32(0..400), rng.u32(0..400));
                let lo = format!("{app:02}|{:05}", a.min(b));
                let hi = format!("{app:02}|{:05}", a.max(b));
                if !pending.delete_range(&db, lo.as_bytes(), hi.as_bytes(), sync) {
                    break;
                }
            } else if roll < 8 {
                // A batch over several apps: all of it or none survives.
                let mut batch = evendb::WriteBatch::new();
                for _ in 0..rng.usize(2..12) {
                    let key = format!("{:02}|{:05}", rng.u8(0..24), rng.u32(0..400));
                    match rng.u8(0..8) {
                        0 => batch.delete(key),
                        _ => batch.put(key, vec![i as u8 ^ 0x5A; rng.usize(1..120)]),
                    }
                }
                if !pending.write_batch(&db, &batch, sync) {
                    break;
                }
            } else if roll < 80 {
                // Keys of 24 "apps", spread over many chunks.
                let key = format!("{:02}|{:05}", rng.u8(0..24), rng.u32(0..400)).into_bytes();
                let value = (roll >= 10).then(|| vec![i as u8; rng.usize(1..120)]);
                if !pending.write(&db, key, value, sync) {
                    break;
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
        let stats = db.stats();
        report.puts_deferred += stats.puts_deferred;
        report.deferred_logged += stats.deferred_logged;
        // Power loss: if nothing failed yet, it strikes now, before the
        // clean close could mark the epoch durable.
        fs.set_fault(Some(Fault::CrashAt(1)));
        drop(db);
        fs.crash(CrashMode::Random { seed: rng.u64(..) });
        report.cycles += 1;
    }
    let db = recover(&fs, sync, &mut rng, &mut report);
    let got: Model = common::all(&db).into_iter().collect();
    check(&got, &pending, sync, &format!("seed {seed}, last"));
    eprintln!("{name}: {report:?}");
    report
}

#[test]
fn buffered_mode_recovers_a_prefix_at_or_after_the_last_checkpoint() {
    let r = cycles(false, "buffered_power_loss", 800);
    assert!(r.crashes_in_recovery > 0 && r.acknowledged_checkpoints > 0);
}

#[test]
fn sync_mode_recovers_every_acknowledged_write() {
    let r = cycles(true, "sync_power_loss", 400);
    assert!(r.crashes_in_recovery > 0 && r.writes > 0);
    // Puts to munks were journaled only, some written to logs later.
    assert!(r.puts_deferred > 0 && r.deferred_logged > 0, "{r:?}");
}

/// Writer threads, background maintenance and the background checkpointer
/// all run when the power fails. The commit order is the engine's
/// `(version, counter)` stamp: the recovered store must equal the writes
/// with versions up to some cut, applied in stamp order, and the cut must
/// cover every write acknowledged before a flush that succeeded.
#[test]
fn concurrent_writers_and_background_work_recover_a_prefix() {
    use std::sync::{Arc, Mutex};
    let seed = common::seed("concurrent_power_loss");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let opts = || {
        options(&fs, false)
            .durability(Durability::Buffered {
                sync_interval: Duration::from_millis(3),
            })
            .maintenance_threads(1)
    };
    let mut base = Model::new();
    let mut beyond = 0;
    let cycles = common::iterations(60);
    for cycle in 0..cycles {
        let ctx = format!("seed {seed}, cycle {cycle}");
        let db = opts().open(common::dir()).expect("open");
        assert_eq!(
            common::all(&db).into_iter().collect::<Model>(),
            base,
            "{ctx}: reopen changed the store"
        );
        // (write, counter) of every acknowledged write.
        let acked: Arc<Mutex<Vec<(Write, u64)>>> = Arc::default();
        fs.set_fault(Some(Fault::CrashAt(rng.u64(20..3000))));
        let mut durable = 0;
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let (db, acked) = (&db, &acked);
                let mut r = fastrand::Rng::with_seed(seed ^ (cycle << 8) ^ t);
                s.spawn(move || {
                    for i in 0..400u32 {
                        let key = format!("{:02}|{:04}", r.u8(0..16), r.u32(0..200)).into_bytes();
                        let value = (r.u8(0..10) > 0).then(|| {
                            let mut v = format!("t{t}-{i}-").into_bytes();
                            v.resize(r.usize(8..90), b'.');
                            v
                        });
                        if t == 0 && i % 4 == 0 {
                            // A batch: its writes share one version, so
                            // the prefix check allows no cut inside it.
                            let mut batch = evendb::WriteBatch::new();
                            for _ in 0..r.usize(2..8) {
                                let k = format!("{:02}|{:04}", r.u8(0..16), r.u32(0..200));
                                batch.put(k, format!("b{cycle}-{i}"));
                            }
                            match db.write_stamped_batch(&batch) {
                                Ok(version) => {
                                    let mut acked = acked.lock().unwrap();
                                    for (n, (k, v)) in batch.iter().enumerate() {
                                        let w = Write {
                                            key: k.to_vec(),
                                            value: v.map(<[u8]>::to_vec),
                                            version,
                                        };
                                        acked.push((w, n as u64));
                                    }
                                    continue;
                                }
                                Err(_) => return,
                            }
                        }
                        match db.write_stamped(&key, value.as_deref()) {
                            Ok((version, counter)) => {
                                let w = Write {
                                    key,
                                    value,
                                    version,
                                };
                                acked.lock().unwrap().push((w, counter));
                            }
                            Err(_) => return,
                        }
                        if i % 16 == 0 {
                            let _ = db.prefix(format!("{:02}|", r.u8(0..4))).take(10).count();
                        }
                    }
                });
            }
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(2));
                let before = acked.lock().unwrap().len();
                match db.flush() {
                    Ok(()) => durable = before,
                    Err(_) => break,
                }
            }
        });
        fs.set_fault(Some(Fault::CrashAt(1)));
        drop(db);
        fs.crash(CrashMode::Random { seed: rng.u64(..) });

        // In stamp order, a cut between two versions is a prefix; it must
        // cover every version flushed.
        let mut writes = std::mem::take(&mut *acked.lock().unwrap());
        let floor = writes[..durable].iter().map(|(w, _)| w.version).max();
        writes.sort_by_key(|(w, c)| (w.version, *c));
        let pending = Pending {
            base,
            durable: writes
                .iter()
                .take_while(|(w, _)| floor.is_some_and(|f| w.version <= f))
                .count(),
            writes: writes.into_iter().map(|(w, _)| w).collect(),
            failed: Vec::new(),
        };
        let db = opts()
            .open(common::dir())
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let got: Model = common::all(&db).into_iter().collect();
        drop(db);
        beyond += u64::from(check(&got, &pending, false, &ctx));
        base = got;
    }
    eprintln!("concurrent_power_loss: {cycles} cycles, {beyond} recovered past the last acknowledged flush");
}
