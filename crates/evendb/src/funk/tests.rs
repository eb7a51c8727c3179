//! Gets of a funk with several log segments.

use super::*;
use crate::cache::budget::MemoryBudget;
use crate::codec::StoreId;
use crate::funk::log::LogConfig;
use crate::stats::FilterProbe;
use crate::vfs::{MemFs, Storage};
use std::path::Path;
use std::sync::atomic::AtomicU64;

fn config() -> LogConfig {
    LogConfig {
        part_bytes: 4096,
        budget: Arc::new(MemoryBudget::new(1 << 30)),
        store: StoreId(9),
        durable: Arc::default(),
        read_only: false,
    }
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
