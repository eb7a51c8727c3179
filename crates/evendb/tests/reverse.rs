//! Reverse scans against forward scans of the same store: every range,
//! read backwards in windows, must be the forward result reversed, whether
//! the chunks it crosses are served by munks, by tables and logs, or by
//! logs kept as written (a sequential load).

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Options};
use std::ops::Bound;
use std::sync::Arc;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn key(i: u32) -> Vec<u8> {
    format!("app{:02}|{:06}", i % 7, i).into_bytes()
}

fn fill(db: &Db, rng: &mut fastrand::Rng, in_key_order: bool) {
    let mut order: Vec<u32> = (0..6000).collect();
    if in_key_order {
        // A sequential load: logs in key order, kept as written (banded).
        order.sort_by_key(|&i| key(i));
    }
    for i in order {
        db.put(key(i), vec![(i % 251) as u8; rng.usize(1..200)])
            .unwrap();
    }
    // Deletes leave tombstones inside windows.
    for _ in 0..1500 {
        db.delete(key(rng.u32(0..6000))).unwrap();
    }
}

fn bound(rng: &mut fastrand::Rng) -> Bound<Vec<u8>> {
    match rng.u8(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng.u32(0..6100))),
        _ => Bound::Excluded(key(rng.u32(0..6100))),
    }
}

fn check_ranges(db: &Db, rng: &mut fastrand::Rng, what: &str) {
    for _ in 0..60 {
        let range = (bound(rng), bound(rng));
        let forward: Pairs = db.scan(range.clone()).collect::<Result<_, _>>().unwrap();
        let mut reverse: Pairs = db
            .scan(range.clone())
            .rev()
            .collect::<Result<_, _>>()
            .unwrap();
        reverse.reverse();
        assert_eq!(forward.len(), reverse.len(), "{what}: {range:?}");
        assert!(forward == reverse, "{what}: {range:?}");
        // "The latest 10 events of this app."
        let app = format!("app{:02}|", rng.u32(0..7));
        let latest: Pairs = db
            .prefix(&app)
            .rev()
            .take(10)
            .collect::<Result<_, _>>()
            .unwrap();
        let all: Pairs = db.prefix(&app).collect::<Result<_, _>>().unwrap();
        let want: Pairs = all.iter().rev().take(10).cloned().collect();
        assert_eq!(latest, want, "{what}: latest of {app}");
    }
}

#[test]
fn reverse_scans_are_forward_scans_reversed_over_munks_tables_and_logs() {
    let seed = common::seed("reverse_scans");
    let mut rng = fastrand::Rng::with_seed(seed);
    for (what, budget, in_key_order) in [
        ("munks", 64u64 << 20, false),
        ("no munks", 16 << 10, false),
        ("no munks, sequential load", 16 << 10, true),
    ] {
        let fs = MemFs::new();
        let open = || {
            Options::default()
                .storage(Arc::new(fs.clone()))
                .max_chunk_size(64 << 10)
                .max_log_size(16 << 10)
                .block_size(1024)
                .memory_budget(budget)
                .maintenance_threads(0)
                .open(common::dir())
                .unwrap()
        };
        let db = open();
        fill(&db, &mut rng, in_key_order);
        let s = db.stats();
        assert!(s.chunks > 10, "{what}: {} chunks", s.chunks);
        check_ranges(&db, &mut rng, what);
        db.compact().unwrap();
        check_ranges(&db, &mut rng, &format!("{what}, compacted"));
        drop(db);
        // Reopened: no munks yet, chunks read from their funks.
        let db = open();
        check_ranges(&db, &mut rng, &format!("{what}, reopened"));
    }
}

#[test]
fn both_ends_meet_without_overlap_or_gap() {
    let fs = MemFs::new();
    let db = common::tiny(&fs).open(common::dir()).unwrap();
    for i in 0..500u32 {
        db.put(key(i), i.to_le_bytes()).unwrap();
    }
    let all: Pairs = common::all(&db);
    for split in [0usize, 1, 17, 250, 499, 500] {
        let mut scan = db.scan::<&[u8], _>(..);
        let front: Pairs = scan.by_ref().take(split).collect::<Result<_, _>>().unwrap();
        let mut back: Pairs = scan.by_ref().rev().collect::<Result<_, _>>().unwrap();
        back.reverse();
        assert_eq!(scan.next().map(|r| r.unwrap()), None);
        let mut joined = front;
        joined.extend(back);
        assert!(
            joined == all,
            "split after {split}: {} pairs joined, {} in the store",
            joined.len(),
            all.len()
        );
    }
}

/// A reverse scan of a munk-less chunk finds each window's start in the
/// sorted index of the chunk's unsorted log, then scans the window through
/// it. When the budget does not keep that index, the scan holds it for its
/// windows: the log is read whole once, not twice per window.
#[test]
fn a_reverse_scan_reads_an_unkept_log_index_once_for_all_its_windows() {
    let fs = MemFs::new();
    let db = common::run_sized(&fs)
        .memory_budget(64 << 10)
        .open(common::dir())
        .unwrap();
    // One chunk whose log, in random order, stays below its limit.
    let mut rng = fastrand::Rng::with_seed(7);
    let mut order: Vec<u32> = (0..1500).collect();
    rng.shuffle(&mut order);
    for &i in &order {
        db.put(key(i), vec![(i % 251) as u8; 300]).unwrap();
    }
    let chunks = db.chunks().unwrap();
    assert!(
        chunks.len() == 1 && chunks[0].munk_bytes.is_none() && chunks[0].log_segments == 1,
        "one munk-less chunk with one log expected: {chunks:?}"
    );
    let log_bytes = 1500 * 300;
    let before = fs.bytes_read();
    let back: Pairs = db
        .scan::<&[u8], _>(..)
        .rev()
        .collect::<Result<_, _>>()
        .unwrap();
    let read = fs.bytes_read() - before;
    let mut forward = common::all(&db);
    forward.reverse();
    assert!(
        back == forward,
        "the reverse scan differs from the forward one"
    );
    let s = db.stats();
    assert!(
        s.memory_indexes == 0,
        "the budget kept the log's index ({} bytes): nothing to test",
        s.memory_indexes
    );
    assert!(
        read < 3 * log_bytes,
        "a reverse scan read {read} bytes for a log of about {log_bytes}"
    );
}
