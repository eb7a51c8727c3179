//! Output: the stdout table, JSON, CSV timelines, SVG plots and the suite's
//! markdown report.

pub mod best;
pub mod markdown;
pub mod svg;

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::engines::Setting;
use crate::format;
use crate::results::{Report, RunResult};

/// Each engine's configuration as the results carry it: name, one-line
/// summary and every option set, in order of first appearance.
pub fn configurations(results: &[RunResult]) -> Vec<(&str, &str, &[Setting])> {
    let mut out: Vec<(&str, &str, &[Setting])> = Vec::new();
    for r in results {
        let c = (
            r.engine.as_str(),
            r.engine_config.as_str(),
            r.engine_settings.as_slice(),
        );
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The header printed before the table: durability mode and pairing, the
/// peers' compression and every engine's full option set.
pub fn header(report: &Report) -> String {
    let p = &report.provenance;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "durability: {} ({})",
        p.durability_mode, p.durability_pairing
    );
    let _ = writeln!(out, "{}", compression_note(p));
    for kind in value_kinds(&report.results) {
        let _ = writeln!(out, "values: {}", kind.describe());
    }
    if let Some(n) = batch_size(&report.results) {
        let _ = writeln!(
            out,
            "write batches: every {n} writes of a worker (puts, updates, inserts, read-modify-writes' puts) written as one atomic batch (--batch {n}); write latencies are per batch, throughput counts operations"
        );
    }
    if reverse(&report.results) {
        let _ = writeln!(out, "scans: {REVERSE_NOTE}");
    }
    let _ = writeln!(out, "engine configurations:");
    for (engine, summary, settings) in configurations(&report.results) {
        let _ = writeln!(out, "  {engine}: {summary}");
        let width = settings
            .iter()
            .map(|s| s.option.chars().count())
            .max()
            .unwrap_or(0);
        for s in settings {
            let _ = writeln!(
                out,
                "    {:<width$} = {}   [{}]",
                s.option, s.value, s.source
            );
        }
    }
    out.push('\n');
    out
}

/// The peers' and evendb's compression, as reports state it.
pub fn compression_note(p: &crate::results::Provenance) -> String {
    let evendb = match p.evendb_compression.as_str() {
        "" => "not recorded",
        "lz4" => "lz4 (LZ4 table and run blocks, evendb's default)",
        "none" => "none (--evendb-compression none)",
        other => other,
    };
    format!(
        "peer compression: {} (--peer-compression); evendb compression: {evendb}. Parity: peers none with evendb none, peers lz4 with evendb lz4; logs appended by puts and WALs are never compressed",
        p.peer_compression
    )
}

/// The value kinds of `results`, in order of first appearance.
pub fn value_kinds(results: &[RunResult]) -> Vec<crate::generator::ValueKind> {
    let mut out = Vec::new();
    for r in results {
        if !out.contains(&r.value_kind) {
            out.push(r.value_kind);
        }
    }
    out
}

/// What newest-first scans (`--reverse`, stream queries by default) read,
/// as reports state it.
pub const REVERSE_NOTE: &str = "newest-first: a YCSB scan of n records (with --reverse) reads the n largest keys at or below its start key, in descending order; a stream query (unless --stream-query minute) reads its app's latest n events, newest first (prefix(app).rev().take(n)), instead of its last minute of events in time order. Each engine iterates backwards natively (evendb Scan::rev, RocksDB seek_for_prev + prev, fjall range/prefix .rev())";

/// Which binaries ran the engines' jobs, when not every job ran in one
/// linking the same engines (`--evendb-exe`): peak RSS counts the code and
/// start-up allocations of every engine linked in.
pub fn binaries_note(results: &[RunResult]) -> Option<String> {
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in results.iter().filter(|r| !r.linked_engines.is_empty()) {
        match seen.iter_mut().find(|(l, _)| *l == r.linked_engines) {
            Some((_, engines)) => {
                if !engines.contains(&r.engine.as_str()) {
                    engines.push(&r.engine);
                }
            }
            None => seen.push((&r.linked_engines, vec![&r.engine])),
        }
    }
    (seen.len() > 1).then(|| {
        let parts: Vec<String> = seen
            .iter()
            .map(|(linked, engines)| format!("{} in a binary linking {linked}", engines.join(", ")))
            .collect();
        format!(
            "binaries: {} (peak RSS counts the code and start-up memory of every engine linked in)",
            parts.join("; ")
        )
    })
}

/// Whether any phase of `results` scanned newest-first.
pub fn reverse(results: &[RunResult]) -> bool {
    results.iter().any(|r| r.reverse)
}

/// The largest write batch of `results`, if any phase wrote in batches of
/// more than one operation.
pub fn batch_size(results: &[RunResult]) -> Option<usize> {
    results
        .iter()
        .map(RunResult::batch)
        .max()
        .filter(|&n| n > 1)
}

/// The table printed after a run: one line per phase, then latencies, the
/// best RocksDB configuration per phase and where evendb served its gets.
pub fn table(results: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<17} {:<14} {:<15} {:>10} {:>12} {:>8} {:>7} {:>7} {:>8} {:>9} {:>9}",
        "engine",
        "workload",
        "distribution",
        "records",
        "ops/s",
        "MB/s",
        "w-amp",
        "s-amp",
        "cpu s",
        "peak rss",
        "budget"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<17} {:<14} {:<15} {:>10} {:>12} {:>8.1} {:>7} {:>7} {:>8.1} {:>9} {:>9}",
            r.engine,
            r.workload,
            r.distribution,
            format::count(r.records as f64),
            format::count(r.throughput_ops_per_sec),
            r.throughput_mb_per_sec,
            format::ratio(r.write_amplification),
            format::ratio(r.space_amplification),
            r.cpu_seconds,
            format::bytes(r.peak_rss_bytes),
            format::bytes(r.memory_budget_bytes),
        );
    }
    let _ = writeln!(out, "\nlatency (µs)");
    if let Some(n) = batch_size(results) {
        let _ = writeln!(
            out,
            "put×{n}, update×{n}, insert×{n}, rmw×{n}: one sample per atomic write batch of {n} operations (--batch {n}), count = batches"
        );
    }
    let _ = writeln!(
        out,
        "{:<17} {:<14} {:<15} {:<10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "engine",
        "workload",
        "distribution",
        "op",
        "count",
        "mean",
        "p50",
        "p95",
        "p99",
        "p99.9",
        "max"
    );
    for r in results {
        for (op, l) in &r.latency_us {
            let _ = writeln!(
                out,
                "{:<17} {:<14} {:<15} {:<10} {:>10} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1}",
                r.engine,
                r.workload,
                r.distribution,
                r.op_label(op),
                l.count,
                l.mean,
                l.p50,
                l.p95,
                l.p99,
                l.p999,
                l.max
            );
        }
    }
    let refs: Vec<&RunResult> = results.iter().collect();
    out.push_str(&best::text(&refs));
    let served = rows_of(results, Served::of);
    if !served.is_empty() {
        let _ = writeln!(
            out,
            "\nevendb gets served (munk / row cache / log / table), in % of the phase's gets; scan chunks read from munks, in %"
        );
        let _ = writeln!(
            out,
            "{:<14} {:<15} {:>10} {:>7} {:>8} {:>6} {:>7} {:>8} {:>11} {:>11} {:>10} {:>9}",
            "workload",
            "distribution",
            "gets",
            "munk %",
            "rcache %",
            "log %",
            "table %",
            "absent %",
            "scan chunks",
            "from munk %",
            "munk loads",
            "evictions"
        );
        const WIDTHS: [usize; 12] = [14, 15, 10, 7, 8, 6, 7, 8, 11, 11, 10, 9];
        for (r, s) in served {
            let _ = writeln!(out, "{}", aligned_line(&s.cells(r), &WIDTHS));
        }
    }
    let memory = rows_of(results, MemoryUse::of);
    if !memory.is_empty() {
        let _ = writeln!(
            out,
            "\nevendb memory at the end of each phase, by category of the budget; peak RSS is the process's so far"
        );
        let mut widths = vec![14, 15];
        widths.extend(MemoryUse::COLUMNS.iter().map(|c| c.len().max(10)));
        let header: Vec<&str> = ["workload", "distribution"]
            .into_iter()
            .chain(MemoryUse::COLUMNS)
            .collect();
        let _ = writeln!(out, "{}", aligned_line(&header, &widths));
        for (r, m) in &memory {
            let _ = writeln!(out, "{}", aligned_line(&m.cells(r), &widths));
        }
        if let Some(line) = memory.last().and_then(|(r, m)| at_peak(r, m)) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// What each category held when the charge reached its peak (so far, at
/// the end of phase `r`), from the `memory_peak_*` gauges; `None` for
/// results written before they existed.
fn at_peak(r: &RunResult, m: &MemoryUse) -> Option<String> {
    let g = |name: &str| r.engine_stats.get(name).copied().map(format::bytes);
    Some(format!(
        "charged at its peak ({}): munks {}, row cache {}, filters {}, indexes {}, write bufs {}, background {}",
        format::bytes(m.peak_charged),
        g("memory_peak_munks")?,
        g("memory_peak_row_cache")?,
        g("memory_peak_filters")?,
        g("memory_peak_indexes")?,
        g("memory_peak_write_buffers")?,
        g("memory_peak_background")?,
    ))
}

/// The phases `of` has figures for (evendb's, as a rule), each with them.
pub(crate) fn rows_of<'a, T>(
    results: impl IntoIterator<Item = &'a RunResult>,
    of: fn(&RunResult) -> Option<T>,
) -> Vec<(&'a RunResult, T)> {
    results
        .into_iter()
        .filter_map(|r| of(r).map(|t| (r, t)))
        .collect()
}

/// One line of a console table of evendb phases: workload and
/// distribution left-aligned, the other cells right-aligned, each padded
/// to its width.
fn aligned_line<S: AsRef<str>>(cells: &[S], widths: &[usize]) -> String {
    let line: Vec<String> = cells
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(i, (c, &w))| {
            let c = c.as_ref();
            if i < 2 {
                format!("{c:<w$}")
            } else {
                format!("{c:>w$}")
            }
        })
        .collect();
    line.join(" ")
}

/// Where evendb served one phase's gets and scans: the growth of its
/// counters over the measured part of the phase
/// ([`RunResult::engine_stats_delta`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Gets (those of read-modify-writes included).
    pub gets: u64,
    /// Gets answered from a munk.
    pub munk: u64,
    /// Gets answered from the row cache.
    pub row_cache: u64,
    /// Gets answered from a log record on disk.
    pub log: u64,
    /// Gets answered from a table on disk.
    pub table: u64,
    /// Gets of munk-less chunks that found nothing.
    pub absent: u64,
    /// Scans started.
    pub scans: u64,
    /// Chunks scans read from a munk.
    pub scan_chunks_munk: u64,
    /// Chunks scans read from disk (table and logs).
    pub scan_chunks_funk: u64,
    /// Munks loaded from disk.
    pub munk_loads: u64,
    /// Munks evicted to stay within the memory budget.
    pub munk_evictions: u64,
}

impl Served {
    /// The cells both tables show for phase `r`: workload, distribution,
    /// gets, the five shares, scan chunks, the share from munks, munk loads
    /// and evictions.
    pub fn cells(&self, r: &RunResult) -> [String; 12] {
        [
            r.workload.clone(),
            r.distribution.clone(),
            format::count(self.gets as f64),
            format::percent(self.munk, self.gets),
            format::percent(self.row_cache, self.gets),
            format::percent(self.log, self.gets),
            format::percent(self.table, self.gets),
            format::percent(self.absent, self.gets),
            format::count(self.scan_chunks() as f64),
            format::percent(self.scan_chunks_munk, self.scan_chunks()),
            format::count(self.munk_loads as f64),
            format::count(self.munk_evictions as f64),
        ]
    }

    /// The figures of an evendb phase that did gets or scans; `None` for
    /// other engines, for phases without gets or scans, and for results
    /// written before per-phase counters existed.
    pub fn of(r: &RunResult) -> Option<Served> {
        if r.engine != "evendb" {
            return None;
        }
        let d = |name: &str| r.engine_stats_delta.get(name).copied().unwrap_or(0);
        let s = Served {
            gets: d("gets"),
            munk: d("gets_munk"),
            row_cache: d("gets_row_cache"),
            log: d("gets_log"),
            table: d("gets_table"),
            absent: d("gets_absent"),
            scans: d("scans"),
            scan_chunks_munk: d("scan_chunks_munk"),
            scan_chunks_funk: d("scan_chunks_funk"),
            munk_loads: d("munk_loads"),
            munk_evictions: d("munk_evictions"),
        };
        (s.gets > 0 || s.scans > 0 || s.scan_chunks() > 0).then_some(s)
    }

    /// Chunks scans visited, from munks and from disk.
    pub fn scan_chunks(&self) -> u64 {
        self.scan_chunks_munk + self.scan_chunks_funk
    }
}

/// evendb's memory at the end of one phase, by category (its `memory_*`
/// gauges), beside the process's peak RSS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    pub budget: u64,
    /// Charged to the budget now, and at most so far.
    pub charged: u64,
    pub peak_charged: u64,
    pub munks: u64,
    pub row_cache: u64,
    pub filters: u64,
    pub indexes: u64,
    pub write_buffers: u64,
    /// Working memory of background work running at the phase's end.
    pub background: u64,
    /// The store's structures outside the budget (`memory_other`); `None`
    /// in results written before the gauge existed.
    pub other: Option<u64>,
}

impl MemoryUse {
    /// Column names, after workload and distribution.
    pub const COLUMNS: [&'static str; 12] = [
        "budget",
        "charged",
        "peak charged",
        "munks",
        "row cache",
        "filters",
        "indexes",
        "write bufs",
        "background",
        "other",
        "peak RSS",
        "RSS - charged",
    ];

    /// The figures of an evendb phase; `None` for other engines and for
    /// results written before the gauges existed.
    pub fn of(r: &RunResult) -> Option<MemoryUse> {
        if r.engine != "evendb" {
            return None;
        }
        let g = |name: &str| r.engine_stats.get(name).copied();
        Some(MemoryUse {
            budget: g("memory_budget")?,
            charged: g("memory_used")?,
            peak_charged: g("memory_peak")?,
            munks: g("memory_munks")?,
            row_cache: g("memory_row_cache")?,
            filters: g("memory_filters")?,
            indexes: g("memory_indexes")?,
            write_buffers: g("memory_write_buffers")?,
            background: g("memory_background")?,
            other: g("memory_other"),
        })
    }

    /// One row's cells: workload, distribution, then [`Self::COLUMNS`].
    /// The last is what the process held beyond the most ever charged
    /// (allocator retention, structures outside the budget's categories,
    /// code and stacks).
    pub fn cells(&self, r: &RunResult) -> Vec<String> {
        let mut cells = vec![r.workload.clone(), r.distribution.clone()];
        cells.extend(
            [
                self.budget,
                self.charged,
                self.peak_charged,
                self.munks,
                self.row_cache,
                self.filters,
                self.indexes,
                self.write_buffers,
                self.background,
            ]
            .map(format::bytes),
        );
        cells.push(self.other.map_or_else(|| "-".to_string(), format::bytes));
        cells.push(format::bytes(r.peak_rss_bytes));
        cells.push(format::bytes(
            r.peak_rss_bytes.saturating_sub(self.peak_charged),
        ));
        cells
    }
}

/// Writes the report as pretty JSON.
pub fn write_json(path: &Path, report: &Report) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes every phase's per-second throughput as long-format CSV.
pub fn write_timeline_csv(path: &Path, results: &[RunResult]) -> Result<()> {
    let mut out = String::from("engine,workload,distribution,records,second,ops\n");
    for r in results {
        for (sec, ops) in r.timeline.iter().enumerate() {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{}",
                r.engine, r.workload, r.distribution, r.records, sec, ops
            );
        }
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// Writes the plots of a set of results into `dir`; returns the file names.
pub fn write_plots(dir: &Path, results: &[RunResult], tag: &str) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let mut save = |name: String, body: String| -> Result<()> {
        std::fs::write(dir.join(&name), body).with_context(|| format!("writing {name}"))?;
        files.push(name);
        Ok(())
    };
    // Throughput over time of every phase with a timeline of 2+ seconds,
    // grouped by phase so engines can be compared.
    let mut phases: Vec<(String, String)> = Vec::new();
    for r in results {
        let p = (r.workload.clone(), r.distribution.clone());
        if r.timeline.len() >= 2 && !phases.contains(&p) {
            phases.push(p);
        }
    }
    for (w, d) in &phases {
        let series: Vec<(String, Vec<f64>)> = results
            .iter()
            .filter(|r| &r.workload == w && &r.distribution == d)
            .map(|r| {
                // The last second is usually partial; leave it out of the plot.
                let full = r
                    .timeline
                    .len()
                    .saturating_sub(1)
                    .max(1)
                    .min(r.timeline.len());
                (
                    r.engine.clone(),
                    r.timeline[..full].iter().map(|&v| v as f64).collect(),
                )
            })
            .collect();
        let title = format!("{w} / {d}{tag}: throughput over time");
        save(
            format!("timeline-{}-{}{}.svg", slug(w), slug(d), suffix(tag)),
            svg::lines(&title, "second", "ops/s", &series),
        )?;
    }
    // Throughput per workload per engine, and write amplification.
    let groups: Vec<String> = {
        let mut g = Vec::new();
        for r in results {
            let name = format!("{} {}", r.workload, short_dist(&r.distribution));
            if !g.contains(&name) {
                g.push(name);
            }
        }
        g
    };
    let engines: Vec<String> = {
        let mut e = Vec::new();
        for r in results {
            if !e.contains(&r.engine) {
                e.push(r.engine.clone());
            }
        }
        e
    };
    let pick = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
        groups
            .iter()
            .map(|g| {
                engines
                    .iter()
                    .map(|e| {
                        results
                            .iter()
                            .find(|r| {
                                &r.engine == e
                                    && &format!("{} {}", r.workload, short_dist(&r.distribution))
                                        == g
                            })
                            .and_then(f)
                    })
                    .collect()
            })
            .collect()
    };
    let tput = pick(&|r| Some(r.throughput_ops_per_sec / 1000.0));
    save(
        format!("throughput{}.svg", suffix(tag)),
        svg::bars(
            &format!("Throughput per workload{tag}"),
            "kops/s",
            &groups,
            &engines,
            &tput,
        ),
    )?;
    let wamp = pick(&|r| r.write_amplification);
    save(
        format!("write-amplification{}.svg", suffix(tag)),
        svg::bars(
            &format!("Write amplification{tag}"),
            "device bytes / user bytes",
            &groups,
            &engines,
            &wamp,
        ),
    )?;
    Ok(files)
}

/// Abbreviation of a distribution name for plot labels.
pub fn short_dist(d: &str) -> &str {
    match d {
        "zipf-simple" => "simple",
        "zipf-composite" => "composite",
        "sequential" => "seq",
        "apps-heavy-tail" => "apps",
        other => other,
    }
}

/// A file-name-safe version of `s`.
pub fn slug(s: &str) -> String {
    let lower: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    lower
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// `-slug` of a non-empty tag, for appending to file names.
fn suffix(tag: &str) -> String {
    let s = slug(tag);
    if s.is_empty() {
        s
    } else {
        format!("-{s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(engine: &str, linked: &str) -> RunResult {
        RunResult {
            engine: engine.to_string(),
            linked_engines: linked.to_string(),
            ..RunResult::default()
        }
    }

    #[test]
    fn the_binaries_are_named_only_when_they_differ() {
        let one = [
            result("evendb", "evendb,rocksdb"),
            result("rocksdb", "evendb,rocksdb"),
        ];
        assert_eq!(binaries_note(&one), None);
        assert_eq!(binaries_note(&[result("evendb", "")]), None);
        let two = [
            result("evendb", "evendb"),
            result("rocksdb", "evendb,rocksdb"),
            result("evendb", "evendb"),
            result("rocksdb-universal", "evendb,rocksdb"),
        ];
        let note = binaries_note(&two).expect("two binaries");
        assert!(
            note.contains("evendb in a binary linking evendb;"),
            "{note}"
        );
        assert!(
            note.contains("rocksdb, rocksdb-universal in a binary linking evendb,rocksdb"),
            "{note}"
        );
    }
}
