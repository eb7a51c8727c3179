//! Exact snapshot checking under concurrency.
//!
//! Writer threads put and delete keys spread over many chunks, each write
//! with a unique value, and record the stamp (version, counter) the engine
//! gave it. Scanner threads scan ranges and read through long-lived
//! snapshots, recording the version they read at; some scans read in
//! reverse. Tiny chunk, log and
//! memory limits force splits, merges, funk and munk rebalances, munk loads
//! and evictions all through the run.
//!
//! Afterwards every scan is compared with the exact state at its version:
//! for each key in its range, the write with the largest stamp among those
//! whose version is at or below the scan's (absent if that write is a
//! delete or there is none).

mod common;

use evendb::vfs::MemFs;
use evendb::{Db, Durability, Options, Stats};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const KEYS: u32 = 1500;
const WRITERS: u64 = 4;
const SCANNERS: u64 = 3;

fn key(i: u32) -> Vec<u8> {
    // Spread over the key space so every chunk holds keys of every writer.
    format!("{:07}", u64::from(i) * 7919 % 10_000_000).into_bytes()
}

/// One write: key index, stamp, and the value's id (`None`: a delete).
type Write = (u32, (u64, u64), Option<u64>);
/// A write as kept per key: stamp and value id.
type Stamped = ((u64, u64), Option<u64>);
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// One read: the version, the range, what it returned (key index, value
/// id), and whether structural maintenance ran while it read.
struct Read {
    version: u64,
    lo: Bound<u32>,
    hi: Bound<u32>,
    got: Vec<(u32, u64)>,
    overlapped: bool,
}

fn value(id: u64, len: usize) -> Vec<u8> {
    let mut v = id.to_le_bytes().to_vec();
    v.resize(len.max(8), 0xAB);
    v
}

fn structural(s: &Stats) -> u64 {
    s.splits + s.merges + s.rebalances + s.munk_rebalances + s.munk_loads + s.munk_evictions
}

#[test]
fn every_scan_equals_the_state_at_its_version_while_munks_come_and_go() {
    // A budget of a few chunks: munks are loaded and evicted all the time.
    let s = check_snapshots("munks_come_and_go", 96 << 10);
    assert!(s.munk_loads > 0 && s.munk_evictions > 0);
}

#[test]
fn every_scan_equals_the_state_at_its_version_while_munks_split() {
    // Room for every munk: they take the puts, rebalance and split. How
    // often munks rebalance before they split depends on thread timing
    // (about one run in fifty had none): up to three runs, each checked,
    // until one covered it.
    let covered = (0..3)
        .map(|_| check_snapshots("munks_split", 64 << 20))
        .any(|s| s.munk_rebalances > 0 && s.munks > 0);
    assert!(covered, "no run rebalanced a munk");
}

fn check_snapshots(name: &str, budget: u64) -> Stats {
    let seed = common::seed(name);
    let ops = common::iterations(2500);
    let fs = MemFs::new();
    let db: Db = Options::default()
        .storage(Arc::new(fs.clone()))
        .durability(Durability::Buffered {
            sync_interval: std::time::Duration::from_millis(20),
        })
        .max_chunk_size(16 << 10)
        .max_log_size(4 << 10)
        .block_size(512)
        .memory_budget(budget)
        .maintenance_threads(2)
        .open(common::dir())
        .unwrap();
    // Sorted key indexes, to turn key order back into indexes.
    let mut order: Vec<(Vec<u8>, u32)> = (0..KEYS).map(|i| (key(i), i)).collect();
    order.sort();
    let index_of: BTreeMap<Vec<u8>, u32> = order.iter().cloned().collect();
    let index_of = Arc::new(index_of);
    let order = Arc::new(order);

    let writes: Arc<Mutex<Vec<Write>>> = Arc::new(Mutex::new(Vec::new()));
    let reads: Arc<Mutex<Vec<Read>>> = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let (db, writes) = (db.clone(), writes.clone());
            writers.push(s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ (w + 1));
                let mut mine = Vec::with_capacity(ops as usize);
                for n in 0..ops {
                    let k = rng.u32(0..KEYS);
                    let id = (w << 48) | n;
                    let v = (rng.u8(0..10) != 0).then(|| value(id, rng.usize(8..300)));
                    let stamp = db.write_stamped(key(k), v.as_deref()).unwrap();
                    mine.push((k, stamp, v.is_some().then_some(id)));
                }
                writes.lock().unwrap().extend(mine);
            }));
        }
        for r in 0..SCANNERS {
            let (db, reads, done, index_of, order) = (
                db.clone(),
                reads.clone(),
                done.clone(),
                index_of.clone(),
                order.clone(),
            );
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ (100 + r));
                while !done.load(Ordering::Acquire) {
                    let before = structural(&db.stats());
                    let (lo, hi) = if rng.bool() {
                        (Bound::Unbounded, Bound::Unbounded)
                    } else {
                        let a = rng.u32(0..KEYS);
                        let b = rng.u32(0..KEYS);
                        (Bound::Included(a.min(b)), Bound::Excluded(a.max(b)))
                    };
                    let key_bound = |b: Bound<u32>| -> Bound<Vec<u8>> {
                        match b {
                            Bound::Included(i) => Bound::Included(order[i as usize].0.clone()),
                            Bound::Excluded(i) => Bound::Excluded(order[i as usize].0.clone()),
                            Bound::Unbounded => Bound::Unbounded,
                        }
                    };
                    // Half the reads go through a snapshot held across
                    // other work, the rest are plain scans.
                    let (version, items): (u64, Pairs) = if rng.bool() {
                        let scan = db.scan((key_bound(lo), key_bound(hi)));
                        let v = scan.version();
                        if rng.bool() {
                            (v, scan.collect::<Result<_, _>>().unwrap())
                        } else {
                            // Newest key first, turned back for the check.
                            let mut items: Pairs = scan.rev().collect::<Result<_, _>>().unwrap();
                            items.reverse();
                            (v, items)
                        }
                    } else {
                        let snap = db.snapshot();
                        std::thread::yield_now();
                        let v = snap.version();
                        let items = snap
                            .scan((key_bound(lo), key_bound(hi)))
                            .collect::<Result<_, _>>()
                            .unwrap();
                        (v, items)
                    };
                    let got = items
                        .into_iter()
                        .map(|(k, v)| {
                            let id = u64::from_le_bytes(v[..8].try_into().unwrap());
                            (index_of[&k], id)
                        })
                        .collect();
                    let overlapped = structural(&db.stats()) != before;
                    reads.lock().unwrap().push(Read {
                        version,
                        lo,
                        hi,
                        got,
                        overlapped,
                    });
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
    });

    // Per key (by sorted position), the writes in stamp order.
    let mut by_key: Vec<Vec<Stamped>> = vec![Vec::new(); KEYS as usize];
    let pos_of: BTreeMap<u32, u32> = order
        .iter()
        .enumerate()
        .map(|(p, (_, i))| (*i, p as u32))
        .collect();
    for (k, stamp, id) in writes.lock().unwrap().iter() {
        by_key[pos_of[k] as usize].push((*stamp, *id));
    }
    for w in &mut by_key {
        w.sort();
        assert!(
            w.windows(2).all(|p| p[0].0 != p[1].0),
            "two writes of one key got the same stamp"
        );
    }
    let reads = reads.lock().unwrap();
    let (mut violations, mut overlapped) = (0, 0);
    for r in reads.iter() {
        overlapped += u64::from(r.overlapped);
        let positions = match (r.lo, r.hi) {
            (Bound::Included(a), Bound::Excluded(b)) => a..b,
            _ => 0..KEYS,
        };
        let want: Vec<(u32, u64)> = positions
            .filter_map(|p| {
                let newest = by_key[p as usize]
                    .iter()
                    .rev()
                    .find(|((v, _), _)| *v <= r.version)?;
                newest.1.map(|id| (order[p as usize].1, id))
            })
            .collect();
        if want != r.got {
            violations += 1;
            if violations <= 3 {
                eprintln!(
                    "violation at version {}: expected {} pairs, got {}",
                    r.version,
                    want.len(),
                    r.got.len()
                );
            }
        }
    }
    let s = db.stats();
    eprintln!(
        "{name}: {} scans checked, {} overlapped structural maintenance, {violations} violations; \
         {} writes; {} splits, {} merges, {} funk rebalances, {} munk rebalances, \
         {} munk loads, {} munk evictions",
        reads.len(),
        overlapped,
        WRITERS * ops,
        s.splits,
        s.merges,
        s.rebalances,
        s.munk_rebalances,
        s.munk_loads,
        s.munk_evictions
    );
    assert_eq!(violations, 0, "seed {seed}");
    assert!(
        reads.len() > 10 && overlapped > 0,
        "scans must overlap maintenance"
    );
    assert!(s.splits > 0);
    s
}
