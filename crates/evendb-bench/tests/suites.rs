//! The suites' plans: what `--suite write-path` (and the paper suite it
//! borrows its sizing from) would run, checked without running anything.

mod common;

use clap::Parser;
use common::latency;
use evendb_bench::cli::Args;
use evendb_bench::engines::EngineKind;
use evendb_bench::generator::Distribution;
use evendb_bench::report::markdown::{self, per_engine_table, Detail, Section};
use evendb_bench::results::{Report, RunResult};
use evendb_bench::runner::Limit;
use evendb_bench::suite::sizing::{dataset_records, estimate_seconds, PAPER_MEMORY};
use evendb_bench::suite::write_path::{self, Records, CAPS, RUNS};
use evendb_bench::suite::{self, Step};
use evendb_bench::workload::Workload;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn args(extra: &[&str]) -> Args {
    Args::try_parse_from(
        ["evendb-bench", "--suite", "write-path"]
            .into_iter()
            .chain(extra.iter().copied()),
    )
    .unwrap()
}

fn write_path_steps(extra: &[&str]) -> Vec<Step> {
    suite::steps(&args(extra), "write-path", &[EngineKind::Evendb]).unwrap()
}

/// What one step runs: label, memory cap, budget, stream or not, records,
/// value size, then each phase's workload and distribution.
type Shape = (
    String,
    Option<u64>,
    u64,
    bool,
    u64,
    usize,
    Vec<(Workload, Distribution)>,
);

fn shape(step: &Step) -> Shape {
    let job = &step.jobs[0];
    (
        step.section.as_ref().unwrap().label.clone(),
        step.args.memory_cap(),
        job.config.budget(),
        job.dataset.stream,
        job.dataset.records,
        job.dataset.value_size,
        job.runs
            .iter()
            .map(|r| (r.workload, r.distribution))
            .collect(),
    )
}

fn expected(cap: u64, short: &str) -> Vec<Shape> {
    use Distribution::ZipfComposite as Z;
    let two_x = if cap == GIB { 2_638_186 } else { 659_546 };
    let phases = |ws: &[Workload]| ws.iter().map(|&w| (w, Z)).collect::<Vec<_>>();
    vec![
        (
            format!("{short} run 1"),
            Some(cap),
            cap / 4,
            false,
            2_638_186,
            800,
            phases(&[Workload::P, Workload::E100]),
        ),
        (
            format!("{short} run 2"),
            Some(cap),
            cap / 4,
            true,
            5_000_000,
            800,
            // The stream's distribution is its own; the report says
            // apps-heavy-tail whatever the spec carries.
            vec![(Workload::Stream, Workload::Stream.default_distribution())],
        ),
        (
            format!("{short} run 3"),
            Some(cap),
            cap / 4,
            false,
            4_000_000,
            100,
            phases(&[Workload::P, Workload::C]),
        ),
        (
            format!("{short} run 4"),
            Some(cap),
            cap / 4,
            false,
            two_x,
            800,
            phases(&[Workload::E100, Workload::E1000]),
        ),
    ]
}

#[test]
fn write_path_runs_every_target_at_both_caps_without_a_memory_limit() {
    let steps = write_path_steps(&[]);
    let shapes: Vec<Shape> = steps.iter().map(shape).collect();
    let mut want = expected(256 * MIB, "256M");
    want.extend(expected(GIB, "1G"));
    assert_eq!(shapes, want);
    assert_eq!(CAPS, [256 * MIB, GIB]);
    for step in &steps {
        let job = &step.jobs[0];
        assert_eq!(job.threads, 2, "the targets were set with 2 threads");
        assert_eq!(job.dataset.key_size, 14);
        let detail = step.section.as_ref().unwrap().detail.unwrap();
        assert_eq!(detail.budget, job.config.budget());
        assert_eq!(detail.memory_limit, step.args.memory_cap());
    }
}

#[test]
fn an_explicit_memory_limit_runs_only_that_cap() {
    let shapes: Vec<Shape> = write_path_steps(&["--memory-limit", "1G"])
        .iter()
        .map(shape)
        .collect();
    assert_eq!(shapes, expected(GIB, "1G"));
    let shapes: Vec<Shape> = write_path_steps(&["--memory-limit", "256M"])
        .iter()
        .map(shape)
        .collect();
    assert_eq!(shapes, expected(256 * MIB, "256M"));
    // No cgroup: sized for 1 GiB as the paper suite is, budget evendb's own.
    let steps = write_path_steps(&["--memory-limit", "0"]);
    assert_eq!(steps.len(), RUNS.len());
    assert!(steps.iter().all(|s| s.args.memory_cap().is_none()));
    assert_eq!(steps[3].jobs[0].dataset.records, 2_638_186);
    assert_eq!(
        write_path::caps(&args(&["--memory-limit", "0"])),
        [(PAPER_MEMORY, 0)]
    );
}

#[test]
fn the_scans_at_twice_memory_are_sized_as_the_paper_suites_2x_data_set() {
    assert_eq!(RUNS[3].records, Records::TimesCap(2.0));
    for cap in CAPS {
        let steps = write_path_steps(&["--memory-limit", &format!("{}M", cap / MIB)]);
        assert_eq!(
            steps[3].jobs[0].dataset.records,
            dataset_records(2.0, cap, 814)
        );
    }
    // The same rule sizes the paper suite's 2x data set...
    let paper = suite::steps(
        &args(&["--memory-limit", "1G"]),
        "paper",
        &[EngineKind::Evendb],
    )
    .unwrap();
    let two_x = paper
        .iter()
        .find(|s| s.section.as_ref().is_some_and(|s| s.label == "2x"))
        .unwrap();
    assert_eq!(two_x.jobs[0].dataset.records, 2_638_186);
    // ...and 8x of 256 MiB is 2x of 1 GiB: run 1's 2,638,186 records.
    assert_eq!(dataset_records(8.0, 256 * MIB, 814), 2_638_186);
    assert_eq!(dataset_records(2.0, 256 * MIB, 814), 659_546);
}

#[test]
fn every_phase_is_timed_by_run_seconds_with_a_quarter_of_warm_up() {
    for (flags, seconds) in [(&[][..], 8.0), (&["--run-seconds", "10"][..], 10.0)] {
        for step in write_path_steps(flags) {
            for run in &step.jobs[0].runs {
                assert_eq!(run.run, Limit::Seconds(seconds));
                assert_eq!(run.warmup, Limit::Seconds(seconds / 4.0));
            }
        }
    }
}

#[test]
fn every_listed_engine_runs_every_step_in_a_directory_of_its_own() {
    let engines = [
        EngineKind::Evendb,
        EngineKind::Rocksdb,
        EngineKind::RocksdbUniversal,
    ];
    let steps = suite::steps(&args(&[]), "write-path", &engines).unwrap();
    let mut dirs = Vec::new();
    for step in &steps {
        let kinds: Vec<EngineKind> = step.jobs.iter().map(|j| j.engine).collect();
        assert_eq!(kinds, engines);
        dirs.extend(step.jobs.iter().map(|j| j.dir.clone()));
    }
    let mut unique = dirs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), dirs.len(), "no two jobs share a store");
}

#[test]
fn suite_scale_shrinks_every_record_count_for_a_quick_check() {
    let steps = write_path_steps(&["--suite-scale", "0.001"]);
    let records: Vec<u64> = steps.iter().map(|s| s.jobs[0].dataset.records).collect();
    assert_eq!(
        records,
        [2_638, 5_000, 4_000, 660, 2_638, 5_000, 4_000, 2_638]
    );
}

#[test]
fn the_plan_and_its_estimate_are_printed_without_running_anything() {
    let steps = write_path_steps(&[]);
    let total: f64 = steps
        .iter()
        .flat_map(|s| &s.jobs)
        .map(estimate_seconds)
        .sum();
    assert!(
        (240.0..600.0).contains(&total),
        "about 5-6 minutes per engine, not {total} s"
    );
    let text = suite::describe("write-path", &[EngineKind::Evendb], &steps);
    assert!(
        text.starts_with(
            "write-path suite: 1 engine(s) (evendb), 8 data sets, 8 jobs; estimated 6 minutes"
        ),
        "{text}"
    );
    assert!(
        text.contains("256M run 4: memory limit 256.0 MiB, budget 64.0 MiB"),
        "{text}"
    );
    assert!(
        text.contains("evendb: 4,000,000 records of 114 B then P/zipf-composite, C/zipf-composite"),
        "{text}"
    );
    assert!(
        text.contains("evendb: 5,000,000 stream events of 816 B then stream"),
        "{text}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let out_arg = out.to_str().unwrap();
    suite::run(&args(&["--dry-run", "--out", out_arg]), "write-path").unwrap();
    assert!(!out.exists(), "a dry run writes nothing");
}

fn phase(engine: &str, workload: &str, ops: f64, ops_latency: &[(&str, f64, f64)]) -> RunResult {
    RunResult {
        engine: engine.to_string(),
        workload: workload.to_string(),
        distribution: "zipf-composite".to_string(),
        throughput_ops_per_sec: ops,
        write_amplification: Some(1.5),
        peak_rss_bytes: 300 * MIB,
        latency_us: ops_latency
            .iter()
            .map(|&(op, p, m)| (op.to_string(), latency(p, m)))
            .collect(),
        dataset: Some("256M run 1".to_string()),
        ..RunResult::default()
    }
}

#[test]
fn the_write_path_table_shows_ratio_tails_and_rss_beside_the_budget() {
    let results = [
        phase("evendb", "P", 300.0, &[("put", 900.0, 400_000.0)]),
        phase("rocksdb", "P", 200.0, &[("put", 80.0, 9_000.0)]),
        phase("rocksdb-universal", "P", 150.0, &[("put", 70.0, 8_000.0)]),
        phase(
            "evendb",
            "E100",
            50.0,
            &[("scan", 2_000.0, 30_000.0), ("insert", 40.0, 5_000.0)],
        ),
        phase(
            "rocksdb",
            "E100",
            100.0,
            &[("scan", 1_000.0, 20_000.0), ("insert", 30.0, 700.0)],
        ),
    ];
    let refs: Vec<&RunResult> = results.iter().collect();
    let detail = Detail {
        budget: 64 * MIB,
        memory_limit: Some(256 * MIB),
    };
    let md = per_engine_table(&refs, &detail);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows,
        [
            "| engine | workload | distribution | ops/s | ÷ best RocksDB | write amp | write p99.9 µs | worst write µs | read p99.9 µs | worst read µs | peak RSS | budget | memory limit |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| evendb | P | zipf-composite | 300 | 1.50× | 1.50 | 900 | 400000 | - | - | 300.0 MiB | 64.0 MiB | 256.0 MiB |",
            "| rocksdb | P | zipf-composite | 200 | 1.00× | 1.50 | 80 | 9000 | - | - | 300.0 MiB | 64.0 MiB | 256.0 MiB |",
            "| rocksdb-universal | P | zipf-composite | 150 | 0.75× | 1.50 | 70 | 8000 | - | - | 300.0 MiB | 64.0 MiB | 256.0 MiB |",
            "| evendb | E100 | zipf-composite | 50 | 0.50× | 1.50 | 40 | 5000 | 2000 | 30000 | 300.0 MiB | 64.0 MiB | 256.0 MiB |",
            "| rocksdb | E100 | zipf-composite | 100 | 1.00× | 1.50 | 30 | 700 | 1000 | 20000 | 300.0 MiB | 64.0 MiB | 256.0 MiB |",
        ]
    );
}

#[test]
fn each_write_path_section_shows_its_own_runs_with_every_phases_timeline() {
    let steps = write_path_steps(&[]);
    let sections: Vec<Section> = steps.iter().filter_map(|s| s.section.clone()).collect();
    let mut results = Vec::new();
    for (label, ops) in [("256M run 1", 100.0), ("1G run 1", 900.0)] {
        for (engine, share) in [("evendb", 1.0), ("rocksdb", 0.5)] {
            for workload in ["load", "P", "E100"] {
                let mut r = phase(engine, workload, ops * share, &[("put", 50.0, 900.0)]);
                if workload == "load" {
                    r.distribution = "sequential".to_string();
                }
                r.dataset = Some(label.to_string());
                r.timeline = vec![1, 2, 3];
                results.push(r);
            }
        }
    }
    let report = Report {
        results,
        ..Report::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let md = markdown::suite(
        "write-path",
        &args(&[]),
        &report,
        &sections,
        1.0,
        dir.path(),
    )
    .unwrap();
    let small = md
        .split("\n## ")
        .find(|s| s.starts_with("Run 1 at 256.0 MiB"))
        .unwrap();
    assert!(
        small.starts_with("Run 1 at 256.0 MiB: 2,638,186 records of 814 B (2.0 GiB, 8.0× the cap), then P, E100\n\n**Each engine, phase by phase.**"),
        "{small}"
    );
    assert!(
        small.contains("| evendb | P | zipf-composite | 100 | 2.00× |"),
        "{small}"
    );
    assert!(
        !small.contains("| 900 | 2.00× |"),
        "the 1 GiB run stays in its own section"
    );
    for plot in ["load-sequential", "p-zipf-composite", "e100-zipf-composite"] {
        let file = format!("timeline-{plot}-256m-run-1.svg");
        assert!(
            small.contains(&format!("![{file}]({file})")),
            "{plot}: {small}"
        );
        assert!(dir.path().join(&file).exists());
    }
    let big = md
        .split("\n## ")
        .find(|s| s.starts_with("Run 1 at 1.0 GiB"))
        .unwrap();
    assert!(
        big.contains("| evendb | P | zipf-composite | 900 | 2.00× |"),
        "{big}"
    );
    assert!(
        big.contains("| 256.0 MiB | 1.0 GiB |"),
        "budget beside the cap: {big}"
    );
}

#[test]
fn the_smoke_and_paper_suites_keep_their_data_sets() {
    let engines = [EngineKind::Evendb];
    let label = |s: &Step| s.section.as_ref().map(|s| s.label.clone());
    let smoke = suite::steps(&args(&[]), "smoke", &engines).unwrap();
    let shape: Vec<(Option<String>, bool, u64, usize)> = smoke
        .iter()
        .map(|s| {
            (
                label(s),
                s.jobs[0].dataset.stream,
                s.jobs[0].dataset.records,
                s.jobs[0].runs.len(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (Some("smoke".to_string()), false, 20_000, 5),
            (None, true, 20_000, 1)
        ]
    );

    let paper = suite::steps(&args(&[]), "paper", &engines).unwrap();
    let shape: Vec<(Option<String>, Option<u64>, u64, usize)> = paper
        .iter()
        .map(|s| {
            (
                label(s),
                s.args.memory_cap(),
                s.jobs[0].dataset.records,
                s.jobs[0].runs.len(),
            )
        })
        .collect();
    let some = |l: &str| Some(l.to_string());
    assert_eq!(
        shape,
        [
            (some("0.5x"), Some(GIB), 659_546, 18),
            (some("2x"), Some(GIB), 2_638_186, 18),
            (some("8x"), Some(GIB), 10_552_745, 18),
            (None, Some(GIB), 2 * GIB / 816, 1),
        ]
    );
    assert!(suite::steps(&args(&[]), "nightly", &engines).is_err());
}

#[test]
fn a_suite_runs_the_engines_listed_and_every_engine_of_the_build_by_default() {
    assert_eq!(args(&[]).engines().unwrap(), EngineKind::all_available());
    assert_eq!(
        args(&["--engine", "evendb"]).engines().unwrap(),
        [EngineKind::Evendb]
    );
    let single = Args::try_parse_from(["evendb-bench"]).unwrap();
    assert_eq!(single.engines().unwrap(), [EngineKind::Evendb]);
}
