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

fn run_sequence(seed: u64, ops: usize) -> (u64, u64, u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let fs = MemFs::new();
    let mut db = common::open_tiny(&fs);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snaps: Vec<(evendb::Snapshot, Model)> = Vec::new();
    for step in 0..ops {
        let ctx = || format!("seed {seed} step {step}");
        match rng.u8(0..100) {
            0..=39 => {
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
                let got: Vec<_> = db
                    .scan((lo.clone(), hi.clone()))
                    .collect::<Result<_, _>>()
                    .unwrap();
                assert_eq!(
                    got,
                    model_range(&model, &lo, &hi),
                    "scan {:?}..{:?} {}",
                    lo,
                    hi,
                    ctx()
                );
            }
            80..=84 => {
                let p = key(&mut rng);
                let p = &p[..p.len().min(rng.usize(0..4))];
                let got: Vec<_> = db.prefix(p).collect::<Result<_, _>>().unwrap();
                let want: Vec<_> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
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
                    let got: Vec<_> = snap.scan::<&[u8], _>(..).collect::<Result<_, _>>().unwrap();
                    let want: Vec<_> = old.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
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
                // Mass delete of a key range, so chunks underflow and merge.
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                for (k, _) in model_range(&model, &lo, &hi) {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
            }
            _ => {
                // Close and reopen; snapshots end with the handle.
                snaps.clear();
                drop(db);
                db = common::open_tiny(&fs);
            }
        }
    }
    assert_eq!(
        common::all(&db),
        model_range(&model, &Bound::Unbounded, &Bound::Unbounded),
        "final, seed {seed}"
    );
    let s = db.stats();
    (s.splits, s.merges, s.rebalances)
}

#[test]
fn random_sequences_match_a_btreemap() {
    let base = common::seed("random_sequences_match_a_btreemap");
    let n = common::iterations(1000);
    let (mut splits, mut merges, mut rebalances) = (0, 0, 0);
    for i in 0..n {
        let (s, m, r) = run_sequence(base.wrapping_add(i), 400);
        splits += s;
        merges += m;
        rebalances += r;
    }
    eprintln!("{n} sequences x 400 ops: {splits} splits, {merges} merges, {rebalances} rebalances");
    assert!(
        splits > 0 && merges > 0 && rebalances > 0,
        "the op mix must exercise every rebuild kind"
    );
}
