//! Write batches: what one batch does, what it refuses, and a concurrent
//! checker that looks for half a batch.
//!
//! The checker: batch writers each own a set of keys spread over the key
//! space and rewrite all of them in every batch with one value id that
//! grows from batch to batch; a filler thread puts new keys so chunks
//! split and rebalance all the time. Readers look for half a batch three
//! ways: a scan or a snapshot must show every key of a writer with one id
//! (or none of them), and gets of a writer's keys one after the other must
//! never see an id go back (a get that saw batch `n` on one key and then
//! batch `n - 1` on the next saw half of batch `n`).

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Durability, Error, Options, WriteBatch, MAX_BATCH_SIZE, MAX_KEY_SIZE};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

#[test]
fn a_batch_applies_every_operation_and_a_later_one_on_a_key_wins() {
    let fs = MemFs::new();
    let db = common::open_tiny(&fs);
    db.put("gone", "x").unwrap();
    let mut b = WriteBatch::new();
    b.put("a", "1");
    b.put("b", "2");
    b.put("a", "3");
    b.delete("gone");
    b.delete("b");
    b.put("c", "4");
    db.write(&b).unwrap();
    assert_eq!(
        common::all(&db),
        vec![
            (b"a".to_vec(), b"3".to_vec()),
            (b"c".to_vec(), b"4".to_vec())
        ]
    );
    // Empty batches are accepted and change nothing; the batch is reusable.
    db.write(WriteBatch::new()).unwrap();
    b.clear();
    b.put("d", "5");
    db.write(b).unwrap();
    assert_eq!(db.get("d").unwrap().as_deref(), Some(&b"5"[..]));
    let s = db.stats();
    // Duplicates of a key are applied once: 1 + 2 + 1 puts, 2 deletes.
    assert_eq!((s.batches, s.puts, s.deletes), (2, 4, 2));
    drop(db);
    // Durable (the tiny options are `Sync`), and across many chunks.
    let db = common::open_tiny(&fs);
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
    let mut b = WriteBatch::new();
    for i in 0..2000u32 {
        b.put(format!("{:05}", i * 7 % 2000), [i as u8; 40]);
    }
    db.write(&b).unwrap();
    assert!(db.stats().chunks > 1);
    assert_eq!(common::all(&db).len(), 2000 + 3);
}

#[test]
fn oversized_batches_are_refused_before_any_write() {
    let fs = MemFs::new();
    let db = common::open_tiny(&fs);
    let mut b = WriteBatch::new();
    b.put("ok", "v");
    b.put(vec![b'k'; MAX_KEY_SIZE + 1], "v");
    assert!(matches!(db.write(&b), Err(Error::InvalidArgument(_))));
    let mut b = WriteBatch::new();
    let value = vec![0u8; 8 << 20];
    while b.size_in_bytes() <= MAX_BATCH_SIZE {
        b.put(format!("k{}", b.len()), &value);
    }
    assert!(matches!(db.write(&b), Err(Error::InvalidArgument(_))));
    // Nothing was written and the store still takes writes.
    assert_eq!(db.get("ok").unwrap(), None);
    assert_eq!(common::all(&db), Vec::new());
    db.put("after", "v").unwrap();
}

#[test]
fn a_read_only_open_refuses_batches() {
    let fs = MemFs::new();
    drop(common::open_tiny(&fs));
    let db = common::tiny(&fs)
        .read_only(true)
        .open(common::dir())
        .unwrap();
    let mut b = WriteBatch::new();
    b.put("k", "v");
    assert!(matches!(db.write(&b), Err(Error::ReadOnly(_))));
}

#[test]
fn a_sync_batch_takes_one_journal_fsync_and_a_crash_replays_it_whole() {
    use evendb::vfs::CrashMode;
    let fs = MemFs::new();
    let db = common::open_tiny(&fs); // `Sync`, tiny chunks
    let mut b = WriteBatch::new();
    for i in 0..400u32 {
        b.put(format!("{:05}", i * 7 % 400), [i as u8; 30]);
    }
    let before = db.stats();
    db.write(&b).unwrap();
    let s = db.stats();
    assert!(s.chunks > 4, "{} chunks", s.chunks);
    assert_eq!(
        s.journal_syncs - before.journal_syncs,
        1,
        "one durable step"
    );
    assert_eq!(s.log_syncs, before.log_syncs, "no chunk log synced for it");
    // Power fails: only what was synced survives, so the batch is only in
    // the journal.
    std::mem::forget(db);
    fs.crash(CrashMode::DropUnsynced);
    // A read-only open holds the batch in memory, whole, and writes
    // nothing (it used to refuse with `NeedsReplay`).
    let files = |fs: &MemFs| -> Vec<(String, Vec<u8>)> {
        use evendb::vfs::Storage;
        let mut names = fs.list(&common::dir()).unwrap();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let bytes = fs.read_file(&common::dir().join(&n)).unwrap_or_default();
                (n, bytes)
            })
            .collect()
    };
    let before = files(&fs);
    let ro = common::tiny(&fs)
        .read_only(true)
        .open(common::dir())
        .unwrap();
    assert_eq!(ro.stats().journal_replayed, 1);
    assert_eq!(common::all(&ro).len(), 400);
    assert_eq!(ro.get("00007").unwrap().as_deref(), Some(&[1u8; 30][..]));
    drop(ro);
    assert!(files(&fs) == before, "a read-only open wrote");
    let db = common::open_tiny(&fs);
    assert_eq!(db.stats().journal_replayed, 1);
    assert_eq!(common::all(&db).len(), 400);
    drop(db);
    // Replayed, synced and removed: the next opens replay nothing, and a
    // read-only one opens.
    let db = common::open_tiny(&fs);
    assert_eq!(db.stats().journal_replayed, 0);
    drop(db);
    let ro = common::tiny(&fs)
        .read_only(true)
        .open(common::dir())
        .unwrap();
    assert_eq!(common::all(&ro).len(), 400);
}

const WRITERS: u64 = 3;
const KEYS_PER_WRITER: u32 = 40;

fn batch_key(writer: u64, i: u32) -> Vec<u8> {
    // Interleaved over the key space: every chunk holds keys of every
    // writer, and a batch spans many chunks.
    format!(
        "{:06}|w{writer}",
        (i * 7919 + writer as u32 * 13) % 1_000_000
    )
    .into_bytes()
}

fn id_of(value: &[u8]) -> u64 {
    u64::from_le_bytes(value[..8].try_into().expect("8-byte id"))
}

fn writer_of(key: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(key).ok()?;
    s.split_once("|w")?.1.parse().ok()
}

/// Checks a consistent read: per writer, its keys all hold one id, or none
/// is there.
fn check_whole(items: &[(Vec<u8>, Vec<u8>)], what: &str) {
    let mut per: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (k, v) in items {
        if let Some(w) = writer_of(k) {
            per.entry(w).or_default().push(id_of(v));
        }
    }
    for (w, ids) in per {
        assert_eq!(
            ids.len(),
            KEYS_PER_WRITER as usize,
            "{what} saw {} of writer {w}'s {KEYS_PER_WRITER} keys",
            ids.len()
        );
        assert!(
            ids.windows(2).all(|p| p[0] == p[1]),
            "{what} saw half a batch of writer {w}: {ids:?}"
        );
    }
}

#[test]
fn no_reader_sees_half_a_batch_while_chunks_split_and_rebalance() {
    let seed = common::seed("batches_concurrent");
    let batches = common::iterations(300);
    let db: Db = Options::default()
        .storage(Arc::new(MemFs::new()))
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_millis(20),
        })
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .block_size(512)
        .memory_budget(256 << 10)
        .maintenance_threads(2)
        .open(common::dir())
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let db = db.clone();
            writers.push(s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ (w + 1));
                let mut b = WriteBatch::new();
                for n in 1..=batches {
                    b.clear();
                    for i in 0..KEYS_PER_WRITER {
                        let mut v = n.to_le_bytes().to_vec();
                        v.resize(rng.usize(8..200), 0xCD);
                        b.put(batch_key(w, i), v);
                    }
                    db.write(&b).unwrap();
                }
            }));
        }
        // New keys all through the run: chunks split, funks and munks
        // rebalance, munks are loaded and evicted under the small budget.
        {
            let (db, done) = (db.clone(), done.clone());
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ 99);
                let mut n = 0u64;
                while !done.load(Ordering::Acquire) {
                    let k = format!("{:06}|filler{n}", rng.u32(0..1_000_000));
                    db.put(k, n.to_le_bytes()).unwrap();
                    n += 1;
                }
            });
        }
        for r in 0..3u64 {
            let (db, done, checks) = (db.clone(), done.clone(), checks.clone());
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ (100 + r));
                while !done.load(Ordering::Acquire) {
                    match rng.u8(0..3) {
                        0 => {
                            let items: Vec<_> = db
                                .scan::<&[u8], _>(..)
                                .collect::<Result<_, _>>()
                                .unwrap();
                            check_whole(&items, "a scan");
                        }
                        1 => {
                            let snap = db.snapshot();
                            std::thread::yield_now();
                            let w = rng.u64(0..WRITERS);
                            let ids: Vec<Option<u64>> = (0..KEYS_PER_WRITER)
                                .map(|i| snap.get(batch_key(w, i)).unwrap().map(|v| id_of(&v)))
                                .collect();
                            assert!(
                                ids.windows(2).all(|p| p[0] == p[1]),
                                "a snapshot's gets saw half a batch of writer {w}: {ids:?}"
                            );
                        }
                        _ => {
                            let w = rng.u64(0..WRITERS);
                            let mut last = 0u64;
                            for i in 0..KEYS_PER_WRITER {
                                let id = db.get(batch_key(w, i)).unwrap().map_or(0, |v| id_of(&v));
                                assert!(
                                    id >= last,
                                    "gets saw batch {last} of writer {w}, then batch {id} on key {i}"
                                );
                                last = id;
                            }
                        }
                    }
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
    });
    let s = db.stats();
    eprintln!(
        "{} checks; {} batches, {} splits, {} munk rebalances, {} rebalances, \
         {} munk loads, {} gets behind a batch",
        checks.load(Ordering::Relaxed),
        s.batches,
        s.splits,
        s.munk_rebalances,
        s.rebalances,
        s.munk_loads,
        s.gets_behind_batch
    );
    assert_eq!(s.batches, WRITERS * batches);
    assert!(s.splits > 0, "no chunk split during the run");
    assert!(s.gets_behind_batch > 0, "no get met a batch in progress");
    check_whole(&common::all(&db), "the final scan");
}

#[test]
fn a_read_only_open_does_not_count_an_overwritten_journaled_put_as_missing() {
    use evendb::vfs::{CrashMode, Storage};
    // `Sync` puts are durable in the journal; a rebuild keeps only the
    // newest version of a key, so the older put's own record is gone while
    // its journal record may still be there after a crash. A read-only
    // open must not hold it in memory as a write the logs lack.
    for attempt in 0..20 {
        let fs = MemFs::new();
        let db = common::open_tiny(&fs);
        db.put("k", "old").unwrap();
        db.put("k", "new").unwrap();
        db.compact().unwrap();
        std::mem::forget(db);
        fs.crash(CrashMode::DropUnsynced);
        let journaled = fs
            .list(&common::dir())
            .unwrap()
            .iter()
            .any(|n| n.starts_with("JOURNAL-"));
        if !journaled {
            // The checkpointer synced the logs and dropped the journal
            // first: nothing to check this time.
            eprintln!("attempt {attempt}: no journal left, again");
            continue;
        }
        let ro = common::tiny(&fs)
            .read_only(true)
            .open(common::dir())
            .expect("a read-only open with nothing missing");
        assert_eq!(ro.get("k").unwrap().as_deref(), Some(&b"new"[..]));
        return;
    }
    panic!("the journal never outlived the crash");
}
