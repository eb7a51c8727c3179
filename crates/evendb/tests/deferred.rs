//! `Sync` puts to a chunk with a munk are journaled and kept in the munk;
//! the checkpointer writes them to the chunk's log later, a key put many
//! times once. These tests check that the log then holds every
//! acknowledged write by itself (the journal trimmed), through a power
//! loss, and that a deferred delete is not lost when the munk is rebuilt.

mod common;

use evendb::vfs::{CrashMode, Fault, MemFs};
use evendb::Db;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Power loss: every operation from now on fails (the close syncs
/// nothing), then only synced bytes and directory entries survive.
fn power_loss(fs: &MemFs, db: Db) -> Db {
    fs.set_fault(Some(Fault::CrashAt(1)));
    drop(db);
    fs.crash(CrashMode::DropUnsynced);
    common::tiny(fs)
        .memory_budget(64 << 20)
        .open(common::dir())
        .expect("reopen")
}

#[test]
fn hot_keys_are_logged_once_per_round_and_the_logs_alone_survive_a_power_loss() {
    let fs = MemFs::new();
    let db = common::tiny(&fs)
        .memory_budget(64 << 20)
        .max_chunk_size(1 << 20)
        .max_log_size(1 << 20)
        .open(common::dir())
        .expect("open");
    let mut acked = BTreeMap::new();
    let (keys, rounds) = (50u32, 40u32);
    for r in 0..rounds {
        for k in 0..keys {
            let (key, value) = (format!("k{k:03}"), format!("v{r}-{k}"));
            db.put(&key, &value).unwrap();
            acked.insert(key.into_bytes(), value.into_bytes());
        }
    }
    // Seal the journal, write the deferred records, sync the logs, drop
    // the sealed journal segments.
    db.flush().unwrap();
    let s = db.stats();
    let puts = u64::from(keys * rounds);
    // All but the first few, made before the chunk's munk was loaded.
    assert!(
        s.puts_deferred + u64::from(keys) >= puts,
        "{} of {puts} puts deferred",
        s.puts_deferred
    );
    // The checkpointer may have run a few rounds meanwhile, each writing
    // each key put since at most once.
    assert!(
        s.deferred_logged >= u64::from(keys) && s.deferred_logged * 4 <= puts,
        "{} records logged for {puts} puts of {keys} keys",
        s.deferred_logged
    );

    let db = power_loss(&fs, db);
    // Nothing came from the journal: the flush trimmed it.
    assert_eq!(db.stats().journal_replayed, 0);
    let got: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(got, acked, "acknowledged Sync puts lost by a power loss");
}

#[test]
fn a_deferred_delete_outlives_a_munk_rebuild_that_prunes_it() {
    let fs = MemFs::new();
    let db = common::tiny(&fs)
        .memory_budget(64 << 20)
        .open(common::dir())
        .expect("open");
    for k in 0..20u32 {
        db.put(format!("a{k:02}"), "old").unwrap();
    }
    // In the log now.
    db.flush().unwrap();
    // Deferred tombstones: only the munk and the journal hold them.
    for k in 0..10u32 {
        db.delete(format!("a{k:02}")).unwrap();
    }
    // New small keys until the munk runs out of cells and is rebuilt in
    // memory; no reader holds a snapshot, so the rebuild prunes everything
    // it may (a tombstone with nothing newer is dropped once logged).
    let before = db.stats().munk_rebalances;
    let mut n = 0u32;
    while db.stats().munk_rebalances == before {
        assert!(n < 10_000, "no munk rebalance after {n} new keys");
        db.put(format!("b{n:05}"), "x").unwrap();
        n += 1;
    }
    assert!(db.stats().puts_deferred > 0);
    db.flush().unwrap();

    let db = power_loss(&fs, db);
    assert_eq!(db.stats().journal_replayed, 0);
    for k in 0..20u32 {
        let want = (k >= 10).then(|| b"old".to_vec());
        assert_eq!(db.get(format!("a{k:02}")).unwrap(), want, "a{k:02}");
    }
    assert_eq!(db.prefix("b").count(), n as usize);
}

/// Small chunks with munks holding deferred deletes and puts, ready to
/// merge; returns what every key must read. The fail point after a walk's
/// first deferred record fires at its `armed`-th pass from when `armed` is
/// set (0: never).
fn mergeable(fs: &MemFs, armed: &Arc<AtomicU64>) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let armed = armed.clone();
    let db = common::tiny(fs)
        .memory_budget(64 << 20)
        .fail_points(move |name| {
            name == "deferred.after_first_record"
                && armed.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    == Ok(1)
        })
        .open(common::dir())
        .expect("open");
    let mut want = BTreeMap::new();
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), [i as u8; 40]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..200u32 {
        let key = format!("k{i:03}").into_bytes();
        if i % 10 == 0 {
            db.put(&key, b"new").unwrap();
        } else {
            db.delete(&key).unwrap();
        }
    }
    // Splits and munk rebuilds are done; reads heat every chunk, so each
    // has a munk: what follows is deferred and in no file.
    db.flush().unwrap();
    for _ in 0..100 {
        assert_eq!(db.prefix("k").count(), 20);
    }
    assert!(db.chunks().unwrap().iter().all(|c| c.munk_keys.is_some()));
    for value in [&b"newer"[..], &b"newest"[..]] {
        for i in (0..200u32).step_by(10) {
            let key = format!("k{i:03}").into_bytes();
            if i % 20 == 0 {
                db.put(&key, value).unwrap();
                want.insert(key, value.to_vec());
            } else {
                db.delete(&key).unwrap();
            }
        }
    }
    (db, want)
}

#[test]
fn a_walk_of_deferred_records_failing_part_way_loses_nothing() {
    let fs = MemFs::new();
    let armed = Arc::new(AtomicU64::new(0));
    let (db, mut want) = mergeable(&fs, &armed);
    assert!(db.stats().puts_deferred > 0);
    // The next walk that writes a deferred record (the flush's round, or
    // the checkpointer's) fails after the first one: the store is
    // poisoned, the munks keep the rest.
    armed.store(1, Ordering::SeqCst);
    for i in (5..200u32).step_by(10) {
        let key = format!("k{i:03}").into_bytes();
        db.put(&key, b"last").unwrap();
        want.insert(key, b"last".to_vec());
    }
    assert!(db.flush().is_err());
    assert_eq!(
        armed.load(Ordering::SeqCst),
        0,
        "the fail point was not reached"
    );
    assert!(db.compact().is_err(), "a poisoned store compacts nothing");
    // Every key reads what was acknowledged, by gets and by a scan.
    for i in 0..200u32 {
        let key = format!("k{i:03}").into_bytes();
        assert_eq!(db.get(&key).unwrap().as_ref(), want.get(&key), "k{i:03}");
    }
    let scanned: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(scanned, want, "scan after the failure");
    // And the journal was not trimmed: a power loss loses nothing.
    let db = power_loss(&fs, db);
    let got: BTreeMap<_, _> = common::all(&db).into_iter().collect();
    assert_eq!(got, want, "after a power loss");

    // Without the fault, a compaction merges the small chunks.
    let fs = MemFs::new();
    let (db, want) = mergeable(&fs, &Arc::new(AtomicU64::new(0)));
    db.compact().unwrap();
    assert!(db.stats().merges > 0, "the workload must merge");
    assert_eq!(
        common::all(&db).into_iter().collect::<BTreeMap<_, _>>(),
        want
    );
}
