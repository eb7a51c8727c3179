//! Predefined suites.
//!
//! * `smoke`: every engine of the build, a 20,000-record store, five
//!   workloads of 2 s and a short stream: about a minute in all.
//! * `paper`: the matrix of the paper's §5 scaled to this machine. With a
//!   memory limit `M` (default 1 GiB) the YCSB data sets are 0.5·M, 2·M and
//!   8·M; on each, per engine, one load in key order and then 18 measured
//!   runs: C, B, A, F, E10, E100, E1000 under Zipf-simple and
//!   Zipf-composite, D under Latest-simple, and P under Zipf-simple,
//!   Zipf-composite and Uniform (E is E100). The analytics stream is
//!   ingested at 2·M, then queried. Runs are timed (warm-up a quarter of
//!   `--run-seconds`, default 8 s) so the total is predictable: per
//!   engine 3 sizes × 18 runs × 10 s + stream, plus the loads, about 10-13
//!   minutes on 2 cores, so about an hour for the five engines of a full
//!   build (evendb, the three RocksDB configurations, fjall); the estimate is
//!   printed up front. Pick engines with `--engine` to shorten it.
//!   `--memory-limit 0` sizes the data sets from 1 GiB but runs without a
//!   cgroup.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::cli::{job_for, run_jobs, run_spec, Args};
use crate::generator::Distribution;
use crate::report;
use crate::results::{Provenance, Report};
use crate::runner::{Limit, RunSpec};
use crate::workload::Workload;

/// Default memory limit of the paper suite.
pub const PAPER_MEMORY: u64 = 1 << 30;

/// Data set sizes of the paper suite, as multiples of the memory limit.
pub const PAPER_SIZES: [f64; 3] = [0.5, 2.0, 8.0];

/// The paper suite's runs on one YCSB data set.
pub fn paper_runs(args: &Args) -> Vec<RunSpec> {
    use Distribution::*;
    let mut plan: Vec<(Workload, Distribution)> = Vec::new();
    for w in [Workload::C, Workload::B, Workload::A, Workload::F] {
        plan.push((w, ZipfSimple));
        plan.push((w, ZipfComposite));
    }
    plan.push((Workload::D, Latest));
    for w in [Workload::E10, Workload::E100, Workload::E1000] {
        plan.push((w, ZipfSimple));
        plan.push((w, ZipfComposite));
    }
    for d in [ZipfSimple, ZipfComposite, Uniform] {
        plan.push((Workload::P, d));
    }
    plan.into_iter()
        .map(|(w, d)| timed(run_spec(args, w, Some(d)), args.run_seconds))
        .collect()
}

fn timed(mut spec: RunSpec, seconds: f64) -> RunSpec {
    spec.run = Limit::Seconds(seconds);
    spec.warmup = Limit::Seconds(seconds / 4.0);
    spec
}

/// Runs suite `name` and writes its folder.
pub fn run(args: &Args, name: &str) -> Result<()> {
    let mut args = args.clone();
    if args.engine == ["evendb"] {
        args.engine = vec!["all".to_string()];
    }
    let engines = args.engines()?;
    let out = args.out.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("results/{name}-{now}"))
    });
    std::fs::create_dir_all(&out)?;
    let record = (args.key_size + args.value_size) as u64;
    let started = Instant::now();
    let mut report = Report {
        provenance: Provenance::collect(String::new()).with_engine_config(&args.engine_config()),
        ..Report::default()
    };
    let mut sections: Vec<(String, u64)> = Vec::new();
    match name {
        "smoke" => {
            let records = 20_000;
            let specs: Vec<RunSpec> = [
                (Workload::P, Distribution::Uniform),
                (Workload::A, Distribution::ZipfSimple),
                (Workload::C, Distribution::ZipfComposite),
                (Workload::D, Distribution::Latest),
                (Workload::E100, Distribution::ZipfComposite),
            ]
            .into_iter()
            .map(|(w, d)| timed(run_spec(&args, w, Some(d)), 2.0))
            .collect();
            let stream = vec![timed(run_spec(&args, Workload::Stream, None), 2.0)];
            let mut jobs = Vec::new();
            for &e in &engines {
                jobs.push(job_for(&args, e, false, records, specs.clone(), "smoke"));
                jobs.push(job_for(
                    &args,
                    e,
                    true,
                    records,
                    stream.clone(),
                    "smoke-stream",
                ));
            }
            run_jobs(&args, jobs, &mut report)?;
            sections.push(("smoke".to_string(), records));
        }
        "paper" => {
            let memory = args.memory_cap().unwrap_or(PAPER_MEMORY);
            if args.memory_limit.is_none() {
                args.memory_limit = Some(memory);
            }
            let runs = paper_runs(&args);
            let per_run = args.run_seconds * 1.25;
            let estimate = engines.len() as f64
                * (PAPER_SIZES.len() as f64 * runs.len() as f64 * per_run + per_run)
                + engines.len() as f64 * (PAPER_SIZES.iter().sum::<f64>() + 2.0) * memory as f64
                    / 100e6;
            eprintln!(
                "paper suite: {} engine(s), memory limit {}, data sets {}; estimated {:.0} minutes (loads at ~100 MB/s)",
                engines.len(),
                crate::format::bytes(memory),
                PAPER_SIZES.iter().map(|f| crate::format::bytes((f * memory as f64) as u64)).collect::<Vec<_>>().join(" / "),
                estimate / 60.0
            );
            for factor in PAPER_SIZES {
                let records = (factor * memory as f64) as u64 / record;
                let tag = format!("{factor}x");
                let jobs = engines
                    .iter()
                    .map(|&e| job_for(&args, e, false, records, runs.clone(), &tag))
                    .collect();
                let before = report.results.len();
                run_jobs(&args, jobs, &mut report)?;
                for r in &mut report.results[before..] {
                    r.engine_stats.insert(
                        "bench_dataset_factor_x10".to_string(),
                        (factor * 10.0) as u64,
                    );
                }
                sections.push((tag, records));
            }
            let records = 2 * memory
                / (crate::generator::stream::STREAM_KEY_SIZE as u64 + args.value_size as u64);
            let stream = vec![timed(
                run_spec(&args, Workload::Stream, None),
                args.run_seconds,
            )];
            let jobs = engines
                .iter()
                .map(|&e| job_for(&args, e, true, records, stream.clone(), "stream"))
                .collect();
            run_jobs(&args, jobs, &mut report)?;
        }
        other => bail!("unknown suite `{other}`"),
    }
    let elapsed = started.elapsed().as_secs_f64();
    report::write_json(&out.join("results.json"), &report)?;
    report::write_timeline_csv(&out.join("timelines.csv"), &report.results)?;
    let md = report::markdown::suite(name, &args, &report, &sections, elapsed, &out)?;
    std::fs::write(out.join("report.md"), md)?;
    print!("{}", report::header(&report));
    print!("{}", report::table(&report.results));
    println!(
        "\n{name} suite done in {:.0} s; report in {}",
        elapsed,
        out.join("report.md").display()
    );
    report.check_failures()
}
