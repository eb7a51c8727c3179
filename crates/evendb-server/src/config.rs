//! Settings: command-line flags, optionally read first from a config file
//! in Redis's own style (one `name value` per line, `#` comments), whose
//! names are the long flags': a line `port 6390` is `--port 6390`. Flags on
//! the command line win over the file.

use clap::Parser;
use std::net::IpAddr;
use std::path::PathBuf;

/// Serve one evendb store over the Redis protocol.
///
/// Any Redis client or tool works: `redis-cli -p 6379 SET k v`. Besides
/// Redis's key commands (GET, SET with NX, XX or GET, DEL, EXISTS, MGET, MSET)
/// the server speaks RANGE, PREFIX, DELRANGE, DELPREFIX and FLUSH; see the
/// README's "Running as a server".
#[derive(Debug, Parser)]
#[command(name = "evendb-server", version, args_override_self = true)]
pub struct Config {
    /// Read settings from this file first (`name value` lines).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The store's directory (created if missing).
    #[arg(long, default_value = "evendb-data")]
    pub dir: PathBuf,
    /// The address to listen on. Anything but a loopback address needs a
    /// password (--requirepass or --requirepass-file).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The port to listen on (0: any free port, printed at start).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// The password clients must give with AUTH (or HELLO ... AUTH).
    #[arg(long, value_name = "PASSWORD", conflicts_with = "requirepass_file")]
    pub requirepass: Option<String>,
    /// Read the password from this file (its first line).
    #[arg(long, value_name = "FILE")]
    pub requirepass_file: Option<PathBuf>,
    /// The most connections served at once; more are refused.
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,
    /// Close a connection idle for this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g.
    /// 127.0.0.1:9379); off unless given.
    #[arg(long, value_name = "ADDR")]
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// `sync`: every acknowledged write is on disk first (an fsync per
    /// commit); `buffered`: writes reach the disk within --sync-interval-ms
    /// and a crash keeps a consistent prefix of them.
    #[arg(long, default_value = "buffered", value_parser = ["sync", "buffered"])]
    pub durability: String,
    /// How often a `buffered` store makes its writes durable.
    #[arg(long, default_value_t = 1000)]
    pub sync_interval_ms: u64,
    /// The store's memory budget (munks, row cache, filters, indexes),
    /// e.g. 512M or 4G.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub memory_budget: u64,
    /// Bytes of reply one command may build (an MGET of many large
    /// values); past it the command answers an error.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub max_reply_bytes: u64,
    /// Seconds a shutdown waits for open connections before closing them.
    #[arg(long, default_value_t = 5)]
    pub shutdown_grace: u64,
    /// Where commands run: `inline` on the I/O threads (no hand-off; a
    /// command that waits for the disk holds up its thread), `pool` on
    /// tokio's blocking pool (one hand-off per batch of pipelined
    /// commands; many commands can wait for the disk at once), or `auto`:
    /// `pool` in `sync` durability, whose every write waits for an fsync
    /// (and commits in groups only if many wait together), else `inline`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "inline", "pool"])]
    pub exec: String,
    /// Threads serving sockets (and, with inline execution, commands);
    /// default: one per core.
    #[arg(long)]
    pub io_threads: Option<usize>,
    /// Replicate the store through Raft with the other --cluster-members
    /// (docs/design.md §15): writes go through the leader, reads are
    /// linearizable unless a connection sends READONLY.
    #[arg(long, requires_all = ["cluster_id", "cluster_members"])]
    pub cluster: bool,
    /// This node's id among --cluster-members.
    #[arg(long)]
    pub cluster_id: Option<u64>,
    /// Every member as id@raft_addr/redis_addr, comma-separated, e.g.
    /// 1@127.0.0.1:7001/127.0.0.1:6381,2@127.0.0.1:7002/127.0.0.1:6382.
    /// The lowest id initializes a new cluster.
    #[arg(long)]
    pub cluster_members: Option<String>,
    /// Build a snapshot (and drop the log before it, keeping 1,000
    /// entries) every this many entries.
    #[arg(long, default_value_t = 5000)]
    pub cluster_snapshot_every: u64,
    /// Listen for Raft here instead of at this node's Raft address among
    /// the members (behind a proxy or NAT).
    #[arg(long, value_name = "ADDR")]
    pub cluster_listen: Option<String>,
    /// Make outgoing Raft connections from this local address.
    #[arg(long, value_name = "IP")]
    pub cluster_source_ip: Option<std::net::IpAddr>,
    /// Listen for Raft on a non-loopback address without a password. By
    /// default such a node refuses to start, as for --bind: with a
    /// password (the same on every node), peers prove they know it.
    #[arg(long)]
    pub cluster_insecure_raft: bool,
    /// For fault tests: every fsync of this node's stores takes this many
    /// milliseconds longer (a slow disk).
    #[arg(long, default_value_t = 0)]
    pub fault_sync_delay_ms: u64,
    /// Log lines as JSON objects (`json`) or text (`text`).
    #[arg(long, default_value = "json", value_parser = ["json", "text"])]
    pub log_format: String,
    /// Log level: error, warn, info, debug (connections), trace.
    #[arg(long, default_value = "info")]
    pub log_level: String,
}

/// `512M`, `4G`, `64K` or plain bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 10),
        Some('M') => (&s[..s.len() - 1], 20),
        Some('G') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{s:?} is not a size (bytes, or a number with K, M or G)"))
}

/// The arguments to parse: the config file's lines (if `--config` is given)
/// turned into flags, then the command line's own.
///
/// # Errors
/// The config file cannot be read, or a line has no value.
pub fn args_with_file(args: Vec<String>) -> Result<Vec<String>, String> {
    let file = args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--config=").map(str::to_string).or_else(|| {
            (a == "--config")
                .then(|| args.get(i + 1).cloned())
                .flatten()
        })
    });
    let Some(file) = file else {
        return Ok(args);
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read the config file {file}: {e}"))?;
    let mut out = vec![args.first().cloned().unwrap_or_default()];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("{file}:{}: `{line}` has no value", n + 1))?;
        if name == "config" {
            return Err(format!(
                "{file}:{}: a config file cannot name another",
                n + 1
            ));
        }
        out.push(format!("--{name}"));
        out.push(value.trim().trim_matches('"').to_string());
    }
    out.extend(args.into_iter().skip(1));
    Ok(out)
}

impl Config {
    /// The password, from the flag or the file.
    ///
    /// # Errors
    /// The password file cannot be read or is empty.
    pub fn password(&self) -> Result<Option<Vec<u8>>, String> {
        if let Some(p) = &self.requirepass {
            return Ok(Some(p.as_bytes().to_vec()));
        }
        let Some(f) = &self.requirepass_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(f)
            .map_err(|e| format!("cannot read the password file {}: {e}", f.display()))?;
        let first = text.lines().next().unwrap_or_default();
        if first.is_empty() {
            return Err(format!("the password file {} is empty", f.display()));
        }
        Ok(Some(first.as_bytes().to_vec()))
    }

    /// Checks what cannot be checked flag by flag: a non-loopback address
    /// needs a password (as Redis's protected mode).
    ///
    /// # Errors
    /// A message for the operator.
    pub fn check(&self, password: Option<&[u8]>) -> Result<(), String> {
        if !self.bind.is_loopback() && password.is_none() {
            return Err(format!(
                "refusing to listen on {} without a password: anyone who can reach it could \
                 read and change the store. Give --requirepass or --requirepass-file, or bind \
                 to 127.0.0.1",
                self.bind
            ));
        }
        if let Some(m) = self.metrics_bind.filter(|m| !m.ip().is_loopback()) {
            log::warn!("metrics on {m} are readable by anyone who can reach it (no password)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_gives_flags_the_command_line_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.conf");
        std::fs::write(&f, "# comment\nport 7000\nmaxclients 5\n\nbind 127.0.0.1\n").unwrap();
        let args = vec![
            "evendb-server".to_string(),
            "--config".into(),
            f.display().to_string(),
            "--port".into(),
            "7001".into(),
        ];
        let c = Config::parse_from(args_with_file(args).unwrap());
        assert_eq!((c.port, c.maxclients), (7001, 5));
    }

    #[test]
    fn a_public_address_needs_a_password() {
        let c = Config::parse_from(["evendb-server", "--bind", "0.0.0.0"]);
        assert!(c.check(None).unwrap_err().contains("without a password"));
        assert!(c.check(Some(b"pw")).is_ok());
        let c = Config::parse_from(["evendb-server", "--bind", "::1"]);
        assert!(c.check(None).is_ok());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
