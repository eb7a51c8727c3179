//! Backup and chunk listing.

mod common;

use evendb::Db;
use std::sync::atomic::{AtomicBool, Ordering};

fn key(i: u32) -> Vec<u8> {
    format!("{:05}", i * 7919 % 100_000).into_bytes()
}

#[test]
fn a_backup_under_concurrent_writes_opens_and_is_one_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = evendb::Options::default()
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .open(dir.path())
        .unwrap();
    const KEYS: u32 = 400;
    for i in 0..KEYS {
        db.put(key(i), 0u32.to_le_bytes()).unwrap();
    }
    let stop = AtomicBool::new(false);
    let backups = tempfile::tempdir().unwrap();
    std::thread::scope(|s| {
        let writer = {
            let (db, stop) = (db.clone(), &stop);
            s.spawn(move || {
                let mut round = 0u32;
                while !stop.load(Ordering::Acquire) {
                    round += 1;
                    for i in 0..KEYS {
                        db.put(key(i), round.to_le_bytes()).unwrap();
                    }
                }
                round
            })
        };
        for b in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let dest = backups.path().join(format!("b{b}"));
            db.backup(&dest).unwrap();
            let copy = Db::open(&dest).unwrap();
            assert!(copy.verify_integrity().unwrap().is_ok());
            let rounds: Vec<u32> = (0..KEYS)
                .map(|i| {
                    let v = copy
                        .get(key(i))
                        .unwrap()
                        .expect("every key is in the backup");
                    u32::from_le_bytes(v.as_slice().try_into().unwrap())
                })
                .collect();
            let clean_cut = rounds.windows(2).all(|w| w[0] >= w[1])
                && rounds.iter().max().unwrap() - rounds.iter().min().unwrap() <= 1;
            assert!(clean_cut, "backup {b} is torn: {rounds:?}");
        }
        stop.store(true, Ordering::Release);
        assert!(writer.join().unwrap() > 1);
    });
    assert!(db.stats().rebalances > 0, "rebuilds ran during the backups");
}

#[test]
fn a_backup_refuses_a_non_empty_destination() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let dest = tempfile::tempdir().unwrap();
    std::fs::write(dest.path().join("x"), b"x").unwrap();
    assert!(matches!(
        db.backup(dest.path()),
        Err(evendb::Error::InvalidArgument(_))
    ));
    assert_eq!(std::fs::read(dest.path().join("x")).unwrap(), b"x");
}

#[test]
fn chunks_partition_the_key_space_in_order() {
    let fs = evendb::vfs::MemFs::new();
    let db = common::open_tiny(&fs);
    for i in 0..500u32 {
        db.put(key(i), [7u8; 40]).unwrap();
    }
    let chunks = db.chunks().unwrap();
    assert!(chunks.len() > 2);
    assert!(chunks[0].min_key.is_empty());
    assert_eq!(chunks.last().unwrap().end_key, None);
    for w in chunks.windows(2) {
        assert_eq!(w[0].end_key.as_ref(), Some(&w[1].min_key));
    }
    let total: u64 = chunks.iter().map(|c| c.table_bytes + c.log_bytes).sum();
    assert!(total > 500 * 40);
}

/// Regression: closing could hang when the shutdown notice reached a
/// maintenance thread between its check of the flag and its wait (seen about
/// once in 30 to 90 closes).
#[test]
fn closing_a_store_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    drop(Db::open(dir.path()).unwrap());
    for _ in 0..common::iterations(500) {
        drop(Db::open(dir.path()).unwrap());
    }
}

/// Verifies the store while a rebuild is stopped at `points` (its new
/// files written but not published, or published with the old ones not
/// yet removed): neither is an orphan.
fn verify_while_paused_at(points: &'static [&'static str]) {
    use std::sync::mpsc;
    let dir = tempfile::tempdir().unwrap();
    let (reached_tx, reached) = mpsc::channel::<&'static str>();
    let (release, release_rx) = mpsc::channel::<()>();
    let (reached_tx, release_rx) = (
        std::sync::Mutex::new(Some(reached_tx)),
        std::sync::Mutex::new(release_rx),
    );
    let db = evendb::Options::default()
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .fail_points(move |name| {
            if let Some(p) = points.iter().find(|p| **p == name) {
                // Only the first pass stops.
                if let Some(tx) = reached_tx.lock().unwrap().take() {
                    tx.send(p).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                }
            }
            false
        })
        .open(dir.path())
        .unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (db2, stop) = (db.clone(), &stop);
        s.spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Acquire) {
                db2.put(key(i % 20_000), [7u8; 100]).unwrap();
                i += 1;
            }
        });
        let point = reached
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a rebuild reaches the point");
        let report = db.verify_integrity().unwrap();
        stop.store(true, Ordering::Release);
        release.send(()).unwrap();
        assert!(report.is_ok(), "paused at {point}: {report:?}");
    });
    let report = db.verify_integrity().unwrap();
    assert!(report.is_ok(), "after {points:?}: {report:?}");
}

#[test]
fn a_rebuild_s_unpublished_files_are_not_orphans() {
    verify_while_paused_at(&["rebalance.after_tables", "split.after_tables"]);
}

#[test]
fn files_a_rebuild_replaced_but_has_not_removed_are_not_orphans() {
    // (A split part's old logs stay: its sibling shares them.)
    verify_while_paused_at(&["rebalance.before_cleanup"]);
}
