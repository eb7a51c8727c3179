//! What every connection shares: the store, the settings that shape
//! replies, the key locks that make `SET NX`/`XX`, `DEL` and `MSET` atomic,
//! and the counters behind `INFO` and `/metrics`.

use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The settings commands need.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The password `AUTH` checks; `None`: no authentication.
    pub password: Option<Vec<u8>>,
    /// Bytes of replies one command may build (`MGET` of many large
    /// values); past it the command answers an error instead.
    pub max_reply: usize,
    /// The port clients connect to (for `INFO`).
    pub port: u16,
    /// The most connections served at once (for `INFO`).
    pub max_clients: usize,
    /// `sync` or `buffered` (for `INFO`).
    pub durability: &'static str,
}

/// Per-key mutual exclusion for the commands that read a key before
/// writing it (`SET NX`/`XX`/`GET`, `DEL`) and for `MSET`.
///
/// Invariants: every write the server makes to a key holds `all` shared
/// and the key's stripe; stripes are taken in ascending order, so two
/// multi-key commands never wait on each other in a cycle. Range deletes
/// hold `all` exclusively: a check-then-write command never straddles one.
#[derive(Debug)]
pub struct KeyLocks {
    all: RwLock<()>,
    stripes: Box<[Mutex<()>]>,
}

/// Stripes of [`KeyLocks`]: enough that unrelated keys rarely share one.
const STRIPES: usize = 1024;

/// The guards of a key write (see [`KeyLocks`]).
pub struct KeyGuard<'a> {
    _stripes: Vec<MutexGuard<'a, ()>>,
    _all: RwLockReadGuard<'a, ()>,
}

impl Default for KeyLocks {
    fn default() -> Self {
        KeyLocks {
            all: RwLock::new(()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl KeyLocks {
    fn stripe(key: &[u8]) -> usize {
        // FNV-1a: cheap and spreads short composite keys well.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        (h % STRIPES as u64) as usize
    }

    /// Locks the stripes of `keys`.
    pub fn keys<'a, K: AsRef<[u8]>>(&'a self, keys: impl IntoIterator<Item = K>) -> KeyGuard<'a> {
        let all = self.all.read();
        let mut idx: Vec<usize> = keys.into_iter().map(|k| Self::stripe(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        KeyGuard {
            _stripes: idx.into_iter().map(|i| self.stripes[i].lock()).collect(),
            _all: all,
        }
    }

    /// Excludes every key write (a range delete).
    pub fn everything(&self) -> RwLockWriteGuard<'_, ()> {
        self.all.write()
    }
}

/// Names of the commands counted one by one; anything else counts as
/// `other`.
pub const COUNTED: &[&str] = &[
    "get",
    "set",
    "del",
    "exists",
    "mget",
    "mset",
    "range",
    "prefix",
    "delrange",
    "delprefix",
    "flush",
    "ping",
    "echo",
    "hello",
    "auth",
    "info",
    "quit",
    "shutdown",
    "client",
    "select",
    "config",
    "command",
    "dbsize",
    "other",
];

/// Server counters (the engine keeps its own, in `Stats`).
#[derive(Debug)]
pub struct Metrics {
    pub started: Instant,
    pub connections_received: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub connections_current: AtomicU64,
    pub connections_timed_out: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub error_replies: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Commands by name, in the order of [`COUNTED`].
    pub commands: Box<[AtomicU64]>,
    /// Microseconds spent executing commands, in the order of [`COUNTED`].
    pub command_micros: Box<[AtomicU64]>,
}

impl Default for Metrics {
    fn default() -> Self {
        let zeros = || COUNTED.iter().map(|_| AtomicU64::new(0)).collect();
        Metrics {
            started: Instant::now(),
            connections_received: AtomicU64::new(0),
            connections_rejected: AtomicU64::new(0),
            connections_current: AtomicU64::new(0),
            connections_timed_out: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            error_replies: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            commands: zeros(),
            command_micros: zeros(),
        }
    }
}

impl Metrics {
    /// Counts one command named `name` (lowercase) that took `micros`.
    pub fn command(&self, name: &str, micros: u64) {
        let i = COUNTED
            .iter()
            .position(|c| *c == name)
            .unwrap_or(COUNTED.len() - 1);
        self.commands[i].fetch_add(1, Ordering::Relaxed);
        self.command_micros[i].fetch_add(micros, Ordering::Relaxed);
    }

    /// Commands executed in all.
    pub fn commands_total(&self) -> u64 {
        self.commands
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The server's figures in the Prometheus text format, after the
    /// engine's.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let mut one = |name: &str, kind: &str, help: &str, value: u64| {
            out.push_str(&format!(
                "# HELP evendb_server_{name} {help}\n# TYPE evendb_server_{name} {kind}\nevendb_server_{name} {value}\n"
            ));
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        one(
            "connections_received_total",
            "counter",
            "Connections accepted.",
            load(&self.connections_received),
        );
        one(
            "connections_rejected_total",
            "counter",
            "Connections refused at the client limit.",
            load(&self.connections_rejected),
        );
        one(
            "connections_timed_out_total",
            "counter",
            "Connections closed after the idle timeout.",
            load(&self.connections_timed_out),
        );
        one(
            "connections",
            "gauge",
            "Connections open now.",
            load(&self.connections_current),
        );
        one(
            "protocol_errors_total",
            "counter",
            "Connections closed for a malformed or oversized request.",
            load(&self.protocol_errors),
        );
        one(
            "error_replies_total",
            "counter",
            "Commands answered with an error.",
            load(&self.error_replies),
        );
        one(
            "received_bytes_total",
            "counter",
            "Request bytes read.",
            load(&self.bytes_in),
        );
        one(
            "sent_bytes_total",
            "counter",
            "Reply bytes written.",
            load(&self.bytes_out),
        );
        out.push_str("# HELP evendb_server_commands_total Commands executed, by command.\n");
        out.push_str("# TYPE evendb_server_commands_total counter\n");
        for (name, n) in COUNTED.iter().zip(self.commands.iter()) {
            out.push_str(&format!(
                "evendb_server_commands_total{{cmd=\"{name}\"}} {}\n",
                load(n)
            ));
        }
        out.push_str(
            "# HELP evendb_server_command_seconds_total Time spent executing commands, by command.\n",
        );
        out.push_str("# TYPE evendb_server_command_seconds_total counter\n");
        for (name, n) in COUNTED.iter().zip(self.command_micros.iter()) {
            out.push_str(&format!(
                "evendb_server_command_seconds_total{{cmd=\"{name}\"}} {}\n",
                load(n) as f64 / 1e6
            ));
        }
        out
    }
}

/// Everything the connections share.
#[derive(Debug)]
pub struct Shared {
    data: std::sync::Arc<crate::cluster::state_machine::DataStore>,
    /// The node's Raft side, with `--cluster`.
    pub cluster: Option<std::sync::Arc<crate::cluster::node::Cluster>>,
    pub settings: Settings,
    pub locks: KeyLocks,
    pub metrics: Metrics,
    next_client: AtomicU64,
}

impl Shared {
    pub fn new(
        data: std::sync::Arc<crate::cluster::state_machine::DataStore>,
        cluster: Option<std::sync::Arc<crate::cluster::node::Cluster>>,
        settings: Settings,
    ) -> Self {
        Shared {
            data,
            cluster,
            settings,
            locks: KeyLocks::default(),
            metrics: Metrics::default(),
            next_client: AtomicU64::new(1),
        }
    }

    /// The store (a cluster node's may be replaced by a snapshot).
    pub fn db(&self) -> evendb::Db {
        self.data.db()
    }

    /// True if pipelined plain SETs are written as one batch: `sync`
    /// durability (one durable commit for the run instead of one each),
    /// and no cluster (its writes go through Raft).
    pub fn groups_sets(&self) -> bool {
        self.settings.durability == "sync" && self.cluster.is_none()
    }

    /// A new connection's id (`CLIENT ID`, `HELLO`).
    pub fn client_id(&self) -> u64 {
        self.next_client.fetch_add(1, Ordering::Relaxed)
    }
}
