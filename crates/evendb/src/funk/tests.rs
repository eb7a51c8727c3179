//! Gets, scans and merges of a funk with several log segments.

use super::*;
use crate::funk::log::LogConfig;
use crate::stats::FilterProbe;
use crate::vfs::{MemFs, Storage};
use std::path::Path;
use std::sync::atomic::AtomicU64;

fn config() -> LogConfig {
    LogConfig::for_tests(4096, 9)
}

/// A segment holding `records` (key, value, version, counter), in order.
fn segment(fs: &MemFs, number: u64, records: &[(&str, &str, u64, u64)]) -> Arc<LogSegment> {
    let dir = Path::new("/funk");
    fs.create_dir_all(dir).expect("directory");
    let seg = LogSegment::create(fs, dir, number, 1, &config()).expect("create");
    for &(k, v, version, counter) in records {
        let c = AtomicU64::new(counter);
        seg.append(k.as_bytes(), Some(v.as_bytes()), version, &c, true)
            .expect("append");
    }
    Arc::new(seg)
}

fn get(funk: &Funk, key: &str) -> (Option<Vec<u8>>, FilterProbe) {
    let recovery = RecoveryTable::default();
    let view = ReadView {
        max_version: u64::MAX,
        recovery: &recovery,
        floor: 0,
    };
    let mut probe = FilterProbe::default();
    let (found, _) = funk.get(key.as_bytes(), view, &mut probe).expect("get");
    (found.and_then(|e| e.value), probe)
}

#[test]
fn a_get_skips_segments_older_than_what_it_found() {
    let fs = MemFs::new();
    // Oldest first, as runs of one key's updates lie after a write phase.
    let runs = [
        segment(&fs, 1, &[("a", "a1", 10, 1), ("b", "b1", 10, 2)]),
        segment(&fs, 2, &[("a", "a2", 20, 3), ("b", "b2", 20, 4)]),
        segment(&fs, 3, &[("a", "a3", 30, 5)]),
    ];
    let funk = Funk {
        table: None,
        frozen: runs[..2].to_vec(),
        active: runs[2].clone(),
    };
    let (value, probe) = get(&funk, "a");
    assert_eq!(value.as_deref(), Some(&b"a3"[..]));
    assert_eq!(probe.older_skipped, 2, "both older segments are older");
    let (value, probe) = get(&funk, "b");
    assert_eq!(value.as_deref(), Some(&b"b2"[..]));
    assert_eq!(probe.older_skipped, 1, "the oldest one is older than b2");
    let (value, probe) = get(&funk, "c");
    assert_eq!(value, None);
    assert_eq!(probe.older_skipped, 0, "nothing found, nothing skipped");
}

#[test]
fn an_empty_older_segment_is_not_counted_as_skipped() {
    let fs = MemFs::new();
    // A split's parts share the old active segment, frozen, even when no
    // put reached it: passing over it costs nothing.
    let funk = Funk {
        table: None,
        frozen: vec![segment(&fs, 1, &[]), segment(&fs, 2, &[("a", "a1", 10, 1)])],
        active: segment(&fs, 3, &[("a", "a2", 20, 2)]),
    };
    let (value, probe) = get(&funk, "a");
    assert_eq!(value.as_deref(), Some(&b"a2"[..]));
    assert_eq!(probe.older_skipped, 1, "only the segment holding a1 counts");
}

#[test]
fn a_get_still_reads_an_older_segment_holding_a_newer_version() {
    let fs = MemFs::new();
    // A record appended late (a journal replay, a batch) can leave a newer
    // version in an older segment: its stamp bound keeps it in the search.
    let older = segment(&fs, 1, &[("k", "old", 10, 1), ("k", "late", 40, 9)]);
    let newer = segment(&fs, 2, &[("k", "mid", 30, 5)]);
    let funk = Funk {
        table: None,
        frozen: vec![older],
        active: newer,
    };
    let (value, probe) = get(&funk, "k");
    assert_eq!(value.as_deref(), Some(&b"late"[..]));
    assert_eq!(probe.older_skipped, 0);
    // Same version, larger counter: newer too.
    let older = segment(&fs, 3, &[("k", "same version", 30, 7)]);
    let newer = segment(&fs, 4, &[("k", "mid", 30, 5)]);
    let funk = Funk {
        table: None,
        frozen: vec![older],
        active: newer,
    };
    assert_eq!(get(&funk, "k").0.as_deref(), Some(&b"same version"[..]));
}

#[test]
fn a_merge_reads_a_large_log_through_its_index_and_loses_nothing() {
    let fs = MemFs::new();
    let dir = Path::new("/funk");
    fs.create_dir_all(dir).expect("directory");
    // A log past the indexed-merge size, keys in a scattered order, some
    // keys updated and some deleted, then a small log with newer versions.
    let big = LogSegment::create(&fs, dir, 1, 1, &config()).expect("create");
    let n = 20_000u64;
    let value = |k: u64, version: u64| format!("{k:06}-{version:04}-{}", "v".repeat(900));
    let mut model: std::collections::BTreeMap<String, Vec<(u64, Option<String>)>> =
        Default::default();
    let counter = AtomicU64::new(1);
    for i in 0..n {
        let k = i * 7919 % n;
        let key = format!("key{:06}", k % 4000);
        let version = 10 + i;
        let v = (!k.is_multiple_of(13)).then(|| value(k, version));
        big.append(
            key.as_bytes(),
            v.as_deref().map(str::as_bytes),
            version,
            &counter,
            true,
        )
        .expect("append");
        model.entry(key).or_default().push((version, v));
    }
    assert!(big.appended() >= INDEXED_MERGE_BYTES);
    let small = LogSegment::create(&fs, dir, 2, 1, &config()).expect("create");
    for k in (0..4000u64).step_by(7) {
        let key = format!("key{k:06}");
        let version = 100_000 + k;
        let v = value(k, version);
        small
            .append(key.as_bytes(), Some(v.as_bytes()), version, &counter, true)
            .expect("append");
        model.entry(key).or_default().push((version, Some(v)));
    }
    let (big, small) = (Arc::new(big), Arc::new(small));
    assert!(merged_through_index(&big, big.appended(), u64::MAX));
    assert!(!merged_through_index(&small, small.appended(), u64::MAX));
    let funk = Funk {
        table: None,
        frozen: vec![big],
        active: small,
    };
    let (from, to) = ("key001000", "key003000");
    let groups: Vec<(Vec<u8>, Vec<Entry>)> = funk
        .key_groups(
            from.as_bytes(),
            Some(to.as_bytes()),
            None,
            &RecoveryTable::default(),
            u64::MAX,
        )
        .expect("groups")
        .collect::<Result<_>>()
        .expect("merge");
    type Groups = Vec<(Vec<u8>, Vec<(u64, Option<Vec<u8>>)>)>;
    let expected: Groups = model
        .range(from.to_string()..to.to_string())
        .map(|(k, versions)| {
            let mut v: Vec<(u64, Option<Vec<u8>>)> = versions
                .iter()
                .map(|(ver, val)| (*ver, val.as_ref().map(|s| s.as_bytes().to_vec())))
                .collect();
            v.sort_by_key(|e| std::cmp::Reverse(e.0));
            (k.as_bytes().to_vec(), v)
        })
        .collect();
    let got: Groups = groups
        .into_iter()
        .map(|(k, es)| (k, es.into_iter().map(|e| (e.version, e.value)).collect()))
        .collect();
    assert_eq!(got.len(), expected.len());
    assert!(
        got == expected,
        "the merge through the index differs from the model"
    );
}

/// Scans and rebuild merges of a funk whose banded segments hold keys of
/// different prefixes (so another source's key may lie below, between or
/// above the bytes a segment's keys share), beside a table-less unsorted
/// log holding newer versions of some: every range, read whole or cut
/// short, gives each key's newest value, as a model says.
#[test]
fn merges_of_banded_and_unsorted_logs_match_a_model() {
    let fs = MemFs::new();
    let dir = Path::new("/funk");
    fs.create_dir_all(dir).expect("directory");
    let counter = AtomicU64::new(1);
    let mut model = std::collections::BTreeMap::new();
    let mut version = 0u64;
    let mut banded = Vec::new();
    for (number, prefix) in [(1u64, "app-a/"), (2, "app-m/")] {
        let seg = LogSegment::create(&fs, dir, number, 1, &config()).expect("create");
        for i in 0..600u32 {
            version += 1;
            let key = format!("{prefix}{i:05}");
            let value = format!("{key}@{version}-{}", "x".repeat(100));
            seg.append(
                key.as_bytes(),
                Some(value.as_bytes()),
                version,
                &counter,
                true,
            )
            .expect("append");
            model.insert(key.into_bytes(), Some(value.into_bytes()));
        }
        seg.freeze().expect("freeze");
        assert!(seg.is_banded(), "segment {number}");
        banded.push(Arc::new(seg));
    }
    let active = LogSegment::create(&fs, dir, 3, 1, &config()).expect("create");
    for i in 0..900u32 {
        version += 1;
        let j = i * 7 % 900;
        let key = match j % 3 {
            // Only the first keys of app-a: past them, the log's smallest
            // key is one of another app, above the bytes the app-a
            // segment's keys share.
            0 => format!("app-a/{:05}", j % 50),
            1 => format!("app-m/{:05}", j % 600),
            _ => format!("app-z/{j:05}"),
        };
        let deleted = j % 17 == 0;
        let value = format!("{key}@{version}");
        let value = (!deleted).then_some(value.as_bytes());
        active
            .append(key.as_bytes(), value, version, &counter, true)
            .expect("append");
        model.insert(key.into_bytes(), value.map(<[u8]>::to_vec));
    }
    assert!(!active.is_banded());
    let funk = Funk {
        table: None,
        frozen: banded,
        active: Arc::new(active),
    };
    let recovery = RecoveryTable::default();
    let tombstones = Arc::new(crate::tombstones::Tombstones::default());
    let ranges: [(&str, Option<&str>); 7] = [
        ("", None),
        ("app-a/00100", None),
        ("app-", Some("app-b")),
        ("app-a/00590", Some("app-m/00010")),
        ("app-b", Some("app-n")),
        ("app-m/00300", None),
        ("app-n", Some("b")),
    ];
    for (from, to) in ranges {
        let expected: Vec<(Vec<u8>, Option<Vec<u8>>)> = model
            .range::<[u8], _>((
                std::ops::Bound::Included(from.as_bytes()),
                to.map_or(std::ops::Bound::Unbounded, |t| {
                    std::ops::Bound::Excluded(t.as_bytes())
                }),
            ))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for cut in [usize::MAX, 1, 37] {
            let got: Vec<ScanItem> = funk
                .scan(
                    from.as_bytes(),
                    to.map(str::as_bytes),
                    u64::MAX,
                    &recovery,
                    tombstones.clone(),
                    &|_| {},
                )
                .expect("scan")
                .take(cut)
                .collect::<Result<_>>()
                .expect("scan");
            let want = &expected[..expected.len().min(cut)];
            assert!(got == want, "scan of {from:?}..{to:?} cut at {cut}");
        }
        // Read whole, and (no room for images) through an index.
        for cap in [u64::MAX, 0] {
            let groups: Vec<(Vec<u8>, Option<Vec<u8>>)> = funk
                .key_groups(from.as_bytes(), to.map(str::as_bytes), None, &recovery, cap)
                .expect("groups")
                .map(|g| g.map(|(k, es)| (k, es.into_iter().next().and_then(|e| e.value))))
                .collect::<Result<_>>()
                .expect("merge");
            assert!(
                groups == expected,
                "merge of {from:?}..{to:?} (images up to {cap})"
            );
        }
    }
}

/// A merge reads its unsorted windows whole while they fit the cap
/// together, the largest through an index first.
#[test]
fn merges_index_the_largest_windows_past_their_images_cap() {
    const MIB: u64 = 1 << 20;
    let t = |w: &[u64], cap| index_threshold(w.iter().copied(), cap);
    // Everything fits: only windows of 16 MiB or more go through an index.
    assert_eq!(
        t(&[3 * MIB, 5 * MIB, 20 * MIB], 8 * MIB),
        INDEXED_MERGE_BYTES
    );
    // 3 + 5 + 6 > 8: the 6 MiB window and larger go through an index.
    assert_eq!(t(&[6 * MIB, 3 * MIB, 5 * MIB], 8 * MIB), 6 * MIB);
    // Not even the smallest fits: all of them.
    assert_eq!(t(&[9 * MIB, 12 * MIB], 8 * MIB), 9 * MIB);
    assert_eq!(t(&[], 0), INDEXED_MERGE_BYTES);
    assert_eq!(t(&[0, 0], 0), INDEXED_MERGE_BYTES);
}
