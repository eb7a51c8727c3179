//! The `write-path` suite: the runs the write-path targets are measured
//! on, each at a memory cap of 256 MiB and of 1 GiB, in one command.
//!
//! [`RUNS`] is the one list of what the suite runs; [`plan`] resolves it
//! against the command line (caps, engines' arguments, `--run-seconds`,
//! `--suite-scale`) without running anything.

use crate::cli::{run_spec, Args};
use crate::format;
use crate::generator::Distribution;
use crate::runner::RunSpec;
use crate::suite::sizing::{dataset_records, scaled, PAPER_MEMORY};
use crate::workload::Workload;

/// How many records a run loads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Records {
    /// The same count at every cap.
    Fixed(u64),
    /// A data set of this many times the cap, sized as the paper suite
    /// sizes its data sets ([`dataset_records`]).
    TimesCap(f64),
}

/// One run of the suite: a store loaded in key order (or, for the stream,
/// events ingested in time order), then its workloads one after the other
/// on that store, as `evendb-bench --workload W1,W2 ...` runs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    /// The measured workloads after the load, in order.
    pub workloads: &'static [Workload],
    /// Key distribution of the workloads; `None` for the stream.
    pub distribution: Option<Distribution>,
    /// Value size in bytes; `None` = `--value-size` (default 800).
    pub value_size: Option<usize>,
    pub records: Records,
}

impl Run {
    /// Whether the run is the analytics stream.
    pub fn is_stream(&self) -> bool {
        self.workloads == [Workload::Stream]
    }
}

/// The memory caps the suite runs at when the command line names none.
pub const CAPS: [u64; 2] = [256 << 20, 1 << 30];

/// The suite's runs, each run at every cap of [`CAPS`] with 2 worker
/// threads (the default): the command lines the write-path targets were
/// set on, so that one command measures every target again. Change a
/// target's run here and only here.
pub const RUNS: [Run; 4] = [
    // 1. `--workload P,E100 --distribution zipf-composite --records 2638186`:
    //    a sequential load of ~2 GB (8x the data of a 256 MiB cap), puts,
    //    then scans over what the puts left behind.
    Run {
        workloads: &[Workload::P, Workload::E100],
        distribution: Some(Distribution::ZipfComposite),
        value_size: None,
        records: Records::Fixed(2_638_186),
    },
    // 2. `--workload stream --records 5000000`: ingestion of 5M events
    //    (~4 GB) in time order, then the stream's queries.
    Run {
        workloads: &[Workload::Stream],
        distribution: None,
        value_size: None,
        records: Records::Fixed(5_000_000),
    },
    // 3. `--workload P,C --distribution zipf-composite --value-size 100
    //    --records 4000000`: small values, where the per-put cost shows.
    Run {
        workloads: &[Workload::P, Workload::C],
        distribution: Some(Distribution::ZipfComposite),
        value_size: Some(100),
        records: Records::Fixed(4_000_000),
    },
    // 4. `--workload E100,E1000 --distribution zipf-composite` on twice the
    //    cap's data (512 MiB at 256 MiB, 2 GiB at 1 GiB): scans past memory.
    Run {
        workloads: &[Workload::E100, Workload::E1000],
        distribution: Some(Distribution::ZipfComposite),
        value_size: None,
        records: Records::TimesCap(2.0),
    },
];

/// One of [`RUNS`] at one cap, resolved against the command line.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// Position in [`RUNS`], from 1.
    pub number: usize,
    /// The memory the run is sized for.
    pub cap: u64,
    /// The `--memory-limit` it runs under: the cap, or 0 (no cgroup) when
    /// the command line said `--memory-limit 0`.
    pub memory_limit: u64,
    pub stream: bool,
    /// Records (stream: events) to load, after `--suite-scale`.
    pub records: u64,
    pub key_size: usize,
    pub value_size: usize,
    /// The measured phases after the load.
    pub specs: Vec<RunSpec>,
}

impl PlannedRun {
    /// The label its results carry, e.g. `256M run 1`.
    pub fn label(&self) -> String {
        format!("{} run {}", short_size(self.cap), self.number)
    }

    /// Key and value bytes of one record.
    pub fn record_bytes(&self) -> u64 {
        (self.key_size + self.value_size) as u64
    }

    /// The command line as this run's jobs see it: its memory limit (which
    /// also sets every engine's budget to a quarter of it) and value size.
    pub fn args(&self, args: &Args) -> Args {
        let mut a = args.clone();
        a.memory_limit = Some(self.memory_limit);
        a.value_size = self.value_size;
        a
    }

    /// The section heading of the run in the report.
    pub fn heading(&self) -> String {
        let bytes = self.records * self.record_bytes();
        let phases: Vec<String> = self
            .specs
            .iter()
            .map(|s| s.workload.name().to_string())
            .collect();
        format!(
            "Run {} at {}: {} {} of {} B ({}, {:.1}× the cap), then {}",
            self.number,
            format::bytes(self.cap),
            format::count(self.records as f64),
            if self.stream { "events" } else { "records" },
            self.record_bytes(),
            format::bytes(bytes),
            bytes as f64 / self.cap as f64,
            if self.stream {
                "its queries".to_string()
            } else {
                phases.join(", ")
            }
        )
    }
}

/// The caps to run at, each with the `--memory-limit` to run under: the
/// one the command line names, else both of [`CAPS`]. `--memory-limit 0`
/// sizes the runs for [`PAPER_MEMORY`] and runs them without a cgroup, as
/// the paper suite does.
pub fn caps(args: &Args) -> Vec<(u64, u64)> {
    match args.memory_limit {
        Some(0) => vec![(PAPER_MEMORY, 0)],
        Some(m) => vec![(m, m)],
        None => CAPS.iter().map(|&c| (c, c)).collect(),
    }
}

/// Every run of the suite, cap by cap (smallest first), in [`RUNS`] order.
pub fn plan(args: &Args) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    for (cap, memory_limit) in caps(args) {
        for (i, run) in RUNS.iter().enumerate() {
            let stream = run.is_stream();
            let key_size = if stream {
                crate::generator::stream::STREAM_KEY_SIZE
            } else {
                args.key_size
            };
            let value_size = run.value_size.unwrap_or(args.value_size);
            let records = match run.records {
                Records::Fixed(n) => n,
                Records::TimesCap(f) => dataset_records(f, cap, (key_size + value_size) as u64),
            };
            let specs = run
                .workloads
                .iter()
                .map(|&w| run_spec(args, w, run.distribution).timed(args.run_seconds))
                .collect();
            out.push(PlannedRun {
                number: i + 1,
                cap,
                memory_limit,
                stream,
                records: scaled(records, args.suite_scale),
                key_size,
                value_size,
                specs,
            });
        }
    }
    out
}

/// `256M`, `1G`: a size in whole MiB or GiB as `--memory-limit` takes it,
/// else in bytes.
fn short_size(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{}G", bytes / GIB)
    } else if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{}M", bytes / MIB)
    } else {
        bytes.to_string()
    }
}
