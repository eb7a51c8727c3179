//! Per-phase engine counters.

use std::collections::BTreeMap;

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
}
