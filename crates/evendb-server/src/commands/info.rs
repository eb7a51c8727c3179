//! `INFO [section ...]`: the server's and the engine's figures in Redis's
//! layout (`# Section` headers, `name:value` lines, CRLF line ends).
//!
//! Sections: `server`, `clients`, `memory`, `persistence`, `stats`,
//! `commandstats`, `cluster` (with `--cluster`) and `evendb` (every figure of the engine's `Stats`). No
//! argument, `default`, `all` and `everything` give them all.

use super::{After, Reply};
use crate::resp::Out;
use crate::state::{Shared, COUNTED};
use std::fmt::Write;
use std::sync::atomic::Ordering;

const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "commandstats",
    "cluster",
    "evendb",
];

pub(super) fn info(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let wanted: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| matches!(w.as_str(), "all" | "default" | "everything"));
    let stats = shared.db().stats();
    let m = &shared.metrics;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut text = String::new();
    for section in SECTIONS {
        if !all && !wanted.iter().any(|w| w == section) {
            continue;
        }
        if *section == "cluster" && shared.cluster.is_none() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        let title = format!("{}{}", section[..1].to_ascii_uppercase(), &section[1..]);
        let _ = write!(text, "# {title}\r\n");
        let mut line = |name: &str, value: String| {
            let _ = write!(text, "{name}:{value}\r\n");
        };
        match *section {
            "server" => {
                // Clients that check the server's version see a Redis 7.
                line("redis_version", "7.0.0".into());
                line("evendb_version", env!("CARGO_PKG_VERSION").into());
                line("redis_mode", "standalone".into());
                line("os", std::env::consts::OS.into());
                line("arch_bits", (usize::BITS).to_string());
                line("process_id", std::process::id().to_string());
                line("tcp_port", shared.settings.port.to_string());
                line(
                    "uptime_in_seconds",
                    m.started.elapsed().as_secs().to_string(),
                );
                line("store_path", shared.db().path().display().to_string());
            }
            "clients" => {
                line(
                    "connected_clients",
                    load(&m.connections_current).to_string(),
                );
                line("maxclients", shared.settings.max_clients.to_string());
            }
            "memory" => {
                line("used_memory", stats.memory_used.to_string());
                line("used_memory_peak", stats.memory_peak.to_string());
                line("maxmemory", stats.memory_budget.to_string());
                line("maxmemory_policy", "evendb-budget".into());
            }
            "persistence" => {
                line("durability", shared.settings.durability.into());
                line("loading", "0".into());
            }
            "stats" => {
                line(
                    "total_connections_received",
                    load(&m.connections_received).to_string(),
                );
                line("total_commands_processed", m.commands_total().to_string());
                line("total_net_input_bytes", load(&m.bytes_in).to_string());
                line("total_net_output_bytes", load(&m.bytes_out).to_string());
                line(
                    "rejected_connections",
                    load(&m.connections_rejected).to_string(),
                );
                line("total_error_replies", load(&m.error_replies).to_string());
                line(
                    "total_protocol_errors",
                    load(&m.protocol_errors).to_string(),
                );
            }
            "commandstats" => {
                for (i, name) in COUNTED.iter().enumerate() {
                    let calls = load(&m.commands[i]);
                    if calls > 0 {
                        let usec = load(&m.command_micros[i]);
                        line(
                            &format!("cmdstat_{name}"),
                            format!(
                                "calls={calls},usec={usec},usec_per_call={:.2}",
                                usec as f64 / calls as f64
                            ),
                        );
                    }
                }
            }
            "cluster" => {
                if let Some(c) = &shared.cluster {
                    for (name, value) in c.status() {
                        line(&name, value);
                    }
                }
            }
            _ => {
                for (name, value) in stats.fields() {
                    line(name, value.to_string());
                }
                for (name, value) in stats.derived() {
                    line(name, format!("{value:.4}"));
                }
            }
        }
    }
    out.text(&text);
    Ok(After::Continue)
}
