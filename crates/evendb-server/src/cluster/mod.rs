//! Replication: `evendb-server --cluster` keeps one store on several nodes
//! through Raft, as implemented by the `openraft` crate (no consensus code
//! of our own). The Raft log and its vote live in an evendb store of their
//! own (`<dir>/raft`, `Sync` durability: an append is one journaled
//! commit); the state machine is the node's data store (`<dir>/data-*`).
//!
//! - [`log_store`]: the Raft log on evendb;
//! - [`state_machine`]: applying commands to the data store, snapshots;
//! - [`network`]: Raft's messages between nodes over TCP;
//! - [`node`]: starting a node, and what commands call.

pub mod log_store;
pub mod network;
pub mod node;
pub mod state_machine;

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a node is reached: its Raft address (other nodes) and its
/// Redis-protocol address (clients, in `MOVED` redirects).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterNode {
    pub raft: String,
    pub redis: String,
}

impl fmt::Display for ClusterNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "raft {} redis {}", self.raft, self.redis)
    }
}

/// A write proposed through the leader; applied in log order on every node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// `SET`, with its condition, evaluated when applied.
    Set {
        key: Vec<u8>,
        value: Vec<u8>,
        cond: SetCond,
        get: bool,
    },
    /// `DEL`: answers how many of the keys existed.
    Del { keys: Vec<Vec<u8>> },
    /// `MSET`.
    MSet { pairs: Vec<(Vec<u8>, Vec<u8>)> },
    /// `DELRANGE` / `DELPREFIX` as a half-open range (`None`: unbounded).
    DelRange {
        lo: Vec<u8>,
        lo_excluded: bool,
        hi: Option<Vec<u8>>,
        hi_included: bool,
    },
}

/// `SET`'s condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetCond {
    Always,
    /// `NX`: only if absent.
    Absent,
    /// `XX`: only if present.
    Present,
}

/// What applying a [`Request`] answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    #[default]
    Ok,
    /// `SET` whose condition failed.
    NotSet,
    /// `SET ... GET`: the value before.
    Old(Option<Vec<u8>>),
    /// `DEL`: keys removed.
    Count(i64),
}

openraft::declare_raft_types!(
    /// The Raft types of an evendb cluster.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = u64,
        Node = ClusterNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

/// Keys at or above this prefix are the cluster's own (the state machine's
/// applied position): clients may not write them, and reads stop before.
pub const RESERVED_PREFIX: &[u8] = b"\xff\xff\xffevendb-raft/";

/// The data store key of the applied position.
pub(crate) fn applied_key() -> Vec<u8> {
    [RESERVED_PREFIX, b"applied"].concat()
}

/// A storage error for openraft from anything displayable.
pub(crate) fn io_err(e: impl fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

pub(crate) type StorageResult<T> = Result<T, openraft::StorageError<u64>>;

/// The members given on the command line: `id@raft_addr/redis_addr,...`.
///
/// # Errors
/// A member that does not parse.
pub fn parse_members(text: &str) -> Result<std::collections::BTreeMap<u64, ClusterNode>, String> {
    let mut out = std::collections::BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("--cluster-members: `{part}` is not id@raft_addr/redis_addr");
        let (id, addrs) = part.split_once('@').ok_or_else(bad)?;
        let (raft, redis) = addrs.split_once('/').ok_or_else(bad)?;
        let id: u64 = id.parse().map_err(|_| bad())?;
        out.insert(
            id,
            ClusterNode {
                raft: raft.to_string(),
                redis: redis.to_string(),
            },
        );
    }
    if out.is_empty() {
        return Err("--cluster-members names no member".into());
    }
    Ok(out)
}
