//! The figures of one measured phase, as written to `--json`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engines::{durability_pairing, EngineConfig, Setting};
use crate::generator::ValueKind;

/// Latency summary of one operation kind, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// Summarises a histogram recorded in nanoseconds.
    pub fn from_histogram_ns(h: &Histogram<u64>) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            min: us(h.min()),
            p50: us(h.value_at_quantile(0.50)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

/// Everything measured in one phase of one engine.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub engine: String,
    /// Engine configuration in one line.
    pub engine_config: String,
    /// Every option the harness set on the engine, with value and source.
    #[serde(default)]
    pub engine_settings: Vec<Setting>,
    /// Whether every acknowledged write was durable (`--sync`).
    #[serde(default)]
    pub sync: bool,
    /// `load`, a YCSB workload letter, `stream-ingest` or `stream`.
    pub workload: String,
    pub distribution: String,
    pub theta: f64,
    /// Records in the store when the phase started.
    pub records: u64,
    /// Operations measured.
    pub operations: u64,
    pub threads: usize,
    /// Writes per atomic write batch (`--batch`): with more than 1, the
    /// latencies of the write kinds (`put`, `update`, `insert`, `rmw`) are
    /// per batch, while `operations` and the throughput count single
    /// writes. 1 in results written before the field existed.
    #[serde(default = "one")]
    pub batch_size: usize,
    /// Whether the phase's scans read newest-first: a YCSB scan of `n`
    /// records (`--reverse`) reads the `n` largest keys at or below its
    /// start key, in descending order, and a stream query (the default;
    /// not with `--stream-query minute`) reads its app's latest events.
    /// False in results written before the field existed.
    #[serde(default)]
    pub reverse: bool,
    pub key_size: usize,
    pub value_size: usize,
    /// What the values looked like (`--value-kind`): `random`
    /// (incompressible) or `json` (JSON events). `random` in results
    /// written before the field existed.
    #[serde(default)]
    pub value_kind: ValueKind,
    pub duration_secs: f64,
    pub throughput_ops_per_sec: f64,
    /// User key+value bytes written per second.
    pub throughput_mb_per_sec: f64,
    /// Per operation kind (`get`, `update`, `insert`, `scan`, `rmw`, `put`).
    pub latency_us: BTreeMap<String, Latency>,
    /// Operations that returned an error.
    pub failures: u64,
    /// Gets that found nothing.
    pub not_found: u64,
    /// Records visited by scans.
    pub scanned_records: u64,
    /// Key and value bytes the workload wrote.
    pub user_bytes_written: u64,
    /// Bytes this process wrote to the device (`/proc/self/io` write_bytes).
    pub bytes_written: u64,
    /// Bytes this process read from the device (`/proc/self/io` read_bytes).
    pub bytes_read: u64,
    /// bytes_written / user_bytes_written; null when nothing was written.
    pub write_amplification: Option<f64>,
    /// Bytes on disk at the end of the phase.
    pub disk_bytes: u64,
    /// Records × (key + value) bytes at the end of the phase.
    pub live_bytes: u64,
    /// disk_bytes / live_bytes.
    pub space_amplification: Option<f64>,
    pub cpu_seconds: f64,
    pub peak_rss_bytes: u64,
    /// The engines linked into the binary whose process ran this result
    /// (comma-separated; `--evendb-exe` runs evendb's jobs in a build
    /// without the peers); empty in results written before it was
    /// recorded.
    #[serde(default)]
    pub linked_engines: String,
    /// The memory budget B the engine was given (evendb's budget, the
    /// peers' cache), printed beside the peak RSS.
    #[serde(default)]
    pub memory_budget_bytes: u64,
    /// Peak memory of the cgroup (process + page cache), when one was used.
    pub cgroup_peak_bytes: Option<u64>,
    /// Memory limit in force, if any.
    pub memory_limit_bytes: Option<u64>,
    /// Operations completed in each second of the phase.
    pub timeline: Vec<u64>,
    /// The engine's own figures at the end of the phase, cumulative since
    /// the store was opened.
    pub engine_stats: BTreeMap<String, u64>,
    /// How much each of the engine's counters grew over the measured part
    /// of the phase: from after the warm-up to the end of the phase
    /// (end-of-phase flush included, as in `bytes_written`). Gauges are
    /// left out (see [`is_counter`]). Empty in results written before this
    /// field existed.
    #[serde(default)]
    pub engine_stats_delta: BTreeMap<String, u64>,
    /// The suite's label of the data set the phase ran on (`2x`,
    /// `256M run 1`): phases are compared only within one data set. `None`
    /// outside suites, for the suites' analytics stream and in results
    /// written before the field existed (see [`RunResult::dataset_label`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
}

fn one() -> usize {
    1
}

/// Operation kinds that write.
pub const WRITE_OPS: [&str; 4] = ["put", "update", "insert", "rmw"];

/// Operation kinds that only read.
pub const READ_OPS: [&str; 2] = ["get", "scan"];

/// The engine figure older paper suites stored their data set in: ten
/// times its size as a multiple of the memory limit.
const OLD_DATASET_FACTOR: &str = "bench_dataset_factor_x10";

impl RunResult {
    /// Writes per atomic write batch (at least 1).
    pub fn batch(&self) -> usize {
        self.batch_size.max(1)
    }

    /// The name of the operation kind `op` for tables: with write batches,
    /// a write kind's latency is per batch, so `put` of a run with
    /// `--batch 100` is `put×100`; the scans of a `--reverse` run are
    /// `scan-rev`.
    pub fn op_label(&self, op: &str) -> String {
        if self.batch() > 1 && WRITE_OPS.contains(&op) {
            format!("{op}×{}", self.batch())
        } else if self.reverse && op == "scan" {
            "scan-rev".to_string()
        } else {
            op.to_string()
        }
    }

    /// The phase's p99.9 latency in µs: the highest p99.9 of its operation
    /// kinds; `None` when nothing was measured.
    pub fn p999_us(&self) -> Option<f64> {
        self.latency_us
            .values()
            .map(|l| l.p999)
            .max_by(|a, b| a.total_cmp(b))
    }

    /// The slowest write of the phase in µs (puts, updates, inserts,
    /// read-modify-writes); `None` when the phase wrote nothing.
    pub fn worst_write_us(&self) -> Option<f64> {
        self.highest(&WRITE_OPS, |l| l.max)
    }

    /// The highest p99.9 of the phase's writes in µs; `None` when the phase
    /// wrote nothing.
    pub fn write_p999_us(&self) -> Option<f64> {
        self.highest(&WRITE_OPS, |l| l.p999)
    }

    /// The slowest get or scan of the phase in µs; `None` when it read
    /// nothing.
    pub fn worst_read_us(&self) -> Option<f64> {
        self.highest(&READ_OPS, |l| l.max)
    }

    /// The highest p99.9 of the phase's gets and scans in µs; `None` when
    /// it read nothing.
    pub fn read_p999_us(&self) -> Option<f64> {
        self.highest(&READ_OPS, |l| l.p999)
    }

    /// The highest `figure` among the operation kinds `ops` that ran.
    fn highest(&self, ops: &[&str], figure: impl Fn(&Latency) -> f64) -> Option<f64> {
        self.latency_us
            .iter()
            .filter(|(op, l)| ops.contains(&op.as_str()) && l.count > 0)
            .map(|(_, l)| figure(l))
            .max_by(|a, b| a.total_cmp(b))
    }

    /// The data set label, also for results of older paper suites, which
    /// kept it as an engine figure (`2x` from 20).
    pub fn dataset_label(&self) -> Option<String> {
        self.dataset.clone().or_else(|| {
            self.engine_stats
                .get(OLD_DATASET_FACTOR)
                .map(|f| format!("{}x", *f as f64 / 10.0))
        })
    }
}

/// Name prefixes of the engine figures that are counters (only grow while
/// the store is open), so that a phase's share is the difference between
/// its end and its start. Chosen from evendb's `Stats::fields()`: every
/// figure it declares a counter starts with one of these (a test checks
/// this against the kinds evendb itself exports). Figures named `*_max_*`
/// (longest rebalance, split, put wait...) are maxima so far and are left
/// out, as are levels: `chunks`, `munks`, `memory_*`, snapshot figures, and
/// the peers' table counts and sizes. Of the peers' figures only fjall's
/// `compactions_completed` is a counter; `bench_insert_overflows` is the
/// harness's own.
pub const COUNTER_PREFIXES: &[&str] = &[
    // Operations and where they were served.
    "puts",
    "deletes",
    "range_deletes",
    "chunks_dropped",
    "batches",
    // The `Sync` commit journal, and the log records it lets wait.
    "journal_",
    "deferred_",
    "gets",
    "scan",
    "row_cache_",
    // Bytes written and rebuilds.
    "user_bytes_written",
    "log_",
    "table_bytes_written",
    "run_bytes_written",
    "run_record_bytes",
    "rebalance",
    "split",
    "merge",
    "rebuild",
    // Chunks compacted while the store takes no writes.
    "idle_compactions",
    // Munks coming and going.
    "munk_loads",
    "munk_evictions",
    "munk_rebalance",
    "row_cache_shrinks",
    // Waits of puts and work done in line.
    "put_",
    "inline_task",
    "helper_task",
    // Freed memory handed back to the system.
    "memory_trim",
    // Opening and durability.
    "torn_tail_bytes",
    "funks_opened",
    "checkpoint",
    // Peers and the harness.
    "compactions_completed",
    "bench_insert_overflows",
];

/// Whether the engine figure `name` is a counter (see [`COUNTER_PREFIXES`]).
pub fn is_counter(name: &str) -> bool {
    !name.contains("_max_") && COUNTER_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// How much each counter of `after` grew since `before`; a counter missing
/// from `before` counts from zero. Gauges are dropped.
pub fn counter_deltas(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter(|(name, _)| is_counter(name))
        .map(|(name, &v)| {
            let was = before.get(name).copied().unwrap_or(0);
            (name.clone(), v.saturating_sub(was))
        })
        .collect()
}

/// Provenance of a results file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Provenance {
    pub tool: String,
    pub version: String,
    pub date_unix: u64,
    pub host: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub command: String,
    /// How `--memory-limit` was honoured.
    pub memory_limit_note: String,
    /// `buffered` (the default pairing) or `sync` (`--sync`).
    #[serde(default)]
    pub durability_mode: String,
    /// What an acknowledged write means in each engine in that mode.
    #[serde(default)]
    pub durability_pairing: String,
    /// `--peer-compression`: `none`, `lz4` or `recommended`.
    #[serde(default)]
    pub peer_compression: String,
    /// `--evendb-compression`: `lz4` (evendb's default) or `none`; empty
    /// in results written before the option existed.
    #[serde(default)]
    pub evendb_compression: String,
    /// The binary's global allocator and its options (every engine of a
    /// run shares it); empty in results written before it was recorded.
    #[serde(default)]
    pub allocator: String,
}

/// jemalloc's options in this binary (with the `jemalloc` feature), as a C
/// string: docs/design.md §9 chose them by measurement. The binary hands
/// them to jemalloc; `_RJEM_MALLOC_CONF` in the environment overrides them.
pub const JEMALLOC_OPTIONS: &[u8] = b"narenas:2,dirty_decay_ms:5,muzzy_decay_ms:0\0";

/// The global allocator this binary was built with, and its options.
pub fn allocator() -> String {
    if cfg!(feature = "mimalloc") {
        "mimalloc".to_string()
    } else if cfg!(feature = "jemalloc") {
        let options = String::from_utf8_lossy(&JEMALLOC_OPTIONS[..JEMALLOC_OPTIONS.len() - 1]);
        match std::env::var("_RJEM_MALLOC_CONF") {
            Ok(extra) => format!("jemalloc, {options} then {extra}"),
            Err(_) => format!("jemalloc, {options}"),
        }
    } else {
        "glibc malloc, 2 arenas, 128 KiB mmap threshold".to_string()
    }
}

impl Provenance {
    /// Describes this machine and invocation.
    pub fn collect(memory_limit_note: String) -> Provenance {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        Provenance {
            tool: "evendb-bench".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            date_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            host: read("/proc/sys/kernel/hostname"),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease"),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            memory_limit_note,
            allocator: allocator(),
            ..Provenance::default()
        }
    }

    /// Records the durability mode and the peers' compression of `config`.
    pub fn with_engine_config(mut self, config: &EngineConfig) -> Provenance {
        self.durability_mode = config.durability_mode().to_string();
        self.durability_pairing = durability_pairing(config.sync).to_string();
        self.peer_compression = config.peer_compression.name().to_string();
        self.evendb_compression = config.evendb_compression.name().to_string();
        self
    }
}

/// A results file: provenance plus one entry per measured phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    pub provenance: Provenance,
    pub results: Vec<RunResult>,
    /// Engines that failed, with the reason.
    pub failures: Vec<String>,
}

impl Report {
    /// An error naming every engine job that failed, if any did; the
    /// results of the others are already written by then.
    pub fn check_failures(&self) -> anyhow::Result<()> {
        if self.failures.is_empty() {
            return Ok(());
        }
        anyhow::bail!(
            "{} engine job(s) failed: {}",
            self.failures.len(),
            self.failures.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_size_is_in_the_json_and_older_results_read_as_one() {
        let r = RunResult {
            batch_size: 100,
            ..RunResult::default()
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["batch_size"], 100);
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("batch_size");
        let old: RunResult = serde_json::from_value(old).unwrap();
        assert_eq!(old.batch(), 1);
        let back: RunResult = serde_json::from_value(json).unwrap();
        assert_eq!(back.batch(), 100);
    }

    #[test]
    fn the_scan_direction_is_in_the_json_and_older_results_read_as_forward() {
        let r = RunResult {
            reverse: true,
            ..RunResult::default()
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["reverse"], true);
        let back: RunResult = serde_json::from_value(json.clone()).unwrap();
        assert!(back.reverse);
        let mut old = json;
        old.as_object_mut().unwrap().remove("reverse");
        let old: RunResult = serde_json::from_value(old).unwrap();
        assert!(!old.reverse);
        let forward = serde_json::to_value(RunResult::default()).unwrap();
        assert_eq!(forward["reverse"], false);
    }

    #[test]
    fn the_value_kind_is_in_the_json_and_older_results_read_as_random() {
        let r = RunResult {
            value_kind: ValueKind::Json,
            ..RunResult::default()
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["value_kind"], "json");
        let back: RunResult = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.value_kind, ValueKind::Json);
        let mut old = json;
        old.as_object_mut().unwrap().remove("value_kind");
        let old: RunResult = serde_json::from_value(old).unwrap();
        assert_eq!(old.value_kind, ValueKind::Random);
    }

    #[test]
    fn reverse_scans_are_labelled() {
        let mut r = RunResult::default();
        assert_eq!(r.op_label("scan"), "scan");
        r.reverse = true;
        assert_eq!(r.op_label("scan"), "scan-rev");
        assert_eq!(r.op_label("get"), "get");
        assert_eq!(r.op_label("insert"), "insert");
    }

    #[test]
    fn write_latencies_are_labelled_per_batch() {
        let mut r = RunResult::default();
        assert_eq!(r.op_label("put"), "put");
        r.batch_size = 100;
        assert_eq!(r.op_label("put"), "put×100");
        assert_eq!(r.op_label("rmw"), "rmw×100");
        assert_eq!(r.op_label("get"), "get");
        assert_eq!(r.op_label("scan"), "scan");
    }
}
