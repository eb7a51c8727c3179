//! Compressible values and compression settings: `--value-kind`,
//! `--evendb-compression`, `--peer-compression lz4`; and the range deletes
//! of the `range_delete` example (`Engine::delete_range`,
//! `Engine::compact_range`).

use std::process::Command;

use clap::{Parser, ValueEnum};
use evendb_bench::cli::Args;
use evendb_bench::engines::fjall_config::FjallPlan;
use evendb_bench::engines::rocksdb_config::{RocksPlan, RocksProfile};
use evendb_bench::engines::{
    self, EngineConfig, EngineKind, EvendbCompression, PeerCompression, Setting,
};
use evendb_bench::generator::ValueKind;
use evendb_bench::report;
use evendb_bench::results::{Provenance, Report, RunResult};

fn args(extra: &[&str]) -> Args {
    Args::try_parse_from(std::iter::once("evendb-bench").chain(extra.iter().copied())).unwrap()
}

fn setting<'a>(settings: &'a [Setting], option: &str) -> &'a str {
    &settings
        .iter()
        .find(|s| s.option == option)
        .unwrap_or_else(|| panic!("no setting {option} in {settings:?}"))
        .value
}

#[test]
fn values_are_random_and_evendb_compresses_with_lz4_by_default() {
    let a = args(&[]);
    assert_eq!(a.value_kind, ValueKind::Random);
    assert_eq!(a.evendb_compression, EvendbCompression::Lz4);
    assert_eq!(a.engine_config().evendb_compression, EvendbCompression::Lz4);
    let a = args(&["--value-kind", "json", "--evendb-compression", "none"]);
    assert_eq!(a.value_kind, ValueKind::Json);
    assert_eq!(
        a.engine_config().evendb_compression,
        EvendbCompression::None
    );
    // Jobs from before the option open evendb with its default.
    let old: EngineConfig = serde_json::from_str(r#"{"cache_bytes": null}"#).unwrap();
    assert_eq!(old.evendb_compression, EvendbCompression::Lz4);
}

#[test]
fn the_evendb_compression_reaches_the_engine_and_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, source) in [
        ("lz4", "LZ4 table and run blocks", "evendb default"),
        ("none", "none", "--evendb-compression none"),
    ] {
        let config = args(&["--evendb-compression", flag]).engine_config();
        let db = engines::open(EngineKind::Evendb, &dir.path().join(flag), &config).unwrap();
        for i in 0..2000u32 {
            db.put(format!("k{i:06}").as_bytes(), &[b'x'; 200]).unwrap();
        }
        db.flush().unwrap();
        assert_eq!(
            db.get(b"k001999").unwrap().as_deref(),
            Some(&[b'x'; 200][..])
        );
        let settings = db.settings();
        let s = settings.iter().find(|s| s.option == "compression").unwrap();
        assert!(s.value.starts_with(value), "{s:?}");
        assert!(s.source.starts_with(source), "{s:?}");
        assert!(db.describe().contains(&format!("compression {value}")));
    }
}

#[test]
fn peer_lz4_compresses_every_level_and_no_log() {
    assert_eq!(
        PeerCompression::from_str("lz4", false),
        Ok(PeerCompression::Lz4)
    );
    let config = args(&["--peer-compression", "lz4"]).engine_config();
    for profile in [
        RocksProfile::Leveled,
        RocksProfile::Universal,
        RocksProfile::Default,
    ] {
        let plan = RocksPlan::new(profile, &config, 2);
        let s = plan.settings();
        assert_eq!(setting(&s, "compression"), "LZ4");
        assert_eq!(setting(&s, "bottommost_compression"), "LZ4");
        assert!(plan.summary().contains("compression lz4"));
    }
    let s = FjallPlan::new(&config).settings();
    assert_eq!(
        setting(&s, "data_block_compression_policy"),
        "LZ4 on every level"
    );
    assert_eq!(setting(&s, "journal_compression"), "none");
}

#[test]
fn the_header_states_both_compressions_and_the_value_kind() {
    let config =
        args(&["--evendb-compression", "none", "--peer-compression", "lz4"]).engine_config();
    let report = Report {
        provenance: Provenance::default().with_engine_config(&config),
        results: vec![RunResult {
            engine: "evendb".to_string(),
            value_kind: ValueKind::Json,
            ..RunResult::default()
        }],
        failures: Vec::new(),
    };
    assert_eq!(report.provenance.evendb_compression, "none");
    let h = report::header(&report);
    assert!(h.contains("peer compression: lz4"), "{h}");
    assert!(h.contains("evendb compression: none"), "{h}");
    assert!(h.contains("values: json"), "{h}");
    // Results written before the options: random values, evendb's
    // compression not recorded.
    let mut old = serde_json::to_value(&report.provenance).unwrap();
    old.as_object_mut().unwrap().remove("evendb_compression");
    let old = Report {
        provenance: serde_json::from_value(old).unwrap(),
        results: vec![RunResult::default()],
        failures: Vec::new(),
    };
    let h = report::header(&old);
    assert!(h.contains("evendb compression: not recorded"), "{h}");
    assert!(h.contains("values: random"), "{h}");
}

#[test]
fn a_json_run_records_its_values_and_compression_in_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let output = Command::new(env!("CARGO_BIN_EXE_evendb-bench"))
        .args([
            "--engine",
            "evendb",
            "--workload",
            "P",
            "--records",
            "2000",
            "--operations",
            "2000",
            "--value-kind",
            "json",
            "--evendb-compression",
            "none",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("values: json"), "{stdout}");
    assert!(stdout.contains("evendb compression: none"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["provenance"]["evendb_compression"], "none");
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["value_kind"], "json");
        assert_eq!(r["value_size"], 800);
        assert!(r["user_bytes_written"].as_u64().unwrap() >= 2000 * 814);
    }
}

fn key(app: u32, event: u32) -> Vec<u8> {
    format!(
        "app{app:05}|{:012}",
        1_700_000_000_000u64 + u64::from(event)
    )
    .into_bytes()
}

fn prefix(app: u32) -> Vec<u8> {
    format!("app{app:05}|").into_bytes()
}

#[test]
fn range_deletes_remove_their_range_and_compaction_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_bytes: Some(64 << 20),
        ..EngineConfig::default()
    };
    for kind in [EngineKind::Evendb, EngineKind::Rocksdb] {
        if !kind.available() {
            continue;
        }
        let db = engines::open(kind, &dir.path().join(kind.name()), &config).unwrap();
        for e in 0..500 {
            for app in 0..6 {
                db.put(&key(app, e), &[b'v'; 100]).unwrap();
            }
        }
        db.delete_range(&prefix(1), &prefix(2)).unwrap();
        db.delete_range(&prefix(3), &prefix(5)).unwrap();
        let live = |db: &dyn engines::Engine, app: u32| {
            db.scan(&prefix(app), Some(&prefix(app + 1)), 1000)
                .unwrap()
                .records
        };
        for round in 0..2 {
            for app in 0..6 {
                let want = if [1, 3, 4].contains(&app) { 0 } else { 500 };
                assert_eq!(
                    live(&*db, app),
                    want,
                    "{} app {app} round {round}",
                    kind.name()
                );
                assert_eq!(
                    db.get(&key(app, 250)).unwrap().is_some(),
                    want > 0,
                    "{} app {app}",
                    kind.name()
                );
            }
            db.compact_range(None, None).unwrap();
        }
        db.compact_range(Some(&prefix(0)), Some(&prefix(1)))
            .unwrap();
        assert_eq!(live(&*db, 0), 500);
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_refuses_range_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = engines::open(EngineKind::Fjall, dir.path(), &EngineConfig::default()).unwrap();
    assert!(db.delete_range(b"a", b"b").is_err());
    assert!(db.compact_range(None, None).is_err());
}
