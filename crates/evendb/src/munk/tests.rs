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
