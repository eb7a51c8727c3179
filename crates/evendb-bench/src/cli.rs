//! Command line: its arguments, the jobs they make, and single runs (the
//! suites are in the `suite` module).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;

use crate::engines::{EngineConfig, EngineKind, EvendbCompression, PeerCompression};
use crate::generator::{Distribution, ValueKind, ZipfItems};
use crate::orchestrate::{run_in_child, LimitNote};
use crate::report;
use crate::results::{Provenance, Report, RunResult};
use crate::runner::{DatasetSpec, Job, Limit, RunSpec};
use crate::workload::Workload;

/// Benchmarks evendb (and optionally RocksDB and fjall) with YCSB workloads,
/// the EvenDB paper's additions and an analytics event stream.
#[derive(Parser, Debug, Clone)]
#[command(name = "evendb-bench", version, about, long_about = None)]
pub struct Args {
    /// Engines to run, comma-separated: evendb, rocksdb (benchmark.sh's
    /// leveled configuration), rocksdb-universal, rocksdb-default, fjall, or
    /// `all` = every engine in this build [default: evendb; with --suite,
    /// all].
    #[arg(long, value_delimiter = ',')]
    pub engine: Vec<String>,
    /// Make every acknowledged write durable in every engine (evendb
    /// Durability::Sync, RocksDB WriteOptions::sync, fjall SyncData per
    /// write); by default none syncs before acknowledging.
    #[arg(long)]
    pub sync: bool,
    /// Compression of the peers' tables: `none`, `lz4` (RocksDB: LZ4 on
    /// every level; fjall: LZ4 data blocks on every level, journal
    /// uncompressed: what evendb does by default) or `recommended`
    /// (RocksDB: LZ4, ZSTD at the bottommost level; fjall: its default).
    #[arg(long, value_enum, default_value = "none")]
    pub peer_compression: PeerCompression,
    /// Compression of evendb's table and sorted-run blocks: `lz4`
    /// (evendb's default) or `none`. Logs appended by puts are never
    /// compressed.
    #[arg(long, value_enum, default_value = "lz4")]
    pub evendb_compression: EvendbCompression,
    /// Workloads to run in order on one loaded store, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "A")]
    pub workload: Vec<Workload>,
    /// Key distribution (default: the workload's YCSB default).
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// Zipfian constant θ.
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
    /// Items of the Zipfian behind Zipf-simple: YCSB's 10^10, or the record
    /// count as in the C++ YCSB the paper used.
    #[arg(long, value_enum, default_value = "ycsb")]
    pub zipf_items: ZipfItems,
    /// Records to load (stream: events to ingest).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Size of the data set to load instead of --records, e.g. 2G.
    #[arg(long, value_parser = crate::format::parse_size)]
    pub dataset_size: Option<u64>,
    /// Measured operations per workload.
    #[arg(long, default_value_t = 100_000)]
    pub operations: u64,
    /// Measure for this many seconds instead of --operations.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Warm-up (reads, not measured) in operations; default a tenth of the run.
    #[arg(long)]
    pub warmup_operations: Option<u64>,
    /// Warm-up in seconds instead.
    #[arg(long)]
    pub warmup_seconds: Option<f64>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Write in atomic write batches of N operations: each worker gathers
    /// the writes of its op stream (load, puts of P, updates, inserts, the
    /// puts of read-modify-writes, the stream's events) and writes every N
    /// of them as one batch (evendb WriteBatch, RocksDB WriteBatch, fjall
    /// write batch, with the puts' durability). Write latencies are then
    /// per batch; throughput counts single operations. 1 = one put at a
    /// time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    /// YCSB scans read newest-first, through each engine's own reverse
    /// iteration: a scan of n records (E, E10, E100, E1000) reads the n
    /// largest keys at or below its start key, in descending order.
    /// (Stream queries: see `--stream-query`.)
    #[arg(long)]
    pub reverse: bool,
    /// What a stream query reads: `latest`, its app's latest n events
    /// newest-first (`prefix(app).rev().take(n)`), what a user showing
    /// recent events writes; or `minute`, its app's last minute of events
    /// in time order (a forward scan from the key of a minute ago, up to n).
    #[arg(long, value_enum, default_value = "latest")]
    pub stream_query: StreamQuery,
    /// Key size in bytes (at least 14; stream keys are always 16).
    #[arg(long, default_value_t = 14)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 800)]
    pub value_size: usize,
    /// What the values look like: `random` (incompressible bytes) or
    /// `json` (JSON events of an analytics trace, each exactly
    /// --value-size bytes, compressible like real event logs).
    #[arg(long, value_enum, default_value = "random")]
    pub value_kind: ValueKind,
    /// Longest scan (default: 100 for E, S for E<S>, 1000 for the stream).
    #[arg(long)]
    pub scan_length: Option<usize>,
    /// App ids of the analytics stream.
    #[arg(long, default_value_t = 60_000)]
    pub stream_apps: u64,
    /// Minutes of stream time the ingested events span; queries read the last minute.
    #[arg(long, default_value_t = 10.0)]
    pub stream_minutes: f64,
    /// Run each engine in a memory cgroup of this size (process + page cache),
    /// e.g. 1G; 0 = no cgroup (the paper suite then still sizes its data sets
    /// from 1 GiB).
    #[arg(long, value_parser = crate::format::parse_size)]
    pub memory_limit: Option<u64>,
    /// Memory budget B: evendb's memory budget, RocksDB's block cache (its
    /// memtables get up to B more) and fjall's cache (default: a quarter of
    /// --memory-limit, else evendb's default of 256 MiB).
    #[arg(long, value_parser = crate::format::parse_size)]
    pub cache_size: Option<u64>,
    /// Directory for the stores (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the stores after the run.
    #[arg(long)]
    pub keep_data: bool,
    /// Run evendb's jobs in this binary instead of this one: a build of
    /// the same source without the peer engines (`cargo build --release
    /// -p evendb-bench`), so that evendb's process holds what an
    /// application embedding it would, not RocksDB's and fjall's code and
    /// start-up allocations (they added 3-10 MiB to evendb's peak RSS:
    /// docs/results/2026-12-02-child-binaries). Each result
    /// records the engines linked into the binary that ran it.
    #[arg(long)]
    pub evendb_exe: Option<PathBuf>,
    /// Write every figure as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write per-second throughput timelines as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write SVG plots into this directory.
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Run a predefined suite instead: `smoke` (~1 min), `paper` (~35 min)
    /// or `write-path` (~5-6 min per engine).
    #[arg(long, value_parser = ["smoke", "paper", "write-path"])]
    pub suite: Option<String>,
    /// With --suite: print the suite's planned runs and its estimated time,
    /// run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --suite: multiply every record count of the suite by this, e.g.
    /// 0.001 for a quick check of the pipeline (memory caps unchanged).
    #[arg(long, default_value_t = 1.0)]
    pub suite_scale: f64,
    /// Output folder of a suite (default results/<suite>-<unix time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Measured seconds per workload in the paper and write-path suites
    /// (after a warm-up of a quarter of that).
    #[arg(long, default_value_t = 8.0)]
    pub run_seconds: f64,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl Args {
    /// The engines asked for, checked against this build; without
    /// `--engine`, evendb for a single run and every engine of the build
    /// for a suite.
    pub fn engines(&self) -> Result<Vec<EngineKind>> {
        let default = [if self.suite.is_some() {
            "all"
        } else {
            "evendb"
        }
        .to_string()];
        let names = if self.engine.is_empty() {
            &default[..]
        } else {
            &self.engine[..]
        };
        let mut out = Vec::new();
        for name in names {
            let kinds = match (
                name.to_ascii_lowercase().as_str(),
                EngineKind::from_name(name),
            ) {
                ("all", _) => EngineKind::all_available(),
                (_, Some(kind)) => vec![kind],
                (other, None) => bail!(
                    "unknown engine `{other}` ({}, all)",
                    EngineKind::ALL.map(EngineKind::name).join(", ")
                ),
            };
            for k in kinds {
                if !k.available() {
                    bail!(
                        "this build has no `{}` engine: rebuild with `--features {}`",
                        k.name(),
                        k.feature().unwrap_or_default()
                    );
                }
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        Ok(out)
    }

    /// Engine settings derived from the memory options.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            cache_bytes: self.cache_size.or(self.memory_cap().map(|m| m / 4)),
            sync: self.sync,
            peer_compression: self.peer_compression,
            evendb_compression: self.evendb_compression,
        }
    }

    /// The memory limit to enforce; `--memory-limit 0` means none.
    pub fn memory_cap(&self) -> Option<u64> {
        self.memory_limit.filter(|&m| m > 0)
    }

    fn data_dir(&self, engine: EngineKind, tag: &str) -> PathBuf {
        let base = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        base.join(format!(
            "evendb-bench-data-{}-{}-{tag}",
            std::process::id(),
            engine.name()
        ))
    }
}

/// What a stream query reads (`--stream-query`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamQuery {
    /// The app's latest events, newest-first.
    Latest,
    /// The app's last minute of events, in time order.
    Minute,
}

/// Builds the job of one engine for one data set kind.
pub fn job_for(
    args: &Args,
    engine: EngineKind,
    stream: bool,
    records: u64,
    runs: Vec<RunSpec>,
    tag: &str,
) -> Job {
    Job {
        engine,
        config: args.engine_config(),
        dir: args.data_dir(engine, tag),
        threads: args.threads,
        batch_size: args.batch as usize,
        reverse: if stream {
            args.stream_query == StreamQuery::Latest
        } else {
            args.reverse
        },
        seed: args.seed,
        dataset: DatasetSpec {
            records,
            key_size: args.key_size,
            value_size: args.value_size,
            stream,
            stream_apps: args.stream_apps,
            stream_minutes: args.stream_minutes,
            value_kind: args.value_kind,
        },
        runs,
        memory_limit_bytes: None,
        cgroup: None,
        cgroup_peak_file: None,
    }
}

/// The run spec of `workload` under these arguments.
pub fn run_spec(args: &Args, workload: Workload, distribution: Option<Distribution>) -> RunSpec {
    let run = match args.duration {
        Some(s) => Limit::Seconds(s),
        None => Limit::Ops(args.operations),
    };
    let warmup = match (args.warmup_seconds, args.warmup_operations) {
        (Some(s), _) => Limit::Seconds(s),
        (None, Some(n)) => Limit::Ops(n),
        (None, None) => match run {
            Limit::Seconds(s) => Limit::Seconds(s / 10.0),
            Limit::Ops(n) => Limit::Ops(n / 10),
        },
    };
    RunSpec {
        workload,
        distribution: distribution
            .or(args.distribution)
            .unwrap_or(workload.default_distribution()),
        theta: args.theta,
        zipf_items: args.zipf_items,
        warmup,
        run,
        max_scan_length: args.scan_length,
    }
}

/// One line for `job`: engine, what it loads, then its runs.
pub fn describe_job(job: &Job) -> String {
    let ds = &job.dataset;
    let key_size = if ds.stream {
        crate::generator::stream::STREAM_KEY_SIZE
    } else {
        ds.key_size
    };
    format!(
        "{}: {} {} of {} B{} then {}{}",
        job.engine.name(),
        crate::format::count(ds.records as f64),
        if ds.stream {
            "stream events"
        } else {
            "records"
        },
        key_size + ds.value_size,
        match ds.value_kind {
            ValueKind::Random => "",
            ValueKind::Json => " (JSON values)",
        },
        job.runs
            .iter()
            .map(|r| if job.dataset.stream {
                r.workload.name().to_string()
            } else {
                format!("{}/{}", r.workload.name(), r.distribution.name())
            })
            .collect::<Vec<_>>()
            .join(", "),
        if job.reverse {
            ", scans newest-first"
        } else {
            ""
        }
    )
}

/// Runs the jobs (one child per engine and data set) and collects results.
pub fn run_jobs(args: &Args, jobs: Vec<Job>, report: &mut Report) -> Result<()> {
    let mut note = LimitNote(match args.memory_cap() {
        Some(_) => String::new(),
        None => "no memory limit".to_string(),
    });
    if let Some(exe) = &args.evendb_exe {
        if !exe.is_file() {
            bail!("--evendb-exe {}: no such file", exe.display());
        }
    }
    for job in jobs {
        let engine = job.engine;
        eprintln!("== {}", describe_job(&job));
        let exe = match engine {
            EngineKind::Evendb => args.evendb_exe.as_deref(),
            _ => None,
        };
        match run_in_child(job, args.memory_cap(), args.keep_data, exe, &mut note) {
            Ok(results) => report.results.extend(results),
            Err(e) => {
                eprintln!("error: {e:#}");
                report.failures.push(format!("{}: {e:#}", engine.name()));
            }
        }
    }
    report.provenance.memory_limit_note = note.0;
    Ok(())
}

/// Runs the workloads of the command line once per engine (no `--suite`).
pub fn single(args: &Args) -> Result<()> {
    let engines = args.engines()?;
    let records = match args.dataset_size {
        Some(bytes) => (bytes / (args.key_size + args.value_size) as u64).max(1),
        None => args.records,
    };
    let ycsb: Vec<RunSpec> = args
        .workload
        .iter()
        .filter(|w| **w != Workload::Stream)
        .map(|w| run_spec(args, *w, None))
        .collect();
    let stream: Vec<RunSpec> = args
        .workload
        .iter()
        .filter(|w| **w == Workload::Stream)
        .map(|w| run_spec(args, *w, None))
        .collect();
    let mut jobs = Vec::new();
    for &engine in &engines {
        if !ycsb.is_empty() {
            jobs.push(job_for(args, engine, false, records, ycsb.clone(), "ycsb"));
        }
        if !stream.is_empty() {
            jobs.push(job_for(
                args,
                engine,
                true,
                records,
                stream.clone(),
                "stream",
            ));
        }
    }
    let mut report = Report {
        provenance: Provenance::collect(String::new()).with_engine_config(&args.engine_config()),
        ..Report::default()
    };
    run_jobs(args, jobs, &mut report)?;
    print!("{}", report::header(&report));
    print!("{}", report::table(&report.results));
    if !report.provenance.memory_limit_note.is_empty() && args.memory_cap().is_some() {
        println!("\nmemory: {}", report.provenance.memory_limit_note);
    }
    write_outputs(args, &report, &report.results)?;
    report.check_failures()
}

fn write_outputs(args: &Args, report: &Report, results: &[RunResult]) -> Result<()> {
    if let Some(path) = &args.json {
        report::write_json(path, report)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.csv {
        report::write_timeline_csv(path, results)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &args.plots {
        std::fs::create_dir_all(dir)?;
        let files = report::write_plots(dir, results, "")?;
        println!("wrote {} plots into {}", files.len(), dir.display());
    }
    Ok(())
}
