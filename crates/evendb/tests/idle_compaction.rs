//! Once a store stops taking writes, maintenance rebuilds the chunks whose
//! data a write phase left spread over several log segments into tables.

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Durability, Options};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options(fs: &MemFs) -> Options {
    Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Buffered {
            sync_interval: Duration::from_millis(50),
        })
        .max_chunk_size(1 << 20)
        .max_log_size(256 << 10)
        .block_size(4096)
        // Munks for a few of the chunks only, so updates leave the others
        // in several logs (a munk holds a chunk's updates, and maintenance
        // writes them as a table when it evicts the munk); with room for
        // idle compaction's merges.
        .memory_budget(4 << 20)
        .maintenance_threads(1)
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(200, b'v');
    v
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    for (k, v) in model {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v), "{when}");
    }
    let all = common::all(db);
    assert!(
        all.len() == model.len()
            && all
                .iter()
                .zip(model)
                .all(|(a, (k, v))| a.0 == *k && a.1 == *v),
        "{when}: a scan of everything differs"
    );
}

/// Waits until `done(stats)` or `limit` passes; returns the last stats.
fn wait_for(db: &Db, limit: Duration, done: impl Fn(&evendb::Stats) -> bool) -> evendb::Stats {
    let start = Instant::now();
    loop {
        let s = db.stats();
        if done(&s) || start.elapsed() > limit {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn chunks_left_in_several_logs_are_rebuilt_once_writes_stop() {
    let seed = common::seed("chunks_left_in_several_logs_are_rebuilt_once_writes_stop");
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let db = options(&fs).open(common::dir()).expect("open");
    let n = 20_000;
    let mut model = BTreeMap::new();
    for i in 0..n {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    check(&db, &model, "after the load");
    // Updates of random keys leave each chunk several logs.
    for round in 1..=3 {
        common::random_writes(&db, &mut model, &mut rng, (n, 6_000), 10, |i| {
            (key(i), value(i, round))
        });
    }
    let skipped = db.stats().log_segments_older_skipped;
    // Gets only: a scan of a chunk with many runs would have it rebuilt
    // now (`SCAN_RUNS_MAX`), leaving idle compaction nothing to do.
    for (k, v) in &model {
        assert_eq!(
            db.get(k).expect("get").as_ref(),
            Some(v),
            "after the updates"
        );
    }
    let before = db.stats();
    // Gets found keys in several segments (and skipped the older ones).
    let spread = before.log_segments_older_skipped - skipped;
    assert!(spread > 0, "the updates left no chunk in several logs");
    let s = wait_for(&db, Duration::from_secs(30), |s| {
        s.idle_compactions > before.idle_compactions
    });
    assert!(
        s.idle_compactions > 0,
        "no chunk was rebuilt once the writes stopped: {s:?}"
    );
    assert_eq!(s.puts, before.puts);
    // Once no chunk is left to rebuild, the reads come from tables (and
    // munks).
    let mut s = db.stats();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1500));
        let now = db.stats();
        if now.idle_compactions == s.idle_compactions {
            break;
        }
        s = now;
    }
    let skipped = s.log_segments_older_skipped;
    check(&db, &model, "after the idle compaction");
    let after = db.stats().log_segments_older_skipped - skipped;
    assert!(
        after < spread / 4,
        "gets still find keys in several logs: {after} older segments skipped, {spread} before"
    );
    drop(db);
    let db = options(&fs).open(common::dir()).expect("reopen");
    check(&db, &model, "after a reopen");
}
