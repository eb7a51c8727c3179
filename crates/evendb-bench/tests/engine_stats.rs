//! Per-phase engine counters and the tables of where evendb served its gets.

use std::collections::BTreeMap;

use evendb_bench::report::{self, markdown, Served};
use evendb_bench::results::{counter_deltas, is_counter, RunResult};

fn stats(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn deltas_difference_counters_and_drop_gauges() {
    let before = stats(&[
        ("gets", 1_000),
        ("gets_munk", 600),
        ("munk_loads", 7),
        ("split_max_micros", 900),
        ("memory_munks", 5 << 20),
        ("munks", 40),
    ]);
    let after = stats(&[
        ("gets", 1_500),
        ("gets_munk", 900),
        ("munk_loads", 7),
        ("munk_evictions", 3),
        ("split_max_micros", 1_200),
        ("memory_munks", 4 << 20),
        ("munks", 38),
        ("bench_insert_overflows", 2),
        ("estimate_num_keys", 10_000),
    ]);
    let d = counter_deltas(&before, &after);
    assert_eq!(
        d,
        stats(&[
            ("gets", 500),
            ("gets_munk", 300),
            // Unchanged counters stay, as zero.
            ("munk_loads", 0),
            // Missing at the start: counts from zero.
            ("munk_evictions", 3),
            ("bench_insert_overflows", 2),
        ])
    );
}

#[test]
fn a_counter_that_went_back_gives_zero_not_a_wrap() {
    let d = counter_deltas(&stats(&[("puts", 10)]), &stats(&[("puts", 4)]));
    assert_eq!(d, stats(&[("puts", 0)]));
}

/// The name rule agrees with the kinds evendb declares (its Prometheus form
/// types every figure), so a new evendb figure that the rule gets wrong
/// fails here.
#[test]
fn the_counter_rule_matches_the_kinds_evendb_declares() {
    let s = evendb::Stats::default();
    let text = s.to_prometheus("");
    for (name, _) in s.fields() {
        let base = match name.strip_suffix("_micros") {
            Some(b) => format!("{b}_seconds"),
            None => name.to_string(),
        };
        let counter = text.contains(&format!("# TYPE {base}_total counter\n"));
        let gauge = text.contains(&format!("# TYPE {base} gauge\n"));
        assert!(counter != gauge, "{name}: no single kind in the export");
        assert_eq!(is_counter(name), counter, "{name}");
    }
    for peer_gauge in [
        "estimate_num_keys",
        "total_sst_files_size",
        "num_running_compactions",
        "block_cache_capacity",
        "cur_size_all_mem_tables",
        "tables",
        "l0_tables",
        "bench_dataset_factor_x10",
    ] {
        assert!(!is_counter(peer_gauge), "{peer_gauge}");
    }
    assert!(is_counter("compactions_completed"));
}

#[test]
fn results_without_per_phase_counters_still_parse() {
    let mut old = serde_json::to_value(RunResult::default()).unwrap();
    old.as_object_mut().unwrap().remove("engine_stats_delta");
    let r: RunResult = serde_json::from_value(old).unwrap();
    assert!(r.engine_stats_delta.is_empty());
    assert_eq!(Served::of(&r), None);
}

fn phase(engine: &str, workload: &str, dist: &str, delta: &[(&str, u64)]) -> RunResult {
    RunResult {
        engine: engine.to_string(),
        workload: workload.to_string(),
        distribution: dist.to_string(),
        bytes_read: 3 << 20,
        engine_stats: stats(&[("gets", 999_999)]),
        engine_stats_delta: stats(delta),
        ..RunResult::default()
    }
}

fn sample() -> Vec<RunResult> {
    vec![
        phase("evendb", "load", "sequential", &[("puts", 5_000)]),
        phase(
            "evendb",
            "C",
            "zipf-simple",
            &[
                ("gets", 20_000),
                ("gets_munk", 15_000),
                ("gets_row_cache", 3_000),
                ("gets_log", 500),
                ("gets_table", 1_000),
                ("gets_absent", 500),
                ("munk_loads", 12),
                ("munk_evictions", 1_234),
            ],
        ),
        phase("rocksdb", "C", "zipf-simple", &[]),
        phase(
            "evendb",
            "E100",
            "zipf-composite",
            &[
                ("scans", 900),
                ("scan_chunks_munk", 300),
                ("scan_chunks_funk", 900),
            ],
        ),
    ]
}

#[test]
fn markdown_table_has_one_row_per_evendb_phase_with_gets_or_scans() {
    let results = sample();
    let refs: Vec<&RunResult> = results.iter().collect();
    let table = markdown::served_table(&refs);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows,
        [
            "| workload | distribution | gets | % munk | % row cache | % log | % table | % absent | scan chunks | scan chunks from munks % | munk loads | munk evictions | device read |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| C | zipf-simple | 20,000 | 75.0 | 15.0 | 2.5 | 5.0 | 2.5 | 0 | - | 12 | 1,234 | 3.0 MiB |",
            "| E100 | zipf-composite | 0 | - | - | - | - | - | 1,200 | 25.0 | 0 | 0 | 3.0 MiB |",
        ]
    );
    assert!(table.contains("Where evendb's gets were served"));
    let none: Vec<&RunResult> = results.iter().filter(|r| r.workload == "load").collect();
    assert_eq!(markdown::served_table(&none), "");
}

#[test]
fn cli_table_lists_where_evendb_served_its_gets() {
    let out = report::table(&sample());
    let (_, served) = out
        .split_once("evendb gets served (munk / row cache / log / table)")
        .expect("no gets-served table");
    let rows: Vec<Vec<&str>> = served
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec![
                "C",
                "zipf-simple",
                "20,000",
                "75.0",
                "15.0",
                "2.5",
                "5.0",
                "2.5",
                "0",
                "-",
                "12",
                "1,234"
            ],
            vec![
                "E100",
                "zipf-composite",
                "0",
                "-",
                "-",
                "-",
                "-",
                "-",
                "1,200",
                "25.0",
                "0",
                "0"
            ],
        ]
    );
    let rocksdb_only: Vec<RunResult> = sample()
        .into_iter()
        .filter(|r| r.engine == "rocksdb")
        .collect();
    assert!(!report::table(&rocksdb_only).contains("gets served"));
}

/// An evendb phase whose gauges give memory by category.
fn with_memory(workload: &str, peak_rss: u64) -> RunResult {
    let mib = |n: u64| n << 20;
    let mut gauges = vec![
        ("memory_budget", mib(64)),
        ("memory_used", mib(60)),
        ("memory_peak", mib(63)),
        ("memory_munks", mib(30)),
        ("memory_row_cache", mib(4)),
        ("memory_filters", mib(12)),
        ("memory_indexes", mib(9)),
        ("memory_write_buffers", mib(1)),
        ("memory_background", mib(4)),
    ];
    // Results written before `memory_other` existed lack it (E100 here).
    if workload != "E100" {
        gauges.push(("memory_other", mib(2)));
    }
    RunResult {
        engine: "evendb".to_string(),
        workload: workload.to_string(),
        distribution: "zipf-composite".to_string(),
        peak_rss_bytes: mib(peak_rss),
        engine_stats: stats(&gauges),
        ..RunResult::default()
    }
}

#[test]
fn memory_tables_show_each_category_and_what_the_process_held_beyond_them() {
    let results = vec![
        with_memory("P", 100),
        with_memory("E100", 110),
        RunResult {
            engine: "rocksdb".to_string(),
            workload: "P".to_string(),
            ..with_memory("P", 90)
        },
        // An older result without the gauges has no row.
        phase("evendb", "C", "zipf-simple", &[("gets", 1)]),
    ];
    let refs: Vec<&RunResult> = results.iter().collect();
    let table = markdown::memory_table(&refs);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows[2..],
        [
            "| P | zipf-composite | 64.0 MiB | 60.0 MiB | 63.0 MiB | 30.0 MiB | 4.0 MiB | 12.0 MiB | 9.0 MiB | 1.0 MiB | 4.0 MiB | 2.0 MiB | 100.0 MiB | 37.0 MiB |",
            "| E100 | zipf-composite | 64.0 MiB | 60.0 MiB | 63.0 MiB | 30.0 MiB | 4.0 MiB | 12.0 MiB | 9.0 MiB | 1.0 MiB | 4.0 MiB | - | 110.0 MiB | 47.0 MiB |",
        ]
    );
    let text = report::table(&results);
    let (_, memory) = text
        .split_once("evendb memory at the end of each phase")
        .expect("no memory table");
    let p: Vec<&str> = memory
        .lines()
        .nth(2)
        .expect("a row")
        .split_whitespace()
        .collect();
    assert_eq!(p[0], "P");
    assert_eq!(p[p.len() - 2..], ["37.0", "MiB"]);
    assert_eq!(memory.lines().filter(|l| l.starts_with("E100")).count(), 1);
    assert_eq!(markdown::memory_table(&refs[2..]), "");
}
