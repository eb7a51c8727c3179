//! Helpers shared by the benchmark's integration tests.
#![allow(dead_code)]

use evendb_bench::results::Latency;

/// A latency summary of ten operations with the given p99.9 and maximum.
pub fn latency(p999: f64, max: f64) -> Latency {
    Latency {
        count: 10,
        p999,
        max,
        ..Latency::default()
    }
}
