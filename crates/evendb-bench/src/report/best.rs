//! evendb against the best RocksDB configuration of each phase.
//!
//! Three RocksDB configurations may run (`rocksdb-default`, `rocksdb`,
//! `rocksdb-universal`); the ratio that counts for a phase is evendb's
//! throughput over that of the configuration with the highest throughput
//! in that phase. Each row also carries the winner's write amplification,
//! p99.9 (the highest p99.9 of the phase's operation kinds) and slowest
//! write, and evendb's ratio against every RocksDB configuration that ran.

use std::fmt::Write as _;

use crate::engines::EngineKind;
use crate::format;
use crate::results::RunResult;

/// The RocksDB configurations, in the order of the ratio columns.
pub const ROCKSDB_CONFIGS: [EngineKind; 3] = [
    EngineKind::RocksdbDefault,
    EngineKind::Rocksdb,
    EngineKind::RocksdbUniversal,
];

/// One phase: the best RocksDB configuration and evendb.
#[derive(Clone, Debug)]
pub struct BestRow<'a> {
    pub workload: String,
    pub distribution: String,
    /// The suite's data set (`2x` = twice the memory limit in the paper
    /// suite), if any.
    pub dataset: Option<String>,
    /// The RocksDB configuration with the highest throughput.
    pub best: &'a RunResult,
    pub evendb: Option<&'a RunResult>,
    /// Every RocksDB configuration that ran this phase, in
    /// [`ROCKSDB_CONFIGS`] order.
    pub configs: Vec<&'a RunResult>,
}

impl BestRow<'_> {
    /// evendb's throughput over the best RocksDB's.
    pub fn ratio(&self) -> Option<f64> {
        ratio(self.evendb, Some(self.best))
    }

    /// evendb's throughput over that of the configuration `engine`.
    pub fn ratio_vs(&self, engine: &str) -> Option<f64> {
        ratio(
            self.evendb,
            self.configs.iter().copied().find(|r| r.engine == engine),
        )
    }
}

fn ratio(a: Option<&RunResult>, b: Option<&RunResult>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b.throughput_ops_per_sec > 0.0 => {
            Some(a.throughput_ops_per_sec / b.throughput_ops_per_sec)
        }
        _ => None,
    }
}

fn is_rocksdb(r: &RunResult) -> bool {
    EngineKind::from_name(&r.engine).is_some_and(EngineKind::is_rocksdb)
}

/// One row per phase (workload, distribution, data set) that at least one
/// RocksDB configuration ran, in order of first appearance.
pub fn best_rocksdb<'a>(results: &[&'a RunResult]) -> Vec<BestRow<'a>> {
    let mut rows: Vec<BestRow<'a>> = Vec::new();
    for r in results.iter().copied().filter(|r| is_rocksdb(r)) {
        let same = |o: &RunResult| {
            o.workload == r.workload
                && o.distribution == r.distribution
                && o.dataset_label() == r.dataset_label()
        };
        if rows.iter().any(|row| same(row.best)) {
            continue;
        }
        let configs: Vec<&RunResult> = ROCKSDB_CONFIGS
            .iter()
            .filter_map(|k| {
                results
                    .iter()
                    .copied()
                    .find(|o| o.engine == k.name() && same(o))
            })
            .collect();
        let best = configs.iter().copied().fold(r, |best, o| {
            if o.throughput_ops_per_sec > best.throughput_ops_per_sec {
                o
            } else {
                best
            }
        });
        rows.push(BestRow {
            workload: r.workload.clone(),
            distribution: r.distribution.clone(),
            dataset: r.dataset_label(),
            best,
            evendb: results
                .iter()
                .copied()
                .find(|o| o.engine == "evendb" && same(o)),
            configs,
        });
    }
    rows
}

/// The RocksDB configurations present in `rows`, in column order.
fn configs_present(rows: &[BestRow]) -> Vec<&'static str> {
    ROCKSDB_CONFIGS
        .iter()
        .map(|k| k.name())
        .filter(|name| {
            rows.iter()
                .any(|row| row.configs.iter().any(|r| r.engine == *name))
        })
        .collect()
}

fn times(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.2}×"))
}

fn micros(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.0}"))
}

/// The cells of one row, after workload and distribution.
fn cells(row: &BestRow, configs: &[&str]) -> Vec<String> {
    let mut c = vec![
        row.best.engine.clone(),
        format::count(row.best.throughput_ops_per_sec),
        format::ratio(row.best.write_amplification),
        micros(row.best.p999_us()),
        micros(row.best.worst_write_us()),
        row.evendb
            .map_or("-".to_string(), |e| format::count(e.throughput_ops_per_sec)),
        times(row.ratio()),
    ];
    c.extend(configs.iter().map(|name| times(row.ratio_vs(name))));
    c
}

/// The markdown table of [`best_rocksdb`]; empty when no RocksDB ran.
pub fn markdown(results: &[&RunResult]) -> String {
    let rows = best_rocksdb(results);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let configs = configs_present(&rows);
    let _ = writeln!(
        out,
        "\n**evendb against the best RocksDB configuration of each phase.** Best = highest throughput among the RocksDB configurations that ran; p99.9 is the highest p99.9 of the phase's operation kinds, worst write the slowest put, update, insert or read-modify-write (µs).\n"
    );
    let _ = write!(
        out,
        "| workload | distribution | best RocksDB | its ops/s | its write amp | its p99.9 µs | its worst write µs | evendb ops/s | evendb / best |"
    );
    for name in &configs {
        let _ = write!(out, " evendb / {name} |");
    }
    let _ = write!(out, "\n|---|---|---|---:|---:|---:|---:|---:|---:|");
    for _ in &configs {
        out.push_str("---:|");
    }
    out.push('\n');
    for row in &rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            row.workload,
            row.distribution,
            cells(row, &configs).join(" | ")
        );
    }
    out
}

/// The same table for the terminal; empty when no RocksDB ran.
pub fn text(results: &[&RunResult]) -> String {
    let rows = best_rocksdb(results);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let configs = configs_present(&rows);
    let _ = writeln!(
        out,
        "\nevendb against the best RocksDB configuration per phase (p99.9: worst op kind; worst write: slowest write, µs)"
    );
    let mut head: Vec<String> = [
        "workload",
        "distribution",
        "best rocksdb",
        "ops/s",
        "w-amp",
        "p99.9",
        "worst write",
        "evendb ops/s",
        "vs best",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    head.extend(configs.iter().map(|c| format!("vs {c}")));
    let mut lines: Vec<Vec<String>> = vec![head];
    for row in &rows {
        let workload = match &row.dataset {
            Some(d) => format!("{} @{d}", row.workload),
            None => row.workload.clone(),
        };
        let mut line = vec![workload, row.distribution.clone()];
        line.extend(cells(row, &configs));
        lines.push(line);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                let pad = w.saturating_sub(c.chars().count());
                if i < 3 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}
