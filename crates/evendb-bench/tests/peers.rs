//! The peers' configurations: engine names, the memory sizing rule, the
//! durability and compression flags reaching every engine, and the report's
//! choice of the best RocksDB configuration. Everything here runs in the
//! default build (no RocksDB, no fjall) except the tests marked with a
//! cargo feature.

mod common;

use common::latency;
use std::collections::BTreeMap;
use std::process::Command;

use clap::{Parser, ValueEnum};
use evendb_bench::cli::{job_for, Args};
use evendb_bench::engines::fjall_config::FjallPlan;
use evendb_bench::engines::rocksdb_config::{RocksPlan, RocksProfile, Style};
use evendb_bench::engines::{
    self, EngineConfig, EngineKind, PeerCompression, Setting, DEFAULT_BUDGET,
};
use evendb_bench::report::{self, best};
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

const MIB: u64 = 1 << 20;

#[test]
fn engine_names_parse_and_round_trip() {
    let names = [
        "evendb",
        "rocksdb",
        "rocksdb-universal",
        "rocksdb-default",
        "fjall",
    ];
    assert_eq!(EngineKind::ALL.map(EngineKind::name), names);
    for kind in EngineKind::ALL {
        assert_eq!(EngineKind::from_name(kind.name()), Some(kind));
        assert_eq!(EngineKind::from_str(kind.name(), false), Ok(kind));
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{}\"", kind.name()));
        assert_eq!(serde_json::from_str::<EngineKind>(&json).unwrap(), kind);
    }
    assert_eq!(
        EngineKind::from_name("RocksDB-Universal"),
        Some(EngineKind::RocksdbUniversal)
    );
    assert_eq!(EngineKind::from_name("rocksdb_universal"), None);
    let rocks: Vec<EngineKind> = EngineKind::ALL
        .into_iter()
        .filter(|k| k.is_rocksdb())
        .collect();
    assert_eq!(
        rocks,
        [
            EngineKind::Rocksdb,
            EngineKind::RocksdbUniversal,
            EngineKind::RocksdbDefault
        ]
    );
    assert!(rocks.iter().all(|k| k.feature() == Some("rocksdb")));
}

#[test]
fn unknown_engine_names_are_refused_with_the_known_ones() {
    let err = args(&["--engine", "leveldb"]).engines().unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("unknown engine `leveldb`"), "{msg}");
    assert!(
        msg.contains("rocksdb-universal") && msg.contains("rocksdb-default"),
        "{msg}"
    );
}

#[test]
fn all_means_every_engine_of_the_build_once() {
    let a = args(&["--engine", "all,evendb"]);
    assert_eq!(a.engines().unwrap(), EngineKind::all_available());
    assert_eq!(EngineKind::all_available()[0], EngineKind::Evendb);
    #[cfg(all(feature = "rocksdb", feature = "fjall"))]
    assert_eq!(EngineKind::all_available(), EngineKind::ALL);
}

#[cfg(not(feature = "rocksdb"))]
#[test]
fn rocksdb_engines_outside_the_build_name_the_feature_to_add() {
    for name in ["rocksdb", "rocksdb-universal", "rocksdb-default"] {
        let err = args(&["--engine", name]).engines().unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(&format!("no `{name}` engine")) && msg.contains("--features rocksdb"),
            "{msg}"
        );
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn the_three_rocksdb_engines_are_selectable() {
    let a = args(&["--engine", "rocksdb-default,rocksdb,rocksdb-universal"]);
    assert_eq!(
        a.engines().unwrap(),
        [
            EngineKind::RocksdbDefault,
            EngineKind::Rocksdb,
            EngineKind::RocksdbUniversal
        ]
    );
}

#[test]
fn sync_flag_reaches_every_engine_config() {
    let on = args(&["--sync", "--memory-limit", "1G"]);
    let config = on.engine_config();
    assert!(config.sync);
    assert_eq!(config.durability_mode(), "sync");
    let job = job_for(&on, EngineKind::Rocksdb, false, 10, Vec::new(), "t");
    assert!(job.config.sync, "the child's job carries --sync");
    let decoded: EngineConfig =
        serde_json::from_value(serde_json::to_value(&job.config).unwrap()).unwrap();
    assert!(decoded.sync);

    for profile in [
        RocksProfile::Leveled,
        RocksProfile::Universal,
        RocksProfile::Default,
    ] {
        let plan = RocksPlan::new(profile, &config, 2);
        assert!(plan.sync);
        assert_eq!(setting(&plan.settings(), "WriteOptions::sync"), "true");
        let off = RocksPlan::new(profile, &args(&[]).engine_config(), 2);
        assert_eq!(setting(&off.settings(), "WriteOptions::sync"), "false");
    }
    let fjall = FjallPlan::new(&config);
    assert!(fjall.sync);
    assert!(setting(&fjall.settings(), "write durability").contains("SyncData"));

    let dir = tempfile::tempdir().unwrap();
    let evendb = engines::open(EngineKind::Evendb, &dir.path().join("s"), &config).unwrap();
    assert_eq!(setting(&evendb.settings(), "durability"), "Sync");
    assert!(evendb.describe().contains("durability Sync"));
    let buffered = engines::open(
        EngineKind::Evendb,
        &dir.path().join("b"),
        &args(&[]).engine_config(),
    )
    .unwrap();
    assert_eq!(
        setting(&buffered.settings(), "durability"),
        "Buffered, synced every 100 ms"
    );
}

#[test]
fn the_default_budget_is_evendbs_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = evendb::Options::default().open(dir.path()).unwrap();
    assert_eq!(db.stats().memory_budget, DEFAULT_BUDGET);
    assert_eq!(args(&[]).engine_config().budget(), DEFAULT_BUDGET);
    assert_eq!(
        args(&["--memory-limit", "2G"]).engine_config().budget(),
        512 * MIB
    );
    assert_eq!(
        args(&["--memory-limit", "2G", "--cache-size", "100M"])
            .engine_config()
            .budget(),
        100 * MIB
    );
}

#[test]
fn tuned_rocksdb_is_benchmark_sh_scaled_to_the_memory_cap() {
    let cap = 1u64 << 30;
    let config = args(&["--memory-limit", "1G"]).engine_config();
    let plan = RocksPlan::new(RocksProfile::Leveled, &config, 2);
    assert_eq!(plan.block_cache_bytes, Some(cap / 4));
    let t = plan.tuned.as_ref().unwrap();
    assert_eq!(t.write_buffer_size, 32 * MIB);
    assert_eq!(t.max_write_buffer_number, 8);
    assert_eq!(plan.memtable_bytes(), Some(cap / 4));
    assert!(
        plan.block_cache_bytes.unwrap() + plan.memtable_bytes().unwrap() <= cap / 2,
        "cache and memtables leave half the cap to the page cache"
    );
    assert_eq!(t.target_file_size_base, 32 * MIB);
    assert_eq!(t.max_bytes_for_level_base, 256 * MIB);
    assert_eq!(t.max_bytes_for_level_multiplier, 8.0);
    assert_eq!(t.block_size, 8192);
    assert_eq!(t.bloom_bits_per_key, 10.0);
    assert!(t.cache_index_and_filter_blocks && t.pin_l0_filter_and_index_blocks_in_cache);
    assert_eq!(t.bytes_per_sync, MIB);
    assert_eq!(
        (
            t.level0_file_num_compaction_trigger,
            t.level0_slowdown_writes_trigger,
            t.level0_stop_writes_trigger
        ),
        (4, 20, 30)
    );
    assert_eq!(t.max_background_jobs, 2);
    assert_eq!(
        RocksPlan::new(RocksProfile::Leveled, &config, 16)
            .tuned
            .unwrap()
            .max_background_jobs,
        16,
        "background jobs follow the cores"
    );
    assert_eq!(
        t.style,
        Style::Leveled {
            num_levels: 8,
            level_compaction_dynamic_level_bytes: true
        }
    );
    // Without any budget the plan scales from evendb's default budget.
    let plain = RocksPlan::new(RocksProfile::Leveled, &args(&[]).engine_config(), 2);
    assert_eq!(plain.block_cache_bytes, Some(DEFAULT_BUDGET));
    assert_eq!(plain.memtable_bytes(), Some(DEFAULT_BUDGET));
}

#[test]
fn universal_rocksdb_shares_the_table_options_and_sets_benchmark_sh_universal() {
    let config = args(&["--memory-limit", "1G"]).engine_config();
    let leveled = RocksPlan::new(RocksProfile::Leveled, &config, 2)
        .tuned
        .unwrap();
    let universal = RocksPlan::new(RocksProfile::Universal, &config, 2)
        .tuned
        .unwrap();
    assert_eq!(
        universal.style,
        Style::Universal {
            num_levels: 40,
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: 20,
            max_size_amplification_percent: 200,
            compression_size_percent: -1,
            allow_trivial_move: false,
        }
    );
    assert_eq!(universal.level0_file_num_compaction_trigger, 8);
    assert_eq!(universal.block_size, leveled.block_size);
    assert_eq!(universal.bloom_bits_per_key, leveled.bloom_bits_per_key);
    assert_eq!(
        universal.cache_index_and_filter_blocks,
        leveled.cache_index_and_filter_blocks
    );
    assert_eq!(universal.write_buffer_size, leveled.write_buffer_size);
}

#[test]
fn rocksdb_default_keeps_the_reference_configuration() {
    let plan = RocksPlan::new(RocksProfile::Default, &args(&[]).engine_config(), 2);
    assert!(plan.tuned.is_none());
    assert_eq!(plan.block_cache_bytes, None, "no budget: RocksDB's cache");
    let capped = RocksPlan::new(
        RocksProfile::Default,
        &args(&["--cache-size", "64M"]).engine_config(),
        2,
    );
    assert_eq!(capped.block_cache_bytes, Some(64 * MIB));
}

#[test]
fn compression_is_off_by_default_and_recommended_on_request() {
    assert_eq!(args(&[]).peer_compression, PeerCompression::None);
    assert_eq!(
        PeerCompression::from_str("recommended", false),
        Ok(PeerCompression::Recommended)
    );
    let none = args(&[]).engine_config();
    let rec = args(&["--peer-compression", "recommended"]).engine_config();
    for profile in [
        RocksProfile::Leveled,
        RocksProfile::Universal,
        RocksProfile::Default,
    ] {
        let s = RocksPlan::new(profile, &none, 2).settings();
        assert_eq!(setting(&s, "compression"), "none");
        assert!(setting(&s, "bottommost_compression").starts_with("none"));
        let s = RocksPlan::new(profile, &rec, 2).settings();
        assert_eq!(setting(&s, "compression"), "LZ4");
        assert_eq!(setting(&s, "bottommost_compression"), "ZSTD");
    }
    assert_eq!(
        setting(
            &FjallPlan::new(&none).settings(),
            "data_block_compression_policy"
        ),
        "none on every level"
    );
}

#[test]
fn every_setting_names_its_value_and_source() {
    let configs = [
        args(&[]).engine_config(),
        args(&["--memory-limit", "1G", "--sync"]).engine_config(),
    ];
    for config in &configs {
        let mut all = Vec::new();
        for profile in [
            RocksProfile::Leveled,
            RocksProfile::Universal,
            RocksProfile::Default,
        ] {
            all.extend(RocksPlan::new(profile, config, 2).settings());
        }
        all.extend(FjallPlan::new(config).settings());
        for s in &all {
            assert!(
                !s.option.is_empty() && !s.value.is_empty() && !s.source.is_empty(),
                "{s:?}"
            );
        }
    }
    let leveled = RocksPlan::new(RocksProfile::Leveled, &configs[1], 2).settings();
    for option in [
        "block_cache",
        "block_size",
        "filter_policy",
        "cache_index_and_filter_blocks",
        "pin_l0_filter_and_index_blocks_in_cache",
        "bytes_per_sync",
        "write_buffer_size",
        "max_write_buffer_number",
        "target_file_size_base",
        "max_bytes_for_level_base",
        "max_bytes_for_level_multiplier",
        "level_compaction_dynamic_level_bytes",
        "level0_file_num_compaction_trigger",
        "level0_slowdown_writes_trigger",
        "level0_stop_writes_trigger",
        "max_background_jobs",
        "compaction_style",
    ] {
        setting(&leveled, option);
    }
    assert_eq!(setting(&leveled, "block_cache"), "LRU 256.0 MiB");
    assert_eq!(setting(&leveled, "write_buffer_size"), "32.0 MiB");
}

#[test]
fn fjall_follows_its_documented_memory_rules() {
    let plan = FjallPlan::new(&args(&["--memory-limit", "1G"]).engine_config());
    assert_eq!(plan.cache_bytes, 256 * MIB, "a quarter of the memory");
    assert_eq!(plan.max_memtable_size, 64 * MIB, "within 8-64 MiB");
    assert_eq!(plan.max_journaling_size, 256 * MIB);
    let small = FjallPlan::new(&args(&["--cache-size", "16M"]).engine_config());
    assert_eq!(small.max_memtable_size, 8 * MIB);
    assert_eq!(small.max_journaling_size, 64 * MIB, "fjall's minimum");
    let big = FjallPlan::new(&args(&["--memory-limit", "8G"]).engine_config());
    assert_eq!(big.max_memtable_size, 64 * MIB);
}

fn phase(engine: &str, workload: &str, ops: f64) -> RunResult {
    let mut latency_us = BTreeMap::new();
    latency_us.insert("get".to_string(), latency(90.0, 5_000.0));
    latency_us.insert("update".to_string(), latency(40.0, 700.0));
    RunResult {
        engine: engine.to_string(),
        engine_config: format!("{engine} config"),
        workload: workload.to_string(),
        distribution: "zipf-composite".to_string(),
        throughput_ops_per_sec: ops,
        write_amplification: Some(ops / 10_000.0),
        latency_us,
        ..RunResult::default()
    }
}

fn sample() -> Vec<RunResult> {
    vec![
        phase("evendb", "A", 300_000.0),
        phase("rocksdb-default", "A", 80_000.0),
        phase("rocksdb", "A", 100_000.0),
        phase("rocksdb-universal", "A", 150_000.0),
        phase("fjall", "A", 900_000.0),
        phase("evendb", "C", 50_000.0),
        phase("rocksdb-default", "C", 100_000.0),
        phase("evendb", "P", 10.0),
    ]
}

#[test]
fn the_best_rocksdb_is_the_fastest_configuration_of_each_phase() {
    let results = sample();
    let refs: Vec<&RunResult> = results.iter().collect();
    let rows = best::best_rocksdb(&refs);
    assert_eq!(rows.len(), 2, "P ran no RocksDB: no row");
    let a = &rows[0];
    assert_eq!(a.workload, "A");
    assert_eq!(a.best.engine, "rocksdb-universal", "fjall is not RocksDB");
    assert_eq!(a.evendb.unwrap().throughput_ops_per_sec, 300_000.0);
    assert_eq!(a.ratio(), Some(2.0));
    assert_eq!(a.ratio_vs("rocksdb"), Some(3.0));
    assert_eq!(a.ratio_vs("rocksdb-default"), Some(3.75));
    assert_eq!(a.best.p999_us(), Some(90.0));
    assert_eq!(a.best.worst_write_us(), Some(700.0), "gets are not writes");
    let c = &rows[1];
    assert_eq!(c.best.engine, "rocksdb-default");
    assert_eq!(c.ratio(), Some(0.5));
    assert_eq!(c.ratio_vs("rocksdb-universal"), None);

    // The order of the results does not change the winner.
    let mut reversed = refs.clone();
    reversed.reverse();
    let rows = best::best_rocksdb(&reversed);
    let a = rows.iter().find(|r| r.workload == "A").unwrap();
    assert_eq!(a.best.engine, "rocksdb-universal");
}

#[test]
fn phases_of_different_data_sets_are_compared_apart() {
    let mut small = phase("rocksdb", "A", 10.0);
    small
        .engine_stats
        .insert("bench_dataset_factor_x10".into(), 5);
    let mut big = phase("rocksdb-universal", "A", 20.0);
    big.engine_stats
        .insert("bench_dataset_factor_x10".into(), 80);
    let results = [small, big];
    let refs: Vec<&RunResult> = results.iter().collect();
    let rows = best::best_rocksdb(&refs);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].best.engine, "rocksdb");
    assert_eq!(rows[0].dataset.as_deref(), Some("0.5x"));
    assert_eq!(rows[1].best.engine, "rocksdb-universal");
}

#[test]
fn the_best_of_tables_show_winner_and_ratios() {
    let results = sample();
    let refs: Vec<&RunResult> = results.iter().collect();
    let md = best::markdown(&refs);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows,
        [
            "| workload | distribution | best RocksDB | its ops/s | its write amp | its p99.9 µs | its worst write µs | evendb ops/s | evendb / best | evendb / rocksdb-default | evendb / rocksdb | evendb / rocksdb-universal |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| A | zipf-composite | rocksdb-universal | 150,000 | 15.00 | 90 | 700 | 300,000 | 2.00× | 3.75× | 3.00× | 2.00× |",
            "| C | zipf-composite | rocksdb-default | 100,000 | 10.00 | 90 | 700 | 50,000 | 0.50× | 0.50× | - | - |",
        ]
    );
    let text = report::table(&results);
    assert!(text.contains("evendb against the best RocksDB"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("A ") && l.contains("rocksdb-universal"))
        .unwrap();
    assert!(line.contains("2.00×") && line.contains("3.75×"), "{line}");
    let no_rocks: Vec<&RunResult> = refs
        .iter()
        .copied()
        .filter(|r| r.engine == "evendb")
        .collect();
    assert_eq!(best::markdown(&no_rocks), "");
    assert_eq!(best::text(&no_rocks), "");
}

#[test]
fn the_header_states_durability_compression_and_every_option() {
    let config = args(&["--sync"]).engine_config();
    let mut r = phase("rocksdb", "A", 1.0);
    r.engine_settings = RocksPlan::new(RocksProfile::Leveled, &config, 2).settings();
    let report = Report {
        provenance: Provenance::default().with_engine_config(&config),
        results: vec![r.clone(), r],
        failures: Vec::new(),
    };
    assert_eq!(report.provenance.durability_mode, "sync");
    assert_eq!(report.provenance.peer_compression, "none");
    let h = report::header(&report);
    assert!(h.contains("durability: sync"), "{h}");
    assert!(h.contains("WriteOptions::sync = true"), "{h}");
    assert!(h.contains("peer compression: none"), "{h}");
    assert_eq!(h.matches("rocksdb: rocksdb config").count(), 1, "{h}");
    assert!(h.contains("max_bytes_for_level_multiplier"), "{h}");
    let md = report::markdown::engine_configurations(&report.results);
    assert!(md.contains("| `write_buffer_size` | 32.0 MiB |"), "{md}");
}

#[test]
fn results_written_before_the_settings_existed_still_parse() {
    let mut old = serde_json::to_value(RunResult::default()).unwrap();
    let o = old.as_object_mut().unwrap();
    o.remove("engine_settings");
    o.remove("sync");
    let r: RunResult = serde_json::from_value(old).unwrap();
    assert!(r.engine_settings.is_empty() && !r.sync);
    let mut p = serde_json::to_value(Provenance::default()).unwrap();
    p.as_object_mut().unwrap().remove("durability_mode");
    let p: Provenance = serde_json::from_value(p).unwrap();
    assert_eq!(p.durability_mode, "");
    let job: EngineConfig = serde_json::from_str(r#"{"cache_bytes": null}"#).unwrap();
    assert!(!job.sync && job.peer_compression == PeerCompression::None);
}

#[test]
fn a_sync_run_records_its_mode_in_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let output = Command::new(env!("CARGO_BIN_EXE_evendb-bench"))
        .args([
            "--engine",
            "evendb",
            "--sync",
            "--workload",
            "A",
            "--records",
            "300",
            "--operations",
            "300",
            "--value-size",
            "100",
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
    assert!(stdout.contains("durability: sync"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("durability ") && l.contains("= Sync")),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["provenance"]["durability_mode"], "sync");
    for r in report["results"].as_array().unwrap() {
        assert_eq!(r["sync"], true);
        let durability = r["engine_settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["option"] == "durability")
            .unwrap();
        assert_eq!(durability["value"], "Sync");
    }
}

/// Each RocksDB configuration opens, serves the engine API and really has
/// the block cache of the budget.
#[cfg(feature = "rocksdb")]
#[test]
fn every_rocksdb_configuration_opens_and_uses_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    for sync in [false, true] {
        let mut config = args(&["--cache-size", "64M"]).engine_config();
        config.sync = sync;
        for kind in [
            EngineKind::Rocksdb,
            EngineKind::RocksdbUniversal,
            EngineKind::RocksdbDefault,
        ] {
            let path = dir.path().join(format!("{}-{sync}", kind.name()));
            let db = engines::open(kind, &path, &config).unwrap();
            db.put(b"a", b"1").unwrap();
            db.put(b"b", b"2").unwrap();
            db.delete(b"a").unwrap();
            assert_eq!(db.get(b"a").unwrap(), None);
            assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
            assert_eq!(db.scan(b"", None, 10).unwrap().records, 1);
            db.flush().unwrap();
            let stats: BTreeMap<String, u64> = db.stats().into_iter().collect();
            assert_eq!(stats["block_cache_capacity"], 64 * MIB, "{}", kind.name());
            assert_eq!(
                setting(&db.settings(), "WriteOptions::sync"),
                sync.to_string()
            );
        }
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_opens_in_both_durability_modes() {
    let dir = tempfile::tempdir().unwrap();
    for sync in [false, true] {
        let mut config = args(&["--cache-size", "64M"]).engine_config();
        config.sync = sync;
        let db = engines::open(
            EngineKind::Fjall,
            &dir.path().join(sync.to_string()),
            &config,
        )
        .unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"2").unwrap();
        db.delete(b"a").unwrap();
        assert_eq!(db.get(b"a").unwrap(), None);
        assert_eq!(db.scan(b"", None, 10).unwrap().records, 1);
        assert_eq!(setting(&db.settings(), "cache_size"), "64.0 MiB");
    }
}
