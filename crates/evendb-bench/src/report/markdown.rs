//! The markdown report of a suite.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::cli::Args;
use crate::format;
use crate::report::{best, configurations, Served};
use crate::results::{Report, RunResult};

/// One section of a suite's report: the phases of one data set.
#[derive(Clone, Debug)]
pub struct Section {
    /// The data set label its results carry ([`RunResult::dataset`]).
    pub label: String,
    /// The heading, e.g. `Data set 2x: 2,638,186 records (2.0 GiB)`.
    pub heading: String,
    /// The write-path suite's detail; `None` in the other suites.
    pub detail: Option<Detail>,
}

/// What a write-path section adds: a table of each engine's tails and peak
/// RSS beside its memory (see [`per_engine_table`]), and the throughput
/// timeline of every phase, not only the load's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detail {
    /// The memory budget `B` every engine was given.
    pub budget: u64,
    /// The memory cgroup's limit, if one was asked for.
    pub memory_limit: Option<u64>,
}

fn engines(results: &[&RunResult]) -> Vec<String> {
    let mut e: Vec<String> = Vec::new();
    for r in results {
        if !e.contains(&r.engine) {
            e.push(r.engine.clone());
        }
    }
    e
}

fn phases(results: &[&RunResult]) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> = Vec::new();
    for r in results {
        let k = (r.workload.clone(), r.distribution.clone());
        if !p.contains(&k) {
            p.push(k);
        }
    }
    p
}

fn find<'a>(results: &[&'a RunResult], e: &str, p: &(String, String)) -> Option<&'a RunResult> {
    results
        .iter()
        .copied()
        .find(|r| r.engine == e && r.workload == p.0 && r.distribution == p.1)
}

/// Tables for one group of results (one data set).
fn section(out: &mut String, results: &[&RunResult]) {
    let engines = engines(results);
    let phases = phases(results);
    let has_evendb = engines.iter().any(|e| e == "evendb");
    let peers: Vec<&String> = engines.iter().filter(|e| *e != "evendb").collect();
    // Throughput.
    let _ = write!(out, "\n| workload | distribution |");
    for e in &engines {
        let _ = write!(out, " {e} ops/s |");
    }
    if has_evendb {
        for p in &peers {
            let _ = write!(out, " evendb / {p} |");
        }
    }
    let _ = write!(out, "\n|---|---|");
    for _ in 0..engines.len() + if has_evendb { peers.len() } else { 0 } {
        out.push_str("---:|");
    }
    out.push('\n');
    for p in &phases {
        let _ = write!(out, "| {} | {} |", p.0, p.1);
        for e in &engines {
            let v = find(results, e, p)
                .map_or("-".to_string(), |r| format::count(r.throughput_ops_per_sec));
            let _ = write!(out, " {v} |");
        }
        if has_evendb {
            for peer in &peers {
                let ratio = match (find(results, "evendb", p), find(results, peer, p)) {
                    (Some(a), Some(b)) if b.throughput_ops_per_sec > 0.0 => {
                        format!(
                            "{:.2}×",
                            a.throughput_ops_per_sec / b.throughput_ops_per_sec
                        )
                    }
                    _ => "-".to_string(),
                };
                let _ = write!(out, " {ratio} |");
            }
        }
        out.push('\n');
    }
    out.push_str(&best::markdown(results));
    // Amplification and resources.
    let _ = writeln!(
        out,
        "\n| engine | workload | distribution | write amp | space amp | written | read | CPU s | peak RSS | p99 µs (per op) |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|"
    );
    for p in &phases {
        for e in &engines {
            if let Some(r) = find(results, e, p) {
                let p99: Vec<String> = r
                    .latency_us
                    .iter()
                    .map(|(op, l)| format!("{} {:.0}", r.op_label(op), l.p99))
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} |",
                    e,
                    p.0,
                    p.1,
                    format::ratio(r.write_amplification),
                    format::ratio(r.space_amplification),
                    format::bytes(r.bytes_written),
                    format::bytes(r.bytes_read),
                    r.cpu_seconds,
                    format::bytes(r.peak_rss_bytes),
                    p99.join(", ")
                );
            }
        }
    }
    out.push_str(&served_table(results));
    out.push_str(&memory_table(results));
}

fn micros(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.0}"))
}

/// The write-path table: per phase and engine the throughput and its ratio
/// to the best RocksDB configuration's, write amplification, the p99.9 and
/// worst latency of writes and of reads, and peak RSS beside the memory
/// budget and cap of [`Detail`].
pub fn per_engine_table(results: &[&RunResult], detail: &Detail) -> String {
    let best = best::best_rocksdb(results);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n**Each engine, phase by phase.** ÷ best RocksDB: the phase's throughput over that of the fastest RocksDB configuration in it (in evendb's rows, evendb / best RocksDB); writes are puts, updates, inserts and read-modify-writes, reads gets and scans (µs; p99.9 the highest of the kinds); peak RSS is the process's (`ru_maxrss` since its job started), next to the memory budget every engine was given and the cgroup's limit.\n"
    );
    let _ = writeln!(
        out,
        "| engine | workload | distribution | ops/s | ÷ best RocksDB | write amp | write p99.9 µs | worst write µs | read p99.9 µs | worst read µs | peak RSS | budget | memory limit |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for p in phases(results) {
        let best_ops = best
            .iter()
            .find(|row| row.workload == p.0 && row.distribution == p.1)
            .map(|row| row.best.throughput_ops_per_sec)
            .filter(|&ops| ops > 0.0);
        for e in engines(results) {
            let Some(r) = find(results, &e, &p) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {e} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                p.0,
                p.1,
                format::count(r.throughput_ops_per_sec),
                best_ops.map_or("-".to_string(), |b| format!(
                    "{:.2}×",
                    r.throughput_ops_per_sec / b
                )),
                format::ratio(r.write_amplification),
                micros(r.write_p999_us()),
                micros(r.worst_write_us()),
                micros(r.read_p999_us()),
                micros(r.worst_read_us()),
                format::bytes(r.peak_rss_bytes),
                format::bytes(detail.budget),
                detail
                    .memory_limit
                    .map_or("none".to_string(), format::bytes),
            );
        }
    }
    out
}

/// The table "Where evendb's gets were served": one row per evendb phase
/// that did gets or scans, from the growth of evendb's counters over the
/// phase's measured part. Empty when there is no such phase.
pub fn served_table(results: &[&RunResult]) -> String {
    let rows = super::rows_of(results.iter().copied(), Served::of);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n**Where evendb's gets were served.** Counters of the measured part of each phase (warm-up excluded); shares of the phase's gets; scan chunks are the chunks scans visited, read from a munk or from disk; device read: bytes read from the device during the phase, as in the table above.\n"
    );
    let _ = writeln!(
        out,
        "| workload | distribution | gets | % munk | % row cache | % log | % table | % absent | scan chunks | scan chunks from munks % | munk loads | munk evictions | device read |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (r, s) in rows {
        let _ = writeln!(
            out,
            "| {} | {} |",
            s.cells(r).join(" | "),
            format::bytes(r.bytes_read)
        );
    }
    out
}

/// The table "evendb's memory by category": per evendb phase, the
/// budget's categories at the phase's end beside the process's peak RSS.
/// Empty when there is no such phase.
pub fn memory_table(results: &[&RunResult]) -> String {
    let rows = super::rows_of(results.iter().copied(), super::MemoryUse::of);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n**evendb's memory by category.** What the budget's categories held at the end of each phase (charged now, and the most ever charged), beside the process's peak RSS so far; the last column is what the process held beyond the most ever charged: allocator retention, structures outside the budget's categories, code and stacks.\n"
    );
    let _ = writeln!(
        out,
        "| workload | distribution | {} |\n|---|---|{}",
        super::MemoryUse::COLUMNS.join(" | "),
        "---:|".repeat(super::MemoryUse::COLUMNS.len())
    );
    for (r, m) in rows {
        let _ = writeln!(out, "| {} |", m.cells(r).join(" | "));
    }
    out
}

/// "Engine configurations": per engine its one-line summary and a table of
/// every option set, with value and source.
pub fn engine_configurations(results: &[RunResult]) -> String {
    let mut out = String::from("\n## Engine configurations\n");
    for (engine, summary, settings) in configurations(results) {
        let _ = writeln!(out, "\n**{engine}**: {summary}\n");
        if settings.is_empty() {
            continue;
        }
        let _ = writeln!(out, "| option | value | source |\n|---|---|---|");
        for s in settings {
            let _ = writeln!(out, "| `{}` | {} | {} |", s.option, s.value, s.source);
        }
    }
    out
}

/// Renders the suite report and writes its plots into `dir`.
pub fn suite(
    name: &str,
    args: &Args,
    report: &Report,
    sections: &[Section],
    elapsed: f64,
    dir: &Path,
) -> Result<String> {
    let p = &report.provenance;
    let mut out = String::new();
    let _ = writeln!(out, "# evendb-bench `{name}` suite\n");
    let _ = writeln!(
        out,
        "- machine: {} CPUs, {} RAM, Linux {}\n- evendb-bench {}, {} worker threads, keys {} B, values {} B, θ = {}, Zipf-simple items: {}\n- memory: {}\n- allocator: {}\n- durability: **{}**: {}\n- {}\n- values: {}\n- wall time: {:.0} s\n- command: `{}`",
        p.cpus,
        format::bytes(p.memory_bytes),
        p.kernel,
        p.version,
        args.threads,
        args.key_size,
        args.value_size,
        args.theta,
        match args.zipf_items {
            crate::generator::ZipfItems::Ycsb => "10^10 (YCSB)",
            crate::generator::ZipfItems::Dataset => "the record count (C++ YCSB, as in the paper)",
        },
        p.memory_limit_note,
        if p.allocator.is_empty() { "not recorded" } else { p.allocator.as_str() },
        p.durability_mode,
        p.durability_pairing,
        super::compression_note(p),
        args.value_kind.describe(),
        elapsed,
        p.command
    );
    if let Some(line) = super::binaries_note(&report.results) {
        let _ = writeln!(out, "- {line}");
    }
    if args.batch > 1 {
        let _ = writeln!(
            out,
            "- write batches: every {n} writes of a worker written as one atomic batch (`--batch {n}`): write latencies (`put×{n}`, worst writes) are per batch, throughput counts operations",
            n = args.batch
        );
    }
    if super::reverse(&report.results) {
        let _ = writeln!(out, "- scans: {}", super::REVERSE_NOTE);
    }
    out.push_str(&engine_configurations(&report.results));
    let _ = writeln!(
        out,
        "\nWrite amplification is the bytes the engine's process wrote to the device (`/proc/self/io`) divided by the key and value bytes the workload wrote; space amplification is the bytes on disk at the end of the phase divided by live records × (key + value). Each engine runs in a child process of its own."
    );
    for s in sections {
        let group: Vec<&RunResult> = report
            .results
            .iter()
            .filter(|r| r.dataset_label().as_deref() == Some(s.label.as_str()))
            .collect();
        let _ = writeln!(out, "\n## {}", s.heading);
        if let Some(detail) = &s.detail {
            out.push_str(&per_engine_table(&group, detail));
        }
        section(&mut out, &group);
        let owned: Vec<RunResult> = group.iter().map(|r| (*r).clone()).collect();
        let files = crate::report::write_plots(dir, &owned, &format!(" {}", s.label))?;
        let _ = writeln!(out);
        // Without the detail, the load's timeline stands for the section's.
        for f in files.iter().filter(|f| {
            s.detail.is_some() || !f.starts_with("timeline") || f.starts_with("timeline-load")
        }) {
            let _ = writeln!(out, "![{f}]({f})");
        }
    }
    let stream: Vec<&RunResult> = report
        .results
        .iter()
        .filter(|r| r.dataset_label().is_none())
        .filter(|r| r.workload == "stream" || r.workload == "stream-ingest")
        .collect();
    if !stream.is_empty() {
        let _ = writeln!(
            out,
            "\n## Analytics stream\n\nEvents keyed app | timestamp | seq, ingested in time order, then 95% scans of one app's last minute of events (app drawn by popularity) and 5% new events."
        );
        section(&mut out, &stream);
        let owned: Vec<RunResult> = stream.iter().map(|r| (*r).clone()).collect();
        let files = crate::report::write_plots(dir, &owned, " stream")?;
        let _ = writeln!(out);
        for f in files.iter().filter(|f| f.starts_with("timeline")) {
            let _ = writeln!(out, "![{f}]({f})");
        }
    }
    if !report.failures.is_empty() {
        let _ = writeln!(out, "\n## Failures\n");
        for f in &report.failures {
            let _ = writeln!(out, "- {f}");
        }
    }
    let _ = writeln!(
        out,
        "\nAll figures: `results.json`; per-second throughput: `timelines.csv`."
    );
    Ok(out)
}
