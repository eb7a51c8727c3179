//! The forms of [`Stats`]: a human table (`Display`), JSON and the
//! Prometheus text exposition format.

use super::{ratio, Kind, Stats, DERIVED_HELP, FIELDS, LONG_LIVED_SNAPSHOT};
use std::fmt;

impl Stats {
    /// One JSON object: every figure of [`Stats::fields`] by name (integers),
    /// then every derived figure of [`Stats::derived`] (numbers).
    ///
    /// ```
    /// let json = evendb::Stats::default().to_json();
    /// assert!(json.starts_with("{\"puts\":0,"));
    /// assert!(json.contains("\"write_amplification\":0"));
    /// ```
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        let ints = self.fields().into_iter().map(|(n, v)| (n, v.to_string()));
        let floats = self.derived().into_iter().map(|(n, v)| (n, json_number(v)));
        for (i, (name, value)) in ints.chain(floats).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
            out.push_str(&value);
        }
        out.push('}');
        out
    }

    /// The figures in the Prometheus text exposition format (version 0.0.4),
    /// each as `<prefix>_<name>` with `# HELP` and `# TYPE` lines: counters
    /// get the suffix `_total`, durations are converted from microseconds
    /// to seconds (`_micros` becomes `_seconds`), and the derived figures
    /// are gauges. Characters of `prefix` that are not valid in a metric
    /// name become `_`; an empty prefix means no prefix.
    ///
    /// ```
    /// let text = evendb::Stats::default().to_prometheus("evendb");
    /// assert!(text.contains("# TYPE evendb_puts_total counter\nevendb_puts_total 0\n"));
    /// assert!(text.contains("evendb_rebalance_max_seconds 0\n"));
    /// ```
    pub fn to_prometheus(&self, prefix: &str) -> String {
        let prefix: String = prefix
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let ok = c.is_ascii_alphabetic() || c == '_' || (i > 0 && c.is_ascii_digit());
                if ok {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut out = String::new();
        let mut metric = |name: &str, kind: Kind, help: &str, value: String| {
            let (base, seconds) = match name.strip_suffix("_micros") {
                Some(b) => (format!("{b}_seconds"), true),
                None => (name.to_string(), false),
            };
            let full = match (prefix.is_empty(), kind) {
                (true, Kind::Counter) => format!("{base}_total"),
                (true, Kind::Gauge) => base,
                (false, Kind::Counter) => format!("{prefix}_{base}_total"),
                (false, Kind::Gauge) => format!("{prefix}_{base}"),
            };
            let help = help.trim().replace('\\', "\\\\").replace('\n', "\\n");
            let help = if seconds {
                help.replace("in microseconds", "in seconds")
            } else {
                help
            };
            let kind = match kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let value = match (seconds, value.parse::<u64>()) {
                (true, Ok(us)) => prometheus_number(us as f64 / 1e6),
                _ => value,
            };
            out.push_str(&format!(
                "# HELP {full} {help}\n# TYPE {full} {kind}\n{full} {value}\n"
            ));
        };
        for (f, (_, v)) in FIELDS.iter().zip(self.fields()) {
            metric(f.name, f.kind, f.help, v.to_string());
        }
        for (name, v) in self.derived() {
            let help = DERIVED_HELP
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, h)| h);
            metric(name, Kind::Gauge, help, prometheus_number(v));
        }
        out
    }
}

/// A finite number as JSON (non-finite values, which the figures never
/// produce, become 0).
fn json_number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".into()
    }
}

/// A number as Prometheus text (which also allows NaN and ±Inf).
fn prometheus_number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Bytes in binary units, e.g. `1.5 MiB`.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let mut v = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

/// A duration in microseconds, in the largest fitting unit.
struct Micros(u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us < 1_000 {
            write!(f, "{us} µs")
        } else if us < 1_000_000 {
            write!(f, "{:.1} ms", us as f64 / 1e3)
        } else {
            write!(f, "{:.1} s", us as f64 / 1e6)
        }
    }
}

/// A fraction as a percentage.
struct Percent(f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}%", self.0 * 100.0)
    }
}

/// A compact table: operations, bytes written, rebuilds by kind, caches,
/// memory against the budget, put waits and snapshots.
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self;
        writeln!(
            f,
            "operations   {} puts, {} deletes, {} gets, {} scans",
            s.puts, s.deletes, s.gets, s.scans
        )?;
        writeln!(
            f,
            "gets from    munk {}, row cache {}, log {}, table {}, absent {}",
            s.gets_munk, s.gets_row_cache, s.gets_log, s.gets_table, s.gets_absent
        )?;
        writeln!(
            f,
            "written      user {}, log {}, tables {}; write amplification {:.2} (tables {:.2})",
            Bytes(s.user_bytes_written),
            Bytes(s.log_bytes_written),
            Bytes(s.table_bytes_written),
            s.write_amplification(),
            s.table_write_amplification()
        )?;
        writeln!(
            f,
            "rebuilds     kind            count      total        max  table bytes"
        )?;
        let rows = [
            (
                "funk rebalance",
                s.rebalances,
                s.rebalance_micros,
                s.rebalance_max_micros,
                Some(s.rebalance_table_bytes),
            ),
            (
                "split",
                s.splits,
                s.split_micros,
                s.split_max_micros,
                Some(s.split_table_bytes),
            ),
            (
                "merge",
                s.merges,
                s.merge_micros,
                s.merge_max_micros,
                Some(s.merge_table_bytes),
            ),
            (
                "munk rebalance",
                s.munk_rebalances,
                s.munk_rebalance_micros,
                s.munk_rebalance_max_micros,
                None,
            ),
        ];
        for (kind, count, total, max, bytes) in rows {
            let bytes = bytes.map_or_else(|| "(memory)".into(), |b| Bytes(b).to_string());
            writeln!(
                f,
                "             {kind:<14} {count:>6} {:>10} {:>10}  {bytes:>11}",
                Micros(total).to_string(),
                Micros(max).to_string(),
            )?;
        }
        writeln!(
            f,
            "munks        {} of {} chunks; {} loads, {} evictions; hit rate {} of gets, {} of scanned chunks",
            s.munks,
            s.chunks,
            s.munk_loads,
            s.munk_evictions,
            Percent(s.munk_hit_rate()),
            Percent(s.scan_munk_hit_rate())
        )?;
        writeln!(
            f,
            "row cache    hit rate {} ({} hits, {} misses); shrunk for munks {} times",
            Percent(s.row_cache_hit_rate()),
            s.row_cache_hits,
            s.row_cache_misses,
            s.row_cache_shrinks
        )?;
        writeln!(
            f,
            "log filters  {} parts skipped, {} searched, {} false positives (rate {}); {} older segments not read",
            s.log_parts_skipped,
            s.log_parts_searched,
            s.log_filter_false_positives,
            Percent(s.log_filter_false_positive_rate()),
            s.log_segments_older_skipped
        )?;
        writeln!(
            f,
            "memory       {} of {} ({}), peak {}: munks {}, row cache {}, filters {}, indexes {},\n             write buffers {}, background work {}; outside the budget {}; freed memory handed back {} times ({})",
            Bytes(s.memory_used),
            Bytes(s.memory_budget),
            Percent(ratio(s.memory_used, s.memory_budget)),
            Bytes(s.memory_peak),
            Bytes(s.memory_munks),
            Bytes(s.memory_row_cache),
            Bytes(s.memory_filters),
            Bytes(s.memory_indexes),
            Bytes(s.memory_write_buffers),
            Bytes(s.memory_background),
            Bytes(s.memory_other),
            s.memory_trims,
            Micros(s.memory_trim_micros)
        )?;
        writeln!(
            f,
            "at the peak  munks {}, row cache {}, filters {}, indexes {}, write buffers {}, background work {}",
            Bytes(s.memory_peak_munks),
            Bytes(s.memory_peak_row_cache),
            Bytes(s.memory_peak_filters),
            Bytes(s.memory_peak_indexes),
            Bytes(s.memory_peak_write_buffers),
            Bytes(s.memory_peak_background)
        )?;
        writeln!(
            f,
            "put waits    {} in all, longest {}; lock {} ({}), munk full {} ({}), memory {} ({}), sync {} ({}), paced {} ({})",
            Micros(s.put_wait_micros()),
            Micros(s.put_wait_max_micros),
            s.put_lock_waits,
            Micros(s.put_lock_wait_micros),
            s.put_munk_full_waits,
            Micros(s.put_munk_full_wait_micros),
            s.put_memory_waits,
            Micros(s.put_memory_wait_micros),
            s.put_sync_waits,
            Micros(s.put_sync_wait_micros),
            s.put_pace_waits,
            Micros(s.put_pace_wait_micros)
        )?;
        if s.helper_tasks > 0 {
            writeln!(
                f,
                "helped       {} queued maintenance tasks run by the urgent thread while reads dominated, {}",
                s.helper_tasks,
                Micros(s.helper_task_micros)
            )?;
        }
        if s.inline_tasks > 0 {
            writeln!(
                f,
                "in line      {} maintenance tasks run by puts and gets themselves (no maintenance threads), {}",
                s.inline_tasks,
                Micros(s.inline_task_micros)
            )?;
        }
        write!(
            f,
            "snapshots    {} active, {} held over {} s",
            s.active_snapshots,
            s.long_lived_snapshots,
            LONG_LIVED_SNAPSHOT.as_secs()
        )?;
        if s.active_snapshots > 0 {
            write!(
                f,
                "; oldest {} old, {} versions behind",
                Micros(s.oldest_snapshot_age_micros),
                s.oldest_snapshot_lag
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "disk         {} funks opened, {} log syncs, {} cut from torn log tails",
            s.funks_opened,
            s.log_syncs,
            Bytes(s.torn_tail_bytes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stats with some of every kind of figure set.
    fn busy() -> Stats {
        Stats {
            puts: 1000,
            gets: 2000,
            gets_munk: 1500,
            user_bytes_written: 40_000,
            log_bytes_written: 60_000,
            table_bytes_written: 90_000,
            rebalances: 3,
            rebalance_micros: 4_500,
            rebalance_max_micros: 2_100,
            rebalance_table_bytes: 90_000,
            log_parts_skipped: 77,
            row_cache_hits: 3,
            row_cache_misses: 1,
            memory_budget: 64 << 20,
            memory_used: 3 << 20,
            active_snapshots: 1,
            oldest_snapshot_age_micros: 12_000_000,
            ..Stats::default()
        }
    }

    /// Checks `text` against the exposition format's grammar: HELP, then
    /// TYPE, then one sample, per metric; valid names; parseable values.
    fn check_exposition(text: &str) -> Vec<(String, String, f64)> {
        fn valid_name(n: &str) -> bool {
            let mut cs = n.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        }
        assert!(text.ends_with('\n'), "the text ends with a line feed");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len() % 3, 0);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for m in lines.chunks(3) {
            let help = m[0].strip_prefix("# HELP ").expect("HELP line");
            let (name, doc) = help.split_once(' ').expect("HELP has a text");
            assert!(valid_name(name), "{name}");
            assert!(!doc.is_empty() && !doc.contains('\n'));
            let ty = m[1].strip_prefix("# TYPE ").expect("TYPE line");
            let (tname, kind) = ty.split_once(' ').expect("TYPE has a kind");
            assert_eq!(tname, name);
            assert!(kind == "counter" || kind == "gauge", "{kind}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "{name}");
            }
            let (sname, value) = m[2].split_once(' ').expect("sample line");
            assert_eq!(sname, name);
            let v: f64 = value.parse().expect("sample value is a float");
            assert!(v.is_finite() && v >= 0.0);
            assert!(seen.insert(name.to_string()), "{name} twice");
            out.push((name.to_string(), kind.to_string(), v));
        }
        out
    }

    #[test]
    fn prometheus_text_follows_the_exposition_grammar() {
        let s = busy();
        let metrics = check_exposition(&s.to_prometheus("evendb"));
        assert_eq!(metrics.len(), s.fields().len() + s.derived().len());
        let get = |n: &str| metrics.iter().find(|m| m.0 == n).cloned().unwrap();
        assert_eq!(get("evendb_puts_total").2, s.puts as f64);
        assert_eq!(get("evendb_puts_total").1, "counter");
        assert_eq!(get("evendb_memory_used").1, "gauge");
        assert_eq!(
            get("evendb_rebalance_seconds_total").2,
            s.rebalance_micros as f64 / 1e6
        );
        assert_eq!(get("evendb_rebalance_max_seconds").1, "gauge");
        assert_eq!(get("evendb_row_cache_hit_rate").2, 0.75);
        assert!(metrics.iter().all(|m| m.0.starts_with("evendb_")));
    }

    #[test]
    fn prometheus_prefix_is_made_a_valid_name() {
        let text = Stats::default().to_prometheus("9my-db.x");
        check_exposition(&text);
        assert!(text.contains("\n_my_db_x_puts_total 0\n"), "{text}");
        let text = Stats::default().to_prometheus("");
        check_exposition(&text);
        assert!(text.contains("\nputs_total 0\n"));
    }

    #[test]
    fn json_parses_and_holds_every_figure_and_derived_value() {
        let s = busy();
        let doc: serde_json::Value = serde_json::from_str(&s.to_json()).expect("valid JSON");
        let obj = doc.as_object().expect("one object");
        assert_eq!(obj.len(), s.fields().len() + s.derived().len());
        for (name, v) in s.fields() {
            assert_eq!(obj[name].as_u64(), Some(v), "{name}");
        }
        for (name, v) in s.derived() {
            assert_eq!(obj[name].as_f64(), Some(v), "{name}");
        }
        assert_eq!(obj["row_cache_hit_rate"].as_f64(), Some(0.75));
        let empty: serde_json::Value = serde_json::from_str(&Stats::default().to_json()).unwrap();
        assert_eq!(empty["write_amplification"].as_f64(), Some(0.0));
    }

    #[test]
    fn display_is_a_table_of_the_main_figures() {
        let s = busy();
        let text = s.to_string();
        for label in [
            "operations",
            "written",
            "rebuilds",
            "funk rebalance",
            "split",
            "merge",
            "row cache",
            "log filters",
            "memory",
            "put waits",
            "snapshots",
        ] {
            assert!(text.contains(label), "{label} missing:\n{text}");
        }
        assert!(text.contains("3.0 MiB of 64.0 MiB (4.7%)"), "{text}");
        assert!(text.contains("oldest 12.0 s old"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() < 160), "{text}");
    }

    #[test]
    fn units_read_naturally() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(3 << 30).to_string(), "3.0 GiB");
        assert_eq!(Micros(999).to_string(), "999 µs");
        assert_eq!(Micros(1500).to_string(), "1.5 ms");
        assert_eq!(Micros(2_500_000).to_string(), "2.5 s");
    }
}
