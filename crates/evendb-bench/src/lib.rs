//! Benchmarks for evendb: YCSB's core workloads and generators, the EvenDB
//! paper's additions (workload P, long scans, Zipf-composite keys) and an
//! analytics event stream shaped like the paper's production trace, run
//! against evendb and optionally RocksDB and fjall.
//!
//! The binary `evendb-bench` is the user interface; this library holds the
//! pieces so that tests can check each one.

#![deny(unsafe_code)]

pub mod cgroup;
pub mod cli;
pub mod engines;
pub mod format;
pub mod generator;
pub mod measure;
pub mod orchestrate;
pub mod report;
pub mod results;
pub mod runner;
pub mod suite;
pub mod workload;
