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
//! * `write-path`: the runs of the write-path targets ([`write_path::RUNS`])
//!   at memory caps of 256 MiB and 1 GiB (only the cap of `--memory-limit`
//!   when given), timed like the paper suite; about 5-6 minutes per engine.
//!
//! A suite is planned first ([`steps`]): the plan and its estimated time are
//! printed before anything runs, and `--dry-run` stops there.

pub mod sizing;
pub mod write_path;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::cli::{describe_job, job_for, run_jobs, run_spec, Args};
use crate::engines::EngineKind;
use crate::format;
use crate::generator::Distribution;
use crate::report;
use crate::report::markdown::{Detail, Section};
use crate::results::{Provenance, Report};
use crate::runner::{Job, RunSpec};
use crate::workload::Workload;
use sizing::{dataset_records, estimate_seconds, scaled, PAPER_MEMORY, PAPER_SIZES};

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
        .map(|(w, d)| run_spec(args, w, Some(d)).timed(args.run_seconds))
        .collect()
}

/// One step of a suite: one job per engine on the same kind of data set,
/// run one after the other under the same arguments.
#[derive(Clone, Debug)]
pub struct Step {
    /// The arguments the jobs run under (memory limit, engine budget).
    pub args: Args,
    pub jobs: Vec<Job>,
    /// The report section of the step's results, whose label they carry;
    /// `None` for the smoke and paper suites' analytics stream, which the
    /// report shows on its own.
    pub section: Option<Section>,
}

impl Step {
    fn new(
        args: &Args,
        engines: &[EngineKind],
        stream: bool,
        records: u64,
        runs: &[RunSpec],
        tag: &str,
    ) -> Step {
        Step {
            args: args.clone(),
            jobs: engines
                .iter()
                .map(|&e| job_for(args, e, stream, records, runs.to_vec(), tag))
                .collect(),
            section: None,
        }
    }

    fn section(mut self, label: &str, heading: String, detail: Option<Detail>) -> Step {
        self.section = Some(Section {
            label: label.to_string(),
            heading,
            detail,
        });
        self
    }
}

/// The steps of suite `name` for `engines`, in order; nothing runs.
pub fn steps(args: &Args, name: &str, engines: &[EngineKind]) -> Result<Vec<Step>> {
    let record = (args.key_size + args.value_size) as u64;
    let dataset_heading = |tag: &str, records: u64| {
        format!(
            "Data set {tag}: {} records ({})",
            format::count(records as f64),
            format::bytes(records * record)
        )
    };
    let mut steps = Vec::new();
    match name {
        "smoke" => {
            let records = scaled(20_000, args.suite_scale);
            let specs: Vec<RunSpec> = [
                (Workload::P, Distribution::Uniform),
                (Workload::A, Distribution::ZipfSimple),
                (Workload::C, Distribution::ZipfComposite),
                (Workload::D, Distribution::Latest),
                (Workload::E100, Distribution::ZipfComposite),
            ]
            .into_iter()
            .map(|(w, d)| run_spec(args, w, Some(d)).timed(2.0))
            .collect();
            let stream = [run_spec(args, Workload::Stream, None).timed(2.0)];
            steps.push(
                Step::new(args, engines, false, records, &specs, "smoke").section(
                    "smoke",
                    dataset_heading("smoke", records),
                    None,
                ),
            );
            steps.push(Step::new(
                args,
                engines,
                true,
                records,
                &stream,
                "smoke-stream",
            ));
        }
        "paper" => {
            let mut args = args.clone();
            let memory = args.memory_cap().unwrap_or(PAPER_MEMORY);
            if args.memory_limit.is_none() {
                args.memory_limit = Some(memory);
            }
            let runs = paper_runs(&args);
            for factor in PAPER_SIZES {
                let records = scaled(dataset_records(factor, memory, record), args.suite_scale);
                let tag = format!("{factor}x");
                steps.push(
                    Step::new(&args, engines, false, records, &runs, &tag).section(
                        &tag,
                        dataset_heading(&tag, records),
                        None,
                    ),
                );
            }
            let stream_record =
                (crate::generator::stream::STREAM_KEY_SIZE + args.value_size) as u64;
            let records = scaled(
                dataset_records(2.0, memory, stream_record),
                args.suite_scale,
            );
            let stream = [run_spec(&args, Workload::Stream, None).timed(args.run_seconds)];
            steps.push(Step::new(&args, engines, true, records, &stream, "stream"));
        }
        "write-path" => {
            for run in write_path::plan(args) {
                let run_args = run.args(args);
                let label = run.label();
                let tag = format!("wp-{}", report::slug(&label));
                let detail = Detail {
                    budget: run_args.engine_config().budget(),
                    memory_limit: run_args.memory_cap(),
                };
                let step = Step::new(
                    &run_args,
                    engines,
                    run.stream,
                    run.records,
                    &run.specs,
                    &tag,
                );
                steps.push(step.section(&label, run.heading(), Some(detail)));
            }
        }
        other => bail!("unknown suite `{other}`"),
    }
    Ok(steps)
}

/// The plan as printed before a suite runs: one line per step, every job
/// of it, and the estimated total.
pub fn describe(name: &str, engines: &[EngineKind], steps: &[Step]) -> String {
    let jobs: usize = steps.iter().map(|s| s.jobs.len()).sum();
    let total: f64 = steps
        .iter()
        .flat_map(|s| &s.jobs)
        .map(estimate_seconds)
        .sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name} suite: {} engine(s) ({}), {} data sets, {jobs} jobs; estimated {} (loads at ~{:.0} MB/s or ~{:.0}K records/s, whichever is slower)",
        engines.len(),
        engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
        steps.len(),
        if total < 120.0 {
            format!("{total:.0} s")
        } else {
            format!("{:.0} minutes", total / 60.0)
        },
        sizing::LOAD_BYTES_PER_SEC / 1e6,
        sizing::LOAD_RECORDS_PER_SEC / 1e3,
    );
    for step in steps {
        let label = step.section.as_ref().map_or("stream", |s| s.label.as_str());
        let seconds: f64 = step.jobs.iter().map(estimate_seconds).sum();
        let _ = writeln!(
            out,
            "  {label}: memory limit {}, budget {}, ~{:.0} s",
            step.args
                .memory_cap()
                .map_or("none".to_string(), format::bytes),
            format::bytes(step.args.engine_config().budget()),
            seconds
        );
        for job in &step.jobs {
            let _ = writeln!(out, "    {}", describe_job(job));
        }
    }
    out
}

/// Runs suite `name` and writes its folder; with `--dry-run` only prints
/// the plan.
pub fn run(args: &Args, name: &str) -> Result<()> {
    let engines = args.engines()?;
    let steps = steps(args, name, &engines)?;
    eprint!("{}", describe(name, &engines, &steps));
    if args.dry_run {
        return Ok(());
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("results/{name}-{now}"))
    });
    std::fs::create_dir_all(&out)?;
    let started = Instant::now();
    let mut report = Report {
        provenance: Provenance::collect(String::new()).with_engine_config(&args.engine_config()),
        ..Report::default()
    };
    let mut sections = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for step in steps {
        let before = report.results.len();
        run_jobs(&step.args, step.jobs, &mut report)?;
        // Steps under different caps leave different notes; keep each once.
        let note = std::mem::take(&mut report.provenance.memory_limit_note);
        if !note.is_empty() && !notes.contains(&note) {
            notes.push(note);
        }
        if let Some(section) = step.section {
            for r in &mut report.results[before..] {
                r.dataset = Some(section.label.clone());
            }
            sections.push(section);
        }
    }
    report.provenance.memory_limit_note = notes.join("; ");
    let elapsed = started.elapsed().as_secs_f64();
    report::write_json(&out.join("results.json"), &report)?;
    report::write_timeline_csv(&out.join("timelines.csv"), &report.results)?;
    let md = report::markdown::suite(name, args, &report, &sections, elapsed, &out)?;
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
