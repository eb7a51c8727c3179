use super::*;
use crate::entry::Entry;

fn budget() -> Arc<MemoryBudget> {
    Arc::new(MemoryBudget::new(1 << 30))
}

fn empty(spare: usize) -> (Munk, Arc<MemoryBudget>) {
    let b = budget();
    let m = Munk::build(Vec::new(), spare, &b, Charge::Inherit(0));
    (m, b)
}

fn put(m: &Munk, key: &[u8], value: Option<&[u8]>, version: u64, counter: u64, w: u64) {
    let res = m
        .reserve(key, value.map_or(0, <[u8]>::len), 0)
        .expect("room");
    m.insert(res, key, Version::new(value, version, counter), w);
}

fn value_at(m: &Munk, key: &[u8], version: u64) -> Option<Vec<u8>> {
    m.read(key, version)
}

fn keys(m: &Munk) -> Vec<Vec<u8>> {
    m.entries().into_iter().map(|e| e.key.to_vec()).collect()
}

#[test]
fn appended_keys_are_linked_in_key_order() {
    let (m, _b) = empty(100);
    for k in [5u8, 1, 9, 3, 7, 2] {
        put(&m, &[k], Some(&[k]), 1, u64::from(k), 0);
    }
    assert_eq!(
        keys(&m),
        vec![vec![1], vec![2], vec![3], vec![5], vec![7], vec![9]]
    );
    assert_eq!(value_at(&m, &[7], 1), Some(vec![7]));
    assert_eq!(value_at(&m, &[4], 1), None);
}

#[test]
fn a_rebuilt_munk_keeps_order_and_takes_new_keys_between_sorted_ones() {
    let b = budget();
    let entries: Vec<MunkEntry> = (0..50u8)
        .map(|i| MunkEntry::from_versions(&[i * 2], vec![entry(&[i * 2], Some(&[i]), 1, 1)], 0))
        .map(|e| e.expect("kept"))
        .collect();
    let m = Munk::build(entries, 60, &b, Charge::Inherit(0));
    for i in 0..50u8 {
        put(&m, &[i * 2 + 1], Some(b"odd"), 2, 100 + u64::from(i), 0);
    }
    put(&m, b"", Some(b"first"), 2, 500, 0);
    let ks = keys(&m);
    assert_eq!(ks.len(), 101);
    assert!(ks.windows(2).all(|w| w[0] < w[1]), "list out of order");
    assert_eq!(m.seek(&[7]), m.seek(&[7]));
    assert_eq!(value_at(&m, &[41], 2), Some(b"odd".to_vec()));
    assert_eq!(value_at(&m, &[40], 2), Some(vec![20]));
}

fn entry(key: &[u8], value: Option<&[u8]>, version: u64, counter: u64) -> Entry {
    Entry {
        key: key.to_vec(),
        value: value.map(<[u8]>::to_vec),
        version,
        counter,
    }
}

#[test]
fn snapshots_read_the_version_they_need_and_overwrites_drop_the_rest() {
    let (m, _b) = empty(10);
    put(&m, b"k", Some(b"v1"), 1, 1, 0);
    // A reader may need version 1 (watermark 1): version 3 keeps it.
    put(&m, b"k", Some(b"v3"), 3, 2, 1);
    assert_eq!(value_at(&m, b"k", 2), Some(b"v1".to_vec()));
    assert_eq!(value_at(&m, b"k", 3), Some(b"v3".to_vec()));
    // Same version: replaced in place.
    put(&m, b"k", Some(b"v3b"), 3, 3, 1);
    let head = m.find(b"k").and_then(Cell::head).expect("head");
    assert_eq!(head.value.as_deref(), Some(&b"v3b"[..]));
    assert_eq!(head.older().map(|o| o.version), Some(1));
    // Nobody needs anything below 5 but the newest: the chain shrinks.
    put(&m, b"k", Some(b"v5"), 5, 4, 5);
    let head = m.find(b"k").and_then(Cell::head).expect("head");
    assert!(head.older().is_none());
}

#[test]
fn a_version_links_what_is_older_whether_or_not_another_thread_holds_it() {
    let below = Arc::new(Version::new(Some(b"v1"), 1, 1));
    // Held by this put alone: its link is made anew.
    let mut alone = Arc::new(Version::new(Some(b"v2"), 2, 2));
    link_older(&mut alone, Some(below.clone()));
    assert_eq!(alone.older().map(|o| o.version), Some(1));
    // Held elsewhere too (a racing put's cell): stored into.
    let mut shared = Arc::new(Version::new(Some(b"v3"), 3, 3));
    let other = shared.clone();
    link_older(&mut shared, Some(below.clone()));
    assert_eq!(other.older().map(|o| o.version), Some(1));
    // Linked again, the older version changes.
    link_older(&mut alone, None);
    assert!(alone.older().is_none());
    // Built from entries, the chain keeps every version a reader needs.
    let built = Version::new(Some(b"v4"), 4, 4).with_older(Some(other));
    let chain: Vec<u64> = std::iter::successors(Some(Arc::new(built)), |v| v.older())
        .map(|v| v.version)
        .collect();
    assert_eq!(chain, [4, 3, 1]);
}

#[test]
fn a_put_that_lost_a_race_lands_below_the_newer_version() {
    let (m, _b) = empty(10);
    put(&m, b"k", Some(b"new"), 7, 20, 0);
    put(&m, b"k", Some(b"old"), 5, 19, 0);
    assert_eq!(value_at(&m, b"k", 7), Some(b"new".to_vec()));
    assert_eq!(value_at(&m, b"k", 6), Some(b"old".to_vec()));
    // Of two entries of one version only the newer counts.
    put(&m, b"k", Some(b"older"), 7, 18, 0);
    assert_eq!(value_at(&m, b"k", 7), Some(b"new".to_vec()));
}

#[test]
fn a_full_munk_refuses_new_keys_but_takes_overwrites() {
    let (m, _b) = empty(2);
    put(&m, b"a", Some(b"1"), 1, 1, 0);
    put(&m, b"b", Some(b"1"), 1, 2, 0);
    assert_eq!(m.reserve(b"c", 1, 0).err(), Some(Refusal::Full));
    put(&m, b"a", Some(b"2"), 1, 3, 0);
    assert_eq!(value_at(&m, b"a", 1), Some(b"2".to_vec()));
}

#[test]
fn the_budget_refuses_and_the_munk_returns_every_byte_it_took() {
    let b = Arc::new(MemoryBudget::new(1 << 20));
    {
        let m = Munk::build(Vec::new(), 10, &b, Charge::Inherit(0));
        put(&m, b"a", Some(&[0u8; 1000]), 1, 1, 0);
        put(&m, b"a", Some(&[0u8; 10]), 1, 2, 0);
        assert_eq!(
            m.reserve(b"b", 2 << 20, 0).err(),
            Some(Refusal::NoMemory(
                NODE_OVERHEAD + value_charge(2 << 20) + key_charge(1)
            ))
        );
        assert!(b.used() > 0);
    }
    assert_eq!(b.used(), 0, "dropping the munk returns its whole charge");
}

#[test]
fn pruning_keeps_what_readers_need_and_drops_bottom_tombstones() {
    let (m, _b) = empty(10);
    put(&m, b"k", Some(b"a"), 1, 1, 0);
    put(&m, b"k", Some(b"b"), 3, 2, 0);
    put(&m, b"k", Some(b"c"), 5, 3, 0);
    put(&m, b"d", Some(b"x"), 1, 4, 0);
    put(&m, b"d", None, 3, 5, 0);
    let entries = build::pruned(m.entries(), 4);
    let chain: Vec<u64> = {
        let mut v = Vec::new();
        let mut n = entries
            .iter()
            .find(|e| &*e.key == b"k")
            .and_then(|e| e.head.clone());
        while let Some(x) = n {
            v.push(x.version);
            n = x.older();
        }
        v
    };
    assert_eq!(chain, vec![5, 3], "5 and the newest at or below 4");
    assert!(
        entries.iter().all(|e| &*e.key != b"d"),
        "a key deleted below the watermark is gone"
    );
}

#[test]
fn cutting_balances_parts_and_never_returns_an_empty_one() {
    let entries: Vec<MunkEntry> = (0..10u8)
        .filter_map(|i| MunkEntry::from_versions(&[i], vec![entry(&[i], Some(&[0; 100]), 1, 1)], 0))
        .collect();
    let parts = build::cut(entries.clone(), 2);
    assert_eq!(parts.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 5]);
    let parts = build::cut(entries[..3].to_vec(), 5);
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|p| !p.is_empty()));
}

#[test]
fn concurrent_puts_of_the_same_new_keys_leave_one_cell_each() {
    let (m, _b) = empty(4000);
    let m = Arc::new(m);
    let counter = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let m = &m;
            let counter = &counter;
            s.spawn(move || {
                for i in 0..500u32 {
                    let k = format!("key{:05}", (i * 7919 + t as u32) % 700);
                    let c = counter.fetch_add(1, Ordering::Relaxed);
                    put(m, k.as_bytes(), Some(&c.to_le_bytes()), 1, c, 0);
                }
            });
        }
    });
    let ks = keys(&m);
    assert!(
        ks.windows(2).all(|w| w[0] < w[1]),
        "duplicate or unordered keys"
    );
    for e in m.entries() {
        // Same version everywhere: exactly one entry per key, the newest.
        let head = e.head.expect("head");
        assert!(head.older().is_none());
    }
}

#[test]
fn overwrites_inflate_the_data_estimate_and_a_recount_measures_what_is_live() {
    let (m, _b) = empty(10);
    for i in 0..10u64 {
        put(&m, b"k", Some(&[0u8; 100]), i + 1, i + 1, i + 1);
    }
    put(&m, b"gone", Some(b"x"), 20, 20, 20);
    put(&m, b"gone", None, 21, 21, 21);
    let live = 1 + 100 + build::ENTRY_DATA_OVERHEAD;
    assert_eq!(m.live_data(), live);
    let before = m.data_bytes();
    assert!(before > 10 * 100, "every overwrite counts: {before}");
    // A put between the measure and the recount is kept.
    put(&m, b"k", Some(&[0u8; 100]), 30, 30, 30);
    m.recount(before, live);
    assert_eq!(m.data_bytes(), live + 100);
}

/// A rebuild of `old` as a munk rebalance starts it: a snapshot, and a
/// new munk of its entries as `keep` leaves them with `spare` cells.
fn rebuild(
    old: &Munk,
    keep: impl FnOnce(Vec<MunkEntry>) -> Vec<MunkEntry>,
    spare: usize,
) -> (Snapshot, Unsettled) {
    let (snapshot, entries) = old.snapshot();
    (
        snapshot,
        Unsettled::build(keep(entries), spare, &old.budget),
    )
}

/// The rebuild's new munk with what puts changed since carried over.
fn finish((snapshot, part): (Snapshot, Unsettled), old: &Munk) -> Option<Munk> {
    let carried = snapshot.carry_over(old, vec![Some(part)], &[], 0)?;
    carried.munks.into_iter().next().flatten()
}

/// A munk of `n` keys "k00", "k01", ... with value "v1" at version 1,
/// and room for 100.
fn numbered(n: u64) -> (Munk, Arc<MemoryBudget>) {
    let (m, b) = empty(100);
    for i in 0..n {
        put(&m, format!("k{i:02}").as_bytes(), Some(b"v1"), 1, i, 0);
    }
    (m, b)
}

/// Every key with its newest value, in key order.
fn contents(m: &Munk) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    m.entries()
        .into_iter()
        .map(|e| (e.key.to_vec(), value_at(m, &e.key, u64::MAX)))
        .collect()
}

#[test]
fn a_rebuild_carries_over_what_puts_changed_after_its_snapshot() {
    let (old, b) = numbered(40);
    put(&old, b"t", Some(b"x"), 1, 50, 0);
    put(&old, b"t", None, 2, 51, 0);
    let w = 5;
    let rebuilt = rebuild(&old, |e| build::pruned(e, w), 20);
    // After the snapshot: a new version, a new key, the pruned key again.
    put(&old, b"k05", Some(b"v6"), 6, 60, w);
    put(&old, b"k05a", Some(b"new"), 6, 61, w);
    put(&old, b"t", Some(b"back"), 7, 62, w);
    let new = finish(rebuilt, &old).expect("room for three keys");
    let mut want = contents(&old);
    want.retain(|(_, v)| v.is_some());
    assert_eq!(contents(&new), want);
    assert_eq!(value_at(&new, b"k05", 6), Some(b"v6".to_vec()));
    assert_eq!(value_at(&new, b"k05", 5), Some(b"v1".to_vec()));
    // The new munk took over the old one's charge, which keeps its array.
    assert_eq!(b.used(), new.bytes() + old.bytes());
    assert_eq!(old.bytes(), old.array_bytes);
    drop((old, new));
    assert_eq!(b.used(), 0, "every byte returned");
}

#[test]
fn a_rebuild_without_room_for_the_keys_put_since_asks_for_another() {
    let b = budget();
    let old = Munk::build(Vec::new(), 10, &b, Charge::Inherit(0));
    put(&old, b"a", Some(b"1"), 1, 1, 0);
    let rebuilt = rebuild(&old, |e| e, 0);
    put(&old, b"b", Some(b"1"), 2, 2, 0);
    assert!(finish(rebuilt, &old).is_none());
    assert_eq!(b.used(), old.bytes(), "the unused rebuild is uncharged");
}

#[test]
fn a_rebuild_while_puts_race_loses_none_of_their_versions() {
    let b = budget();
    let old = Arc::new(Munk::build(Vec::new(), 4000, &b, Charge::Inherit(0)));
    let stamp = AtomicU64::new(1);
    let w = AtomicU64::new(0);
    let (rebuilt, watermark) = std::thread::scope(|s| {
        for t in 0..3u32 {
            let (old, stamp, w) = (&old, &stamp, &w);
            s.spawn(move || {
                for i in 0..3000u32 {
                    let k = format!("key{:04}", (i * 7 + t * 13) % 900);
                    let v = stamp.fetch_add(1, Ordering::Relaxed);
                    let value = (i % 5 != 0).then(|| v.to_le_bytes());
                    put(
                        old,
                        k.as_bytes(),
                        value.as_ref().map(|x| &x[..]),
                        v,
                        v,
                        w.load(Ordering::Relaxed),
                    );
                }
            });
        }
        // Rebuild mid-way, pruning for a watermark the puts then follow.
        while stamp.load(Ordering::Relaxed) < 4000 {
            std::thread::yield_now();
        }
        let at = stamp.load(Ordering::Relaxed);
        w.store(at, Ordering::Relaxed);
        (rebuild(&old, |e| build::pruned(e, at), 2000), at)
    });
    let new = finish(rebuilt, &old).expect("room");
    let (new_keys, old_keys) = (keys(&new), keys(&old));
    assert!(
        new_keys.windows(2).all(|w| w[0] < w[1]),
        "list out of order"
    );
    assert!(new_keys.iter().all(|k| old_keys.binary_search(k).is_ok()));
    for k in &old_keys {
        for at in [watermark, watermark + 500, watermark + 2000, u64::MAX] {
            let (got, want) = (value_at(&new, k, at), value_at(&old, k, at));
            assert!(got == want, "{k:?} at {at}: {got:?}, want {want:?}");
        }
    }
}

#[test]
fn a_split_carries_changes_to_the_part_of_their_key() {
    let (old, b) = numbered(20);
    // Two parts from "k10" on: the lower one without a munk (settled).
    let (snapshot, entries) = old.snapshot();
    let (lower, upper) = (entries[..10].to_vec(), entries[10..].to_vec());
    let extra: u64 = lower.iter().map(MunkEntry::charge).sum();
    let built = vec![None, Some(Unsettled::build(upper.clone(), 8, &b))];
    put(&old, b"k03", Some(b"v2"), 2, 30, 0);
    put(&old, b"k15", Some(b"v2"), 2, 31, 0);
    put(&old, b"k15a", Some(b"new"), 2, 32, 0);
    let carried = snapshot
        .carry_over(&old, built, &[b"k10".to_vec()], extra)
        .expect("carried");
    assert!(carried.munks[0].is_none());
    let m = carried.munks[1].as_ref().expect("upper munk");
    assert_eq!(value_at(m, b"k15", 2), Some(b"v2".to_vec()));
    assert_eq!(value_at(m, b"k15a", 2), Some(b"new".to_vec()));
    assert_eq!(value_at(m, b"k03", 2), None, "not the upper part's key");
    let keys_of = |v: &[MunkEntry]| v.iter().map(|e| e.key.to_vec()).collect::<Vec<_>>();
    assert_eq!(keys_of(&carried.changed[0]), vec![b"k03".to_vec()]);
    assert_eq!(
        keys_of(&carried.changed[1]),
        vec![b"k15".to_vec(), b"k15a".to_vec()]
    );
    for (piece, changed) in [(lower, 0), (upper, 1)] {
        let all = merged(piece, carried.changed[changed].clone());
        assert!(all.windows(2).all(|w| w[0].key < w[1].key));
        for e in &all {
            let head = e.head.as_ref().expect("head");
            assert_eq!(
                head.value.as_deref().map(<[u8]>::to_vec),
                value_at(&old, &e.key, u64::MAX),
                "{:?}",
                e.key
            );
        }
    }
    // The old munk's charge went to the upper munk and the settled part,
    // which grew by a version.
    assert!(carried.unowned > extra);
    assert_eq!(b.used(), old.bytes() + m.bytes() + carried.unowned);
}

#[test]
fn a_munk_past_its_split_size_keeps_half_its_keys_spare_for_the_split() {
    let max = 8 << 20;
    // At the split size: nothing left to grow, half its keys for the puts
    // that come while the split runs.
    assert_eq!(spare_cells(80_000, max, true, max), 40_000);
    // A munk that did not fill its cells: half its keys, whatever its size.
    assert_eq!(spare_cells(80_000, max, false, max), 40_064);
    // Far below it: room to grow to it, at most twice its keys.
    assert_eq!(spare_cells(1_000, max / 100, true, max), 2_064);
}
