//! Logs that arrive in key order are kept as they are: a sequential load
//! writes its data once (splits share the segments, munk-less rebalances
//! adopt them), and gets and scans read the adopted segments in place,
//! before and after a reopen, and after random updates on top (whose logs
//! are written again sorted, as runs).

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Options};
use std::collections::BTreeMap;

fn options(fs: &MemFs) -> Options {
    common::run_sized(fs)
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(200, b'v');
    v
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut fastrand::Rng, when: &str) {
    let all = common::all(db);
    assert_eq!(all.len(), model.len(), "{when}: scan of everything");
    assert!(
        all.iter()
            .zip(model)
            .all(|((k, v), (mk, mv))| k == mk && v == mv),
        "{when}: scan of everything differs"
    );
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for _ in 0..300 {
        let k = keys[rng.usize(..keys.len())];
        assert_eq!(db.get(k).expect("get").as_ref(), model.get(k), "{when}");
        let n = rng.usize(1..200);
        let got: Vec<_> = db
            .scan(k.clone()..)
            .take(n)
            .collect::<Result<_, _>>()
            .expect("scan");
        let want: Vec<_> = model
            .range(k.clone()..)
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            got,
            want,
            "{when}: scan from {}",
            String::from_utf8_lossy(k)
        );
    }
}

#[test]
fn a_sequential_load_is_written_once_and_read_in_place() {
    let seed = common::seed("a_sequential_load_is_written_once_and_read_in_place");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let db = options(&fs).open(common::dir()).expect("open");
    let mut model = BTreeMap::new();
    let n = 40_000;
    // Keys in order, as two writers would put them: now and then a put
    // lands a little late, and rarely one far behind.
    let mut order: Vec<u64> = (0..n).collect();
    for i in 0..order.len() {
        let j = (i + rng.usize(0..4)).min(order.len() - 1);
        order.swap(i, j);
    }
    for i in (0..order.len()).step_by(997).skip(1) {
        let late = order.remove(i - 600);
        order.insert(i, late);
    }
    for &i in &order {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    let s = db.stats();
    assert!(s.log_adoptions > 0, "no log was adopted: {s:?}");
    assert!(
        s.table_bytes_written * 4 < s.user_bytes_written,
        "a sequential load rewrote {} of {} bytes",
        s.table_bytes_written,
        s.user_bytes_written
    );
    check(&db, &model, &mut rng, "after the load");
    db.flush().expect("flush");
    drop(db);

    let db = options(&fs).open(common::dir()).expect("reopen");
    check(&db, &model, &mut rng, "after a reopen");
    // Random updates and deletes on top of the adopted logs: their
    // segments are not banded, so rebalances write tables again.
    for round in 1..=2 {
        common::random_writes(&db, &mut model, &mut rng, (n, 8_000), 20, |i| {
            (key(i), value(i, round))
        });
        check(
            &db,
            &model,
            &mut rng,
            &format!("after update round {round}"),
        );
    }
    let s = db.stats();
    assert!(
        s.log_runs > 0,
        "no unsorted log was written as a run: {s:?}"
    );
    db.flush().expect("flush");
    drop(db);
    let db = options(&fs).open(common::dir()).expect("reopen");
    check(&db, &model, &mut rng, "after updates and a reopen");
    db.compact().expect("compact");
    check(&db, &model, &mut rng, "after compaction");
}

#[test]
fn a_scan_of_a_chunk_with_many_runs_has_it_rebuilt() {
    let seed = common::seed("a_scan_of_a_chunk_with_many_runs_has_it_rebuilt");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let db = options(&fs).open(common::dir()).expect("open");
    let mut model = BTreeMap::new();
    let n = 20_000;
    for i in 0..n {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    // Rounds of random updates, no scan: each rebalance of a munk-less
    // chunk writes its log as one more run.
    let most_segments = |db: &Db| {
        db.chunks()
            .expect("chunks")
            .iter()
            .filter(|c| c.munk_bytes.is_none())
            .map(|c| c.log_segments)
            .max()
            .unwrap_or(0)
    };
    let mut round = 1;
    while most_segments(&db) <= evendb_scan_runs_max() + 1 {
        for _ in 0..4_000 {
            let i = rng.u64(0..n);
            db.put(key(i), value(i, round)).expect("put");
            model.insert(key(i), value(i, round));
        }
        round += 1;
        assert!(round < 40, "no chunk kept several runs: {:?}", db.stats());
    }
    let before = db.stats();
    // Scans of every chunk: those with too many runs are rebuilt (with no
    // maintenance threads, by the scan that finds them).
    let all = common::all(&db);
    assert_eq!(all.len(), model.len());
    assert!(all
        .iter()
        .zip(&model)
        .all(|((k, v), (mk, mv))| k == mk && v == mv));
    let after = db.stats();
    // (A rebuild that finds more than a chunk's worth of data splits.)
    assert!(
        after.rebalances + after.splits > before.rebalances + before.splits,
        "no scan asked for a rebuild: {before:?} then {after:?}"
    );
    assert!(
        most_segments(&db) <= evendb_scan_runs_max() + 1,
        "a scanned chunk kept {} segments",
        most_segments(&db)
    );
    check(&db, &model, &mut rng, "after the rebuilds");
}

/// Banded segments past which a scan asks for a rebuild (the engine's
/// `SCAN_RUNS_MAX`).
fn evendb_scan_runs_max() -> usize {
    4
}

/// Key of event `seq` of app `app`: `app | seq`, so an app's events are
/// neighbours in key order and its new ones land at the end of its range.
fn event(app: u64, seq: u64) -> Vec<u8> {
    format!("app{app:04}|{seq:010}").into_bytes()
}

#[test]
fn an_app_appending_amid_others_gets_a_chunk_whose_logs_are_adopted() {
    let seed = common::seed("an_app_appending_amid_others_gets_a_chunk_whose_logs_are_adopted");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let db = options(&fs).open(common::dir()).expect("open");
    let mut model = BTreeMap::new();
    // Two thousand apps' past events, loaded in key order.
    let apps = 2000;
    let mut next = vec![0u64; apps as usize];
    for app in 0..apps {
        for _ in 0..5 {
            let seq = next[app as usize];
            next[app as usize] += 1;
            db.put(event(app, seq), value(seq, 0)).expect("put");
            model.insert(event(app, seq), value(seq, 0));
        }
    }
    let before = db.stats();
    // Then the stream: app 700 appends at the end of its range, and three
    // puts in ten go to the ends of other apps', all over the key space:
    // a chunk holding app 700's end and other apps' too takes some of
    // those, and its logs are not in key order.
    let busy = 700;
    for _ in 0..30_000 {
        let app = if rng.u8(..10) < 3 {
            rng.u64(0..apps)
        } else {
            busy
        };
        let seq = next[app as usize];
        next[app as usize] += 1;
        db.put(event(app, seq), value(seq, 1)).expect("put");
        model.insert(event(app, seq), value(seq, 1));
    }
    let after = db.stats();
    assert!(
        after.log_adoptions > before.log_adoptions,
        "app {busy}'s logs were never adopted: {before:?} then {after:?}"
    );
    // The chunk holding app 700's newest event holds no later app's.
    let newest = event(busy, next[busy as usize] - 1);
    let chunks = db.chunks().expect("chunks");
    let part = chunks
        .iter()
        .find(|c| c.min_key <= newest && c.end_key.as_ref().is_none_or(|e| *e > newest))
        .expect("a chunk holds every key");
    assert!(
        part.end_key
            .as_ref()
            .is_some_and(|e| *e <= event(busy + 1, next[busy as usize + 1])),
        "app {busy}'s newest events share a chunk with later apps': {part:?}"
    );
    check(&db, &model, &mut rng, "after the stream");
    db.flush().expect("flush");
    drop(db);
    let db = options(&fs).open(common::dir()).expect("reopen");
    check(&db, &model, &mut rng, "after the stream and a reopen");
}
