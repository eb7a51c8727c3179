//! Range and prefix deletes: what they remove and keep, snapshots taken
//! before them, reopening, the space they give back, and readers running
//! while they happen.

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Options};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn key(app: u32, i: u32) -> Vec<u8> {
    format!("app{app:02}|{i:06}").into_bytes()
}

fn open(fs: &MemFs, budget: u64) -> Db {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .max_chunk_size(32 << 10)
        .max_log_size(8 << 10)
        .block_size(1024)
        .memory_budget(budget)
        .maintenance_threads(0)
        .open(common::dir())
        .unwrap()
}

fn fill(db: &Db) {
    for i in 0..3000u32 {
        for app in 0..4 {
            db.put(key(app, i), [app as u8; 40]).unwrap();
        }
    }
}

/// Bytes of the chunks' tables and logs.
fn disk(db: &Db) -> u64 {
    db.chunks()
        .unwrap()
        .iter()
        .map(|c| c.table_bytes + c.log_bytes)
        .sum()
}

fn count(db: &Db, prefix: &str) -> usize {
    db.prefix(prefix)
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .len()
}

#[test]
fn a_range_delete_removes_its_range_only_and_later_writes_stay() {
    for (what, budget) in [("munks", 64u64 << 20), ("no munks", 16 << 10)] {
        let fs = MemFs::new();
        let db = open(&fs, budget);
        fill(&db);
        let before: Pairs = common::all(&db);
        let snap = db.snapshot();
        // App 1 before event 1000, and all of app 2.
        db.delete_range(key(1, 0)..key(1, 1000)).unwrap();
        db.delete_prefix("app02|").unwrap();
        db.put(key(1, 5), "after").unwrap();
        let want: Pairs = before
            .iter()
            .filter(|(k, _)| {
                let k = k.as_slice();
                let in_app1 = k >= key(1, 0).as_slice() && k < key(1, 1000).as_slice();
                !in_app1 && !k.starts_with(b"app02|")
            })
            .cloned()
            .chain([(key(1, 5), b"after".to_vec())])
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let check = |db: &Db, ctx: &str| {
            assert!(common::all(db) == want, "{what}, {ctx}: scan");
            let mut rev: Pairs = db
                .scan::<&[u8], _>(..)
                .rev()
                .collect::<Result<_, _>>()
                .unwrap();
            rev.reverse();
            assert!(rev == want, "{what}, {ctx}: reverse scan");
            for (k, v) in [
                (key(1, 4), None),
                (key(1, 5), Some(b"after".to_vec())),
                (key(1, 999), None),
            ] {
                assert_eq!(db.get(&k).unwrap(), v, "{what}, {ctx}: get {k:?}");
            }
            assert_eq!(db.get(key(1, 1000)).unwrap().map(|v| v.len()), Some(40));
            assert_eq!(db.get(key(2, 7)).unwrap(), None);
            assert_eq!(count(db, "app00|"), 3000);
            assert_eq!(count(db, "app02|"), 0);
            assert_eq!(count(db, "app01|"), 2001);
        };
        check(&db, "at once");
        // A snapshot taken before still reads everything.
        let old: Pairs = snap.scan::<&[u8], _>(..).collect::<Result<_, _>>().unwrap();
        assert!(old == before, "{what}: the snapshot lost data");
        assert_eq!(snap.get(key(2, 7)).unwrap().map(|v| v.len()), Some(40));
        drop(snap);
        db.compact().unwrap();
        check(&db, "compacted");
        drop(db);
        let db = open(&fs, budget);
        check(&db, "reopened");
        assert_eq!(db.stats().range_deletes, 0, "counters start at zero");
    }
}

#[test]
fn the_space_comes_back_once_no_snapshot_needs_it() {
    let fs = MemFs::new();
    let db = open(&fs, 16 << 10);
    fill(&db);
    db.compact().unwrap();
    let full = disk(&db);
    let snap = db.snapshot();
    for app in 0..3 {
        db.delete_prefix(format!("app{app:02}|")).unwrap();
    }
    db.compact().unwrap();
    assert!(
        disk(&db) * 10 > full * 9,
        "a snapshot older than the deletes keeps their data"
    );
    assert_eq!(snap.prefix("app00|").count(), 3000);
    drop(snap);
    // In `Buffered` mode a crash may still undo the deletes until a
    // checkpoint records them: rebuilds keep the data until then. The
    // checkpoint queues the rebuilds that take the space back (run inline
    // here: no maintenance threads); no compaction is asked for.
    db.flush().unwrap();
    let left = disk(&db);
    assert!(
        left * 2 < full,
        "{left} bytes left of {full} after deleting three apps of four"
    );
    assert_eq!(count(&db, "app03|"), 3000);
    assert_eq!(common::all(&db).len(), 3000);
}

#[test]
fn munks_give_back_what_a_range_delete_took() {
    let fs = MemFs::new();
    let db = open(&fs, 64 << 20);
    fill(&db); // Puts to munk-less chunks make them hot: munks load.
    for app in 0..4 {
        assert_eq!(count(&db, &format!("app{app:02}|")), 3000);
    }
    // Munk memory of the chunks wholly inside the three apps deleted below.
    let inside = |db: &Db| -> u64 {
        db.chunks()
            .unwrap()
            .iter()
            .filter(|c| {
                c.min_key.as_slice() >= b"app00|".as_slice()
                    && c.end_key
                        .as_deref()
                        .is_some_and(|e| e <= b"app03|".as_slice())
            })
            .filter_map(|c| c.munk_bytes)
            .sum()
    };
    // Munk memory of the chunk the deletes take in part (app02's end and
    // app03's start).
    let straddling = |db: &Db| -> Option<u64> {
        db.chunks()
            .unwrap()
            .iter()
            .find(|c| {
                c.min_key.as_slice() < b"app03|".as_slice()
                    && c.end_key
                        .as_deref()
                        .is_none_or(|e| e > b"app03|".as_slice())
            })
            .and_then(|c| c.munk_bytes)
    };
    let straddling_before = straddling(&db).expect("no munk on the chunk the deletes take in part");
    let before = db.stats();
    let before_inside = inside(&db);
    assert!(before_inside > 0, "no munk to check");
    // Three apps of four: chunks wholly inside lose their munks, the
    // others rebuild theirs without the deleted cells (once a checkpoint
    // passed the deletes: the flush).
    for app in 0..3 {
        db.delete_prefix(format!("app{app:02}|")).unwrap();
    }
    db.flush().unwrap();
    let after = db.stats();
    assert_eq!(inside(&db), 0, "munks left inside the deleted range");
    // What is left of it holds app03's part only (or was evicted).
    let straddling_after = straddling(&db).unwrap_or(0);
    assert!(
        straddling_after < straddling_before,
        "the munk of the chunk the deletes take in part holds {straddling_after} bytes, {straddling_before} before"
    );
    assert!(
        after.memory_munks + before_inside / 2 < before.memory_munks,
        "munks hold {} bytes, {} before, {before_inside} of them inside the deleted range",
        after.memory_munks,
        before.memory_munks
    );
    assert_eq!(count(&db, "app03|"), 3000);
    assert_eq!(count(&db, "app00|"), 0);
}

#[test]
fn bounds_are_checked_and_empty_ranges_change_nothing() {
    let fs = MemFs::new();
    let db = open(&fs, 16 << 20);
    fill(&db);
    let big = vec![b'k'; evendb::MAX_KEY_SIZE + 1];
    assert!(matches!(
        db.delete_range(big.clone()..),
        Err(evendb::Error::InvalidArgument(_))
    ));
    db.delete_range(key(1, 10)..key(1, 10)).unwrap();
    db.delete_range(key(1, 10)..key(1, 5)).unwrap();
    assert_eq!(common::all(&db).len(), 12000);
    assert_eq!(db.stats().range_deletes, 0);
    // Inclusive and exclusive bounds.
    db.delete_range(key(0, 10)..=key(0, 20)).unwrap();
    assert_eq!(count(&db, "app00|"), 3000 - 11);
    db.delete_range::<&[u8], _>(..).unwrap();
    assert_eq!(common::all(&db), Vec::new());
    assert_eq!(db.stats().range_deletes, 2);
}

#[test]
fn readers_never_see_part_of_a_range_delete() {
    let fs = MemFs::new();
    let db = Options::default()
        .storage(Arc::new(fs.clone()))
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .memory_budget(256 << 10)
        .maintenance_threads(2)
        .open(common::dir())
        .unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Rounds: fill app 5 with 300 keys at once, then drop it.
            let mut b = evendb::WriteBatch::new();
            for n in 1..=60u32 {
                b.clear();
                for i in 0..300 {
                    b.put(key(5, i), n.to_le_bytes());
                }
                db.write(&b).unwrap();
                db.delete_prefix("app05|").unwrap();
            }
            done.store(true, Ordering::Release);
        });
        for _ in 0..2 {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    // A scan sees a whole round or nothing: never part of
                    // one deleted.
                    let n = count(&db, "app05|");
                    assert!(n == 0 || n == 300, "a scan saw {n} of 300 keys");
                    let rev = db
                        .prefix("app05|")
                        .rev()
                        .collect::<Result<Vec<_>, _>>()
                        .unwrap()
                        .len();
                    assert!(
                        rev == 0 || rev == 300,
                        "a reverse scan saw {rev} of 300 keys"
                    );
                }
            });
        }
    });
    assert_eq!(db.stats().range_deletes, 60);
}

/// The chunks wholly inside `[lo, hi)`.
fn inside(db: &Db, lo: &[u8], hi: &[u8]) -> Vec<evendb::ChunkInfo> {
    db.chunks()
        .unwrap()
        .into_iter()
        .filter(|c| c.min_key.as_slice() >= lo && c.end_key.as_deref().is_some_and(|e| e <= hi))
        .collect()
}

#[test]
fn chunks_a_range_delete_takes_whole_are_dropped_unread_and_the_delete_retires() {
    for mode in ["buffered", "sync"] {
        let fs = MemFs::new();
        let opts = || {
            let o = Options::default()
                .storage(Arc::new(fs.clone()))
                .max_chunk_size(32 << 10)
                .max_log_size(8 << 10)
                .block_size(1024)
                .memory_budget(16 << 10)
                .maintenance_threads(0);
            if mode == "sync" {
                o.durability(evendb::Durability::Sync)
            } else {
                // Only `flush` checkpoints (as in `common`): a periodic
                // checkpoint between the delete and the put after it would
                // reclaim while that put lands in the range, and a run of
                // chunks a put reaches meanwhile is rebuilt, not dropped.
                o.durability(evendb::Durability::Buffered {
                    sync_interval: std::time::Duration::from_secs(3600),
                })
            }
        };
        let db = opts().open(common::dir()).unwrap();
        fill(&db);
        db.compact().unwrap();
        db.flush().unwrap();
        let before = db.chunks().unwrap().len();
        let whole = inside(&db, b"app01|", b"app03|");
        assert!(whole.len() >= 4, "{mode}: {} chunks inside", whole.len());
        let whole_bytes: u64 = whole.iter().map(|c| c.table_bytes + c.log_bytes).sum();
        // A write just before the delete: in `Sync` mode, in the journal
        // only (its chunk log is not synced yet). No replay may bring it
        // back once the delete has left the manifest.
        db.put(key(1, 9), b"before").unwrap();
        let read_before = fs.bytes_read();
        // (In `Sync` mode no checkpoint needs to pass the delete: it is
        // reclaimed at once.)
        db.delete_range("app01|".as_bytes().."app03|".as_bytes())
            .unwrap();
        // A write after the delete, inside its range, stays.
        db.put(key(2, 77), b"after").unwrap();
        let s0 = db.stats();
        assert_eq!(s0.range_tombstones, 1, "{mode}");
        // The checkpoint passes the delete: the reclaim runs (inline: no
        // maintenance threads), then the delete retires.
        db.flush().unwrap();
        let read = fs.bytes_read() - read_before;
        let s = db.stats();
        assert!(
            s.chunks_dropped as usize >= whole.len() - 1,
            "{mode}: {} of {} chunks dropped",
            s.chunks_dropped,
            whole.len()
        );
        // The boundary chunks and the one written after the delete are
        // read and rebuilt; the chunks dropped are not read.
        assert!(
            read * 2 < whole_bytes,
            "{mode}: {read} bytes read reclaiming chunks of {whole_bytes} bytes"
        );
        assert_eq!(s.range_deletes_retired, 1, "{mode}");
        assert_eq!(s.range_tombstones, 0, "{mode}");
        assert!(
            db.chunks().unwrap().len() + whole.len() / 2 < before,
            "{mode}: {} chunks left of {before}",
            db.chunks().unwrap().len()
        );
        let check = |db: &Db, when: &str| {
            assert_eq!(count(db, "app00|"), 3000, "{mode} {when}");
            assert_eq!(count(db, "app01|"), 0, "{mode} {when}");
            assert_eq!(
                common::all(db)
                    .into_iter()
                    .filter(|(k, _)| k.starts_with(b"app02|"))
                    .collect::<Vec<_>>(),
                vec![(key(2, 77), b"after".to_vec())],
                "{mode} {when}"
            );
            assert_eq!(count(db, "app03|"), 3000, "{mode} {when}");
        };
        check(&db, "after the reclaim");
        // Writes go on in the dropped range.
        db.put(key(1, 5), b"later").unwrap();
        db.flush().unwrap();
        // A power loss: the delete must stay whole, though the manifest
        // no longer lists it.
        std::mem::forget(db);
        fs.crash(evendb::vfs::CrashMode::DropUnsynced);
        let db = opts().open(common::dir()).unwrap();
        assert_eq!(db.stats().range_tombstones, 0, "{mode}");
        assert_eq!(
            db.get(key(1, 5)).unwrap().as_deref(),
            Some(&b"later"[..]),
            "{mode}"
        );
        db.delete(key(1, 5)).unwrap();
        check(&db, "reopened");
        let report = db.verify_integrity().unwrap();
        assert!(report.orphans.is_empty(), "{mode}: {report:?}");
    }
}

#[test]
fn a_delete_stays_while_a_snapshot_or_an_unreclaimed_chunk_needs_it() {
    let fs = MemFs::new();
    let db = open(&fs, 64 << 20); // munks: the boundary chunk keeps one
    fill(&db);
    let snap = db.snapshot();
    db.delete_prefix("app01|").unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().range_tombstones, 1, "a snapshot older than it");
    assert_eq!(snap.prefix("app01|").count(), 3000);
    drop(snap);
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!(s.range_tombstones, 0, "reclaimed, then retired");
    assert_eq!(count(&db, "app01|"), 0);
    assert_eq!(count(&db, "app00|") + count(&db, "app02|"), 6000);
    // Munks evicted later show the funks: nothing comes back.
    drop(db);
    let db = open(&fs, 16 << 10);
    assert_eq!(count(&db, "app01|"), 0);
    assert_eq!(common::all(&db).len(), 9000);
}

#[test]
fn a_scan_skips_chunks_a_range_delete_hides_before_they_are_reclaimed() {
    let fs = MemFs::new();
    let db = open(&fs, 16 << 10); // munk-less: scans read the funks
    fill(&db);
    db.compact().unwrap();
    db.flush().unwrap();
    let read = |db: &Db, prefix: &str| {
        let before = fs.bytes_read();
        let n = count(db, prefix);
        (n, fs.bytes_read() - before)
    };
    let (live, live_bytes) = read(&db, "app02|");
    assert_eq!(live, 3000);
    let snap = db.snapshot();
    db.delete_prefix("app01|").unwrap();
    // No checkpoint has passed the delete: nothing is reclaimed yet.
    assert_eq!(db.stats().chunks_dropped, 0);
    let (deleted, deleted_bytes) = read(&db, "app01|");
    assert_eq!(deleted, 0);
    assert!(
        deleted_bytes * 10 < live_bytes,
        "a scan of the deleted app read {deleted_bytes} bytes, of a live one {live_bytes}"
    );
    // A write after the delete is found: its chunk is read.
    db.put(key(1, 1500), b"after").unwrap();
    assert_eq!(
        common::all(&db)
            .into_iter()
            .filter(|(k, _)| k.starts_with(b"app01|"))
            .collect::<Vec<_>>(),
        vec![(key(1, 1500), b"after".to_vec())]
    );
    let rev: Vec<_> = db.prefix("app01|").rev().collect::<Result<_, _>>().unwrap();
    assert_eq!(rev, vec![(key(1, 1500), b"after".to_vec())]);
    // A snapshot from before the delete still reads everything.
    assert_eq!(snap.prefix("app01|").count(), 3000);
    assert_eq!(snap.prefix("app01|").rev().count(), 3000);
}
