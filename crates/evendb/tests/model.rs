//! Model-based test: random operation sequences against evendb and a
//! `BTreeMap`, with reopen, compaction, snapshots and tiny size limits
//! forcing splits, merges and rebalances.

mod common;

use evendb::vfs::MemFs;
use std::collections::BTreeMap;
use std::ops::Bound;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(rng: &mut fastrand::Rng) -> Vec<u8> {
    // Adversarial keys: empty, 0x00, 0xFF runs, long shared prefixes.
    match rng.u8(0..10) {
        0 => Vec::new(),
        1 => vec![0x00; rng.usize(1..3)],
        2 => vec![0xFF; rng.usize(1..4)],
        3 => {
            let mut k = b"shared/prefix/that/is/long/".to_vec();
            k.push(rng.u8(..));
            k
        }
        _ => format!("k{:03}", rng.u32(0..300)).into_bytes(),
    }
}

fn value(rng: &mut fastrand::Rng) -> Vec<u8> {
    let len = if rng.u8(0..10) == 0 {
        0
    } else {
        rng.usize(1..120)
    };
    (0..len).map(|_| rng.u8(..)).collect()
}

fn bound(rng: &mut fastrand::Rng) -> Bound<Vec<u8>> {
    match rng.u8(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn model_range(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    // BTreeMap::range panics on inverted ranges; evendb yields nothing.
    let inverted = match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    };
    if inverted {
        return Vec::new();
    }
    m.range((lo.clone(), hi.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn run_sequence(seed: u64, ops: usize) -> evendb::Stats {
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    // Odd sequences run with memory for a few munks only: loads and
    // evictions; even ones with room for all: munk rebalances and splits.
    let budget = if seed % 2 == 1 { 24 << 10 } else { 64 << 20 };
    // One sequence in four has logs long enough (a few band sections) to
    // be kept as they are (adopted) or written again sorted (runs).
    let (log, chunk) = if seed % 4 == 3 {
        (4 << 10, 16 << 10)
    } else {
        (1 << 10, 4 << 10)
    };
    let open = |fs: &MemFs| {
        common::tiny(fs)
            .memory_budget(budget)
            .max_log_size(log)
            .max_chunk_size(chunk)
            .open(common::dir())
            .expect("open")
    };
    // Time-ordered keys, put in bursts.
    let mut next_event = 0u32;
    let mut db = open(&fs);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snaps: Vec<(evendb::Snapshot, Model)> = Vec::new();
    for step in 0..ops {
        let ctx = || format!("seed {seed} step {step}");
        match rng.u8(0..100) {
            0..=4 => {
                for _ in 0..rng.u32(10..60) {
                    let (k, v) = (format!("t{next_event:06}").into_bytes(), value(&mut rng));
                    next_event += 1;
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            5..=9 => {
                // A batch: puts and deletes, a key maybe twice (the later
                // operation wins).
                let mut b = evendb::WriteBatch::new();
                for _ in 0..rng.usize(1..10) {
                    let k = key(&mut rng);
                    if rng.u8(0..4) == 0 {
                        b.delete(&k);
                        model.remove(&k);
                    } else {
                        let v = value(&mut rng);
                        b.put(&k, &v);
                        model.insert(k, v);
                    }
                }
                db.write(&b).unwrap();
            }
            10..=39 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            40..=51 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            52..=69 => {
                let k = key(&mut rng);
                assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "get {}", ctx());
            }
            70..=79 => {
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                let mut want = model_range(&model, &lo, &hi);
                let scan = db.scan((lo.clone(), hi.clone()));
                let how = rng.u8(0..3);
                let got: Vec<_> = match how {
                    0 => scan.collect::<Result<_, _>>().unwrap(),
                    1 => {
                        want.reverse();
                        scan.rev().collect::<Result<_, _>>().unwrap()
                    }
                    _ => {
                        // Both ends in turn, until they meet: the front's
                        // pairs, then the back's reversed, are the range.
                        let (mut front, mut back) = (Vec::new(), Vec::new());
                        let mut scan = scan;
                        loop {
                            let next = if rng.bool() {
                                scan.next().map(|r| front.push(r.unwrap()))
                            } else {
                                scan.next_back().map(|r| back.push(r.unwrap()))
                            };
                            if next.is_none()
                                && scan.next().map(|r| front.push(r.unwrap())).is_none()
                            {
                                break;
                            }
                        }
                        assert_eq!(scan.next_back().map(|r| r.unwrap()), None, "{}", ctx());
                        back.reverse();
                        front.extend(back);
                        front
                    }
                };
                assert_eq!(got, want, "scan ({how}) {:?}..{:?} {}", lo, hi, ctx());
            }
            80..=84 => {
                let p = key(&mut rng);
                let p = &p[..p.len().min(rng.usize(0..4))];
                let reverse = rng.bool();
                let got: Vec<_> = if reverse {
                    db.prefix(p).rev().collect::<Result<_, _>>().unwrap()
                } else {
                    db.prefix(p).collect::<Result<_, _>>().unwrap()
                };
                let mut want: Vec<_> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if reverse {
                    want.reverse();
                }
                assert_eq!(got, want, "prefix {p:?} {}", ctx());
            }
            85..=88 => {
                if snaps.len() < 3 {
                    snaps.push((db.snapshot(), model.clone()));
                } else {
                    snaps.remove(rng.usize(0..snaps.len()));
                }
            }
            89..=92 => {
                if let Some((snap, old)) = snaps.get(rng.usize(0..snaps.len().max(1))) {
                    let reverse = rng.bool();
                    let got: Vec<_> = if reverse {
                        snap.scan::<&[u8], _>(..)
                            .rev()
                            .collect::<Result<_, _>>()
                            .unwrap()
                    } else {
                        snap.scan::<&[u8], _>(..).collect::<Result<_, _>>().unwrap()
                    };
                    let mut want: Vec<_> =
                        old.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    if reverse {
                        want.reverse();
                    }
                    assert_eq!(got, want, "snapshot scan {}", ctx());
                    let k = key(&mut rng);
                    assert_eq!(
                        snap.get(&k).unwrap(),
                        old.get(&k).cloned(),
                        "snapshot get {}",
                        ctx()
                    );
                }
            }
            93..=95 => db.compact().unwrap(),
            96..=97 => {
                // Mass delete of a key range, so chunks underflow and merge:
                // key by key, or by one range delete.
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                let by_range = rng.bool();
                if by_range {
                    db.delete_range((lo.clone(), hi.clone())).unwrap();
                }
                for (k, _) in model_range(&model, &lo, &hi) {
                    if !by_range {
                        db.delete(&k).unwrap();
                    }
                    model.remove(&k);
                }
            }
            _ => {
                // Close and reopen; snapshots end with the handle.
                snaps.clear();
                drop(db);
                db = open(&fs);
            }
        }
    }
    assert_eq!(
        common::all(&db),
        model_range(&model, &Bound::Unbounded, &Bound::Unbounded),
        "final, seed {seed}"
    );
    db.stats()
}

#[test]
fn random_sequences_match_a_btreemap() {
    let base = common::seed("random_sequences_match_a_btreemap");
    let n = common::iterations(1000);
    let mut t = evendb::Stats::default();
    for i in 0..n {
        let s = run_sequence(base.wrapping_add(i), 400);
        t.splits += s.splits;
        t.merges += s.merges;
        t.rebalances += s.rebalances;
        t.munk_loads += s.munk_loads;
        t.munk_evictions += s.munk_evictions;
        t.munk_rebalances += s.munk_rebalances;
        t.log_adoptions += s.log_adoptions;
        t.log_runs += s.log_runs;
        t.batches += s.batches;
        t.range_deletes += s.range_deletes;
        t.chunks_dropped += s.chunks_dropped;
        t.range_deletes_retired += s.range_deletes_retired;
        t.puts_deferred += s.puts_deferred;
        t.deferred_logged += s.deferred_logged;
    }
    eprintln!(
        "{} range deletes, {} chunks dropped whole, {} range deletes retired",
        t.range_deletes, t.chunks_dropped, t.range_deletes_retired
    );
    eprintln!(
        "{n} sequences x 400 ops: {} splits, {} merges, {} funk rebalances, {} munk loads, \
         {} munk evictions, {} munk rebalances, {} adopted logs, {} runs, {} batches",
        t.splits,
        t.merges,
        t.rebalances,
        t.munk_loads,
        t.munk_evictions,
        t.munk_rebalances,
        t.log_adoptions,
        t.log_runs,
        t.batches
    );
    assert!(
        t.splits > 0 && t.merges > 0 && t.rebalances > 0,
        "the op mix must exercise every rebuild kind"
    );
    assert!(
        t.munk_loads > 0 && t.munk_evictions > 0 && t.munk_rebalances > 0,
        "the op mix must load, evict and rebalance munks"
    );
    assert!(
        t.log_adoptions > 0 && t.log_runs > 0,
        "the op mix must adopt logs and write runs"
    );
    assert!(t.batches > 0, "the op mix must write batches");
    assert!(
        t.puts_deferred > 0 && t.deferred_logged > 0,
        "the op mix must defer Sync puts to munks and log them later"
    );
    assert!(t.range_deletes > 0, "the op mix must delete ranges");
    assert!(
        t.chunks_dropped > 0 && t.range_deletes_retired > 0,
        "the op mix must drop chunks a range delete took whole and retire range deletes"
    );
}

/// The model test with several threads on one store: each thread owns the
/// keys ending in its own id (interleaved with every other thread's keys
/// across the same chunks) and checks them, through gets, scans, prefixes
/// and snapshots, against its own `BTreeMap`, while the others' puts drive
/// splits, merges and rebalances of the chunks they share.
#[test]
fn concurrent_threads_each_match_their_own_model() {
    const THREADS: u8 = 4;
    let seed = common::seed("concurrent_threads_each_match_their_own_model");
    let ops = common::iterations(3000) as usize;
    let fs = MemFs::new();
    let db = common::tiny(&fs)
        .durability(evendb::Durability::Buffered {
            sync_interval: std::time::Duration::from_millis(10),
        })
        .maintenance_threads(1)
        .memory_budget(256 << 10)
        .open(common::dir())
        .unwrap();
    let own_key = |t: u8, n: u32| format!("k{n:04}-{t}").into_bytes();
    let mine = |t: u8, k: &[u8]| k.last() == Some(&(b'0' + t));
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = db.clone();
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed ^ u64::from(t + 1));
                let mut model = Model::new();
                let mut snaps: Vec<(evendb::Snapshot, Model)> = Vec::new();
                for step in 0..ops {
                    let ctx = || format!("thread {t} step {step} seed {seed}");
                    let k = own_key(t, rng.u32(0..400));
                    match rng.u8(0..100) {
                        0..=44 => {
                            let v = value(&mut rng);
                            db.put(&k, &v).unwrap();
                            model.insert(k, v);
                        }
                        45..=59 => {
                            db.delete(&k).unwrap();
                            model.remove(&k);
                        }
                        60..=79 => {
                            assert_eq!(
                                db.get(&k).unwrap(),
                                model.get(&k).cloned(),
                                "get {}",
                                ctx()
                            );
                        }
                        80..=89 => {
                            let hi = own_key(t, rng.u32(0..400));
                            let (lo, hi) = if k <= hi { (k, hi) } else { (hi, k) };
                            let got: Vec<_> = db
                                .scan(lo.clone()..hi.clone())
                                .map(Result::unwrap)
                                .filter(|(k, _)| mine(t, k))
                                .collect();
                            let want: Vec<_> = model
                                .range(lo..hi)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect();
                            assert_eq!(got, want, "scan {}", ctx());
                        }
                        90..=94 => {
                            if snaps.len() < 2 {
                                snaps.push((db.snapshot(), model.clone()));
                            } else {
                                snaps.remove(rng.usize(0..snaps.len()));
                            }
                        }
                        _ => {
                            if let Some((snap, old)) = snaps.first() {
                                let got: Vec<_> = snap
                                    .scan::<&[u8], _>(..)
                                    .map(Result::unwrap)
                                    .filter(|(k, _)| mine(t, k))
                                    .collect();
                                let want: Vec<_> =
                                    old.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                                assert_eq!(got, want, "snapshot scan {}", ctx());
                                assert_eq!(
                                    snap.get(&k).unwrap(),
                                    old.get(&k).cloned(),
                                    "{}",
                                    ctx()
                                );
                            }
                        }
                    }
                }
                let got: Vec<_> = db
                    .scan::<&[u8], _>(..)
                    .map(Result::unwrap)
                    .filter(|(k, _)| mine(t, k))
                    .collect();
                let want: Vec<_> = model.into_iter().collect();
                assert_eq!(got, want, "final state of thread {t}, seed {seed}");
            });
        }
    });
    let s = db.stats();
    eprintln!(
        "{THREADS} threads x {ops} ops: {} splits, {} merges, {} funk rebalances, {} munk rebalances, \
         {} munk loads, {} munk evictions",
        s.splits, s.merges, s.rebalances, s.munk_rebalances, s.munk_loads, s.munk_evictions
    );
    assert!(s.splits > 0 && s.rebalances > 0 && s.munk_loads > 0);
}
