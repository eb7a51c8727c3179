//! How the suites size their data sets from a memory limit, and how long
//! they expect a job to take.

use crate::generator::stream::STREAM_KEY_SIZE;
use crate::runner::{Job, Limit};

/// Default memory limit of the paper suite, and the memory every suite
/// sizes its data sets from under `--memory-limit 0` (no cgroup).
pub const PAPER_MEMORY: u64 = 1 << 30;

/// Data set sizes of the paper suite, as multiples of the memory limit.
pub const PAPER_SIZES: [f64; 3] = [0.5, 2.0, 8.0];

/// Records of `record_bytes` (key + value) that make a data set of
/// `factor` times `memory`: 2 × 1 GiB is 2,638,186 records of 814 bytes.
pub fn dataset_records(factor: f64, memory: u64, record_bytes: u64) -> u64 {
    (factor * memory as f64) as u64 / record_bytes
}

/// `records` shrunk by `--suite-scale` (at least one record), for a quick
/// check of a suite's pipeline; a scale of 1 changes nothing.
pub fn scaled(records: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        records
    } else {
        ((records as f64 * scale).round() as u64).max(1)
    }
}

/// Load speed the estimates assume, in bytes per second: what the engines
/// sustain for 800-byte values on this 2-core machine, rounded down.
pub const LOAD_BYTES_PER_SEC: f64 = 100e6;

/// Load speed the estimates assume, in records per second: the limit for
/// small values, where the per-record cost dominates.
pub const LOAD_RECORDS_PER_SEC: f64 = 200e3;

/// Estimated wall time of `job` in seconds: its load at the slower of
/// [`LOAD_BYTES_PER_SEC`] and [`LOAD_RECORDS_PER_SEC`], then each timed
/// warm-up and run (runs limited by an operation count add nothing).
pub fn estimate_seconds(job: &Job) -> f64 {
    let ds = &job.dataset;
    let key = if ds.stream {
        STREAM_KEY_SIZE
    } else {
        ds.key_size
    };
    let records = ds.records as f64;
    let load = (records * (key + ds.value_size) as f64 / LOAD_BYTES_PER_SEC)
        .max(records / LOAD_RECORDS_PER_SEC);
    let seconds = |l: Limit| match l {
        Limit::Seconds(s) => s,
        Limit::Ops(_) => 0.0,
    };
    load + job
        .runs
        .iter()
        .map(|r| seconds(r.warmup) + seconds(r.run))
        .sum::<f64>()
}
