//! Reverse scans (`--reverse`) in every engine of the build, against a
//! model: each value has its own length, so a scan's byte count tells which
//! records it visited, not only how many.

use std::collections::BTreeMap;

use evendb_bench::engines::{self, Engine, EngineConfig, EngineKind, ScanSummary};
use evendb_bench::generator::Stream;

/// The store's contents, as a sorted map.
#[derive(Default)]
struct Model(BTreeMap<Vec<u8>, Vec<u8>>);

impl Model {
    fn summary<'a>(pairs: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>) -> ScanSummary {
        let mut s = ScanSummary::default();
        for (k, v) in pairs {
            s.records += 1;
            s.bytes += k.len() + v.len();
        }
        s
    }

    fn scan(&self, start: &[u8], count: usize) -> ScanSummary {
        Self::summary(self.0.range(start.to_vec()..).take(count))
    }

    fn scan_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> ScanSummary {
        let below = self.0.range(..=start.to_vec()).rev();
        Self::summary(
            below
                .take_while(|(k, _)| floor.is_none_or(|f| k.as_slice() >= f))
                .take(count),
        )
    }

    fn prefix_rev(&self, prefix: &[u8], count: usize) -> ScanSummary {
        let matching: Vec<_> = self
            .0
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .collect();
        Self::summary(matching.into_iter().rev().take(count))
    }
}

/// An engine and the model of what it holds.
struct Pair {
    db: Box<dyn Engine>,
    model: Model,
    name: &'static str,
}

impl Pair {
    fn put(&mut self, key: &[u8], len: usize) {
        let value: Vec<u8> = (0..len).map(|i| i as u8).collect();
        self.db.put(key, &value).unwrap();
        self.model.0.insert(key.to_vec(), value);
    }

    fn delete(&mut self, key: &[u8]) {
        self.db.delete(key).unwrap();
        self.model.0.remove(key);
    }

    fn check_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> ScanSummary {
        let got = self.db.scan_rev(start, floor, count).unwrap();
        let want = self.model.scan_rev(start, floor, count);
        assert_eq!(
            got, want,
            "{}: scan_rev({start:?}, {floor:?}, {count})",
            self.name
        );
        got
    }

    fn check_prefix_rev(&self, prefix: &[u8], count: usize) -> ScanSummary {
        let got = self.db.prefix_rev(prefix, count).unwrap();
        let want = self.model.prefix_rev(prefix, count);
        assert_eq!(got, want, "{}: prefix_rev({prefix:?}, {count})", self.name);
        got
    }
}

fn user(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

/// Opens every engine of the build in `dir`.
fn engines(dir: &std::path::Path) -> Vec<Pair> {
    let config = EngineConfig {
        cache_bytes: Some(64 << 20),
        ..EngineConfig::default()
    };
    EngineKind::ALL
        .into_iter()
        .filter(|k| k.available())
        // One RocksDB configuration is enough: they share the scan code.
        .filter(|k| !matches!(k, EngineKind::RocksdbUniversal | EngineKind::RocksdbDefault))
        .map(|kind| Pair {
            db: engines::open(kind, &dir.join(kind.name()), &config).unwrap(),
            model: Model::default(),
            name: kind.name(),
        })
        .collect()
}

#[test]
fn a_reverse_scan_reads_the_largest_keys_at_or_below_its_start() {
    let dir = tempfile::tempdir().unwrap();
    for mut e in engines(dir.path()) {
        // Even record numbers only, each value of its own length.
        for i in (0..200).step_by(2) {
            e.put(&user(i), 10 + i as usize);
        }
        // Keys below and above the records.
        e.put(b"aaa", 3);
        e.put(&[0xFF, 0xFF, 1], 5);
        e.delete(&user(98));
        e.put(&user(96), 1000);

        // From a key that exists: it comes first, then the ones below.
        let s = e.check_rev(&user(100), None, 10);
        assert_eq!(s.records, 10, "{}", e.name);
        // From a key that does not exist: the largest below it.
        assert_eq!(
            e.check_rev(&user(101), None, 10),
            e.model.scan_rev(&user(100), None, 10)
        );
        // The deleted key is skipped and the overwritten one is new.
        let s = e.check_rev(&user(100), None, 3);
        let head = |k: u64, len: usize| user(k).len() + len;
        assert_eq!(s.bytes, head(100, 110) + head(96, 1000) + head(94, 104));
        // Near the bottom: fewer than asked, then the key below them all.
        assert_eq!(e.check_rev(&user(4), None, 10).records, 4);
        assert_eq!(e.check_rev(&user(4), Some(b"user"), 10).records, 3);
        // A floor (inclusive) stops the scan.
        assert_eq!(e.check_rev(&user(100), Some(&user(90)), 100).records, 5);
        assert_eq!(e.check_rev(&user(100), Some(&user(91)), 100).records, 4);
        assert_eq!(e.check_rev(&user(100), Some(&user(101)), 100).records, 0);
        // Below every key; above every key.
        assert_eq!(e.check_rev(b"a", None, 10).records, 0);
        let all = e.check_rev(&[0xFF; 8], None, 1000);
        assert_eq!(all.records, e.model.0.len());
        assert_eq!(e.check_rev(&[0xFF; 8], None, 1).bytes, 3 + 5);
        // One record; none.
        assert_eq!(e.check_rev(&user(150), None, 1).records, 1);
        assert_eq!(e.check_rev(&user(150), None, 0).records, 0);
        // The forward scan is unchanged.
        assert_eq!(
            e.db.scan(&user(95), None, 10).unwrap(),
            e.model.scan(&user(95), 10),
            "{}",
            e.name
        );
    }
}

#[test]
fn a_reverse_scan_crosses_many_records_exactly() {
    let dir = tempfile::tempdir().unwrap();
    for mut e in engines(dir.path()) {
        for i in 0..4000 {
            e.put(&user(i), 100 + (i % 97) as usize);
        }
        for i in (1000..1400).step_by(3) {
            e.delete(&user(i));
        }
        e.db.flush().unwrap();
        for (start, count) in [(3999, 1000), (2500, 1500), (1500, 700), (10, 100)] {
            e.check_rev(&user(start), None, count);
        }
    }
}

#[test]
fn a_reverse_prefix_scan_reads_one_apps_latest_events() {
    let dir = tempfile::tempdir().unwrap();
    let stream = Stream::default();
    for mut e in engines(dir.path()) {
        // Apps 0x1FF and 0x200 are neighbours whose prefixes differ in
        // two bytes; app u32::MAX has no key above its prefix.
        let apps = [5u32, 6, 7, 0x1FF, 0x200, u32::MAX];
        for seq in 0..300u64 {
            let app = apps[(seq % 6) as usize];
            if app == 6 || seq % 5 == 0 {
                e.put(&stream.key(app, seq), 20 + seq as usize);
            }
        }
        e.put(b"zzz", 7);
        for app in apps.into_iter().chain([4, 8, 0x1FE, 0x201]) {
            let prefix = Stream::app_prefix(app);
            for count in [1, 10, 1000] {
                e.check_prefix_rev(&prefix, count);
            }
        }
        // The latest ten of app 6, newest first: its ten largest sequences.
        let s = e.check_prefix_rev(&Stream::app_prefix(6), 10);
        let latest: usize = (0..10).map(|j| 16 + 20 + (295 - 6 * j)).sum();
        assert_eq!((s.records, s.bytes), (10, latest), "{}", e.name);
        assert_eq!(e.check_prefix_rev(&Stream::app_prefix(6), 1000).records, 50);
        assert_eq!(e.check_prefix_rev(&Stream::app_prefix(8), 10).records, 0);
        // Any prefix length, including one made of 0xFF bytes only.
        e.check_prefix_rev(&[0xFF, 0xFF], 5);
        e.check_prefix_rev(&[0, 0, 2], 1000);
        e.check_prefix_rev(b"", 3);
    }
}

#[test]
fn reverse_reaches_every_job_and_the_report_header() {
    use clap::Parser;
    use evendb_bench::cli::{describe_job, job_for, Args};
    use evendb_bench::report;
    use evendb_bench::results::{Report, RunResult};

    let args = |extra: &[&str]| {
        Args::try_parse_from(std::iter::once("evendb-bench").chain(extra.iter().copied())).unwrap()
    };
    let on = job_for(
        &args(&["--reverse"]),
        EngineKind::Evendb,
        false,
        10,
        Vec::new(),
        "t",
    );
    assert!(on.reverse);
    assert!(describe_job(&on).ends_with(", scans newest-first"));
    let off = job_for(&args(&[]), EngineKind::Evendb, false, 10, Vec::new(), "t");
    assert!(!off.reverse);
    assert!(!describe_job(&off).contains("newest-first"));
    // Stream queries read each app's latest events unless asked for its
    // last minute; `--reverse` is for YCSB scans.
    let stream =
        |extra: &[&str]| job_for(&args(extra), EngineKind::Evendb, true, 10, Vec::new(), "t");
    assert!(stream(&[]).reverse);
    assert!(!stream(&["--stream-query", "minute"]).reverse);
    assert!(!stream(&["--stream-query", "minute", "--reverse"]).reverse);
    // Jobs written before the option existed scan forward.
    let mut old = serde_json::to_value(&on).unwrap();
    old.as_object_mut().unwrap().remove("reverse");
    let old: evendb_bench::runner::Job = serde_json::from_value(old).unwrap();
    assert!(!old.reverse);

    let mut report = Report {
        results: vec![RunResult::default()],
        ..Report::default()
    };
    assert!(!report::header(&report).contains("--reverse"));
    report.results[0].reverse = true;
    let h = report::header(&report);
    assert!(h.contains("scans: newest-first: a YCSB scan"), "{h}");
}
