//! A cluster node: starting Raft on the stores, and what the commands call
//! (writes through the leader, linearizable reads, membership, status).

use super::log_store::LogStore;
use super::network::{self, Network};
use super::state_machine::{DataStore, StateMachine};
use super::{ClusterNode, Request, Response, TypeConfig};
use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::{Config, Raft, ServerState};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Why a cluster command could not run here.
#[derive(Debug)]
pub enum ClusterError {
    /// Another node leads: the client should ask it (its Redis address).
    Moved(String),
    /// No leader is known (an election is running).
    NoLeader,
    Other(String),
}

impl ClusterError {
    /// The error reply (Redis cluster's `MOVED` for the first).
    pub fn reply(&self) -> String {
        match self {
            ClusterError::Moved(addr) => format!("MOVED 0 {addr}"),
            ClusterError::NoLeader => "CLUSTERDOWN no leader is elected yet; retry shortly".into(),
            ClusterError::Other(e) => format!("ERR cluster: {e}"),
        }
    }
}

/// How a node runs, beyond its id and the members.
#[derive(Debug, Clone, Default)]
pub struct NodeOptions {
    /// A snapshot every this many entries.
    pub snapshot_every: u64,
    /// Where to listen for Raft (default: this node's Raft address).
    pub listen: Option<String>,
    /// The local address of outgoing Raft connections.
    pub source: Option<std::net::IpAddr>,
    /// The cluster's password (every node's `--requirepass`): peers prove
    /// they know it ([`network::PeerKey`]).
    pub password: Option<Vec<u8>>,
    /// Listen for Raft on a non-loopback address without a password.
    pub insecure_raft: bool,
}

/// A running node.
pub struct Cluster {
    pub id: u64,
    pub raft: Raft<TypeConfig>,
    pub me: ClusterNode,
    snapshots: Arc<super::state_machine::SnapshotCounts>,
    /// The commit index as Raft last saved it.
    committed: super::log_store::Committed,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cluster({})", self.id)
    }
}

/// How Raft is tuned (etcd's defaults): heartbeats every 100 ms, an
/// election after 1-2 s without one (150-300 ms elected new leaders under
/// load on two busy cores, where a heartbeat can wait that long); a
/// snapshot every `snapshot_every` entries, keeping the last 1,000 (or
/// fewer) entries after it for followers a little behind.
fn config(snapshot_every: u64) -> Result<Arc<Config>, String> {
    let c = Config {
        cluster_name: "evendb".into(),
        heartbeat_interval: 100,
        election_timeout_min: 1000,
        election_timeout_max: 2000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(snapshot_every.max(1)),
        max_in_snapshot_log_to_keep: 1000.min(snapshot_every / 2),
        snapshot_max_chunk_size: 1 << 20,
        ..Default::default()
    };
    c.validate().map(Arc::new).map_err(|e| e.to_string())
}

impl Cluster {
    /// Starts node `id` of `members` with its stores under `dir`; the
    /// lowest-numbered member initializes a new cluster.
    ///
    /// # Errors
    /// A store cannot be opened, or the Raft address not bound.
    pub async fn start(
        id: u64,
        members: BTreeMap<u64, ClusterNode>,
        dir: &Path,
        options: evendb::Options,
        tuning: NodeOptions,
    ) -> Result<(Arc<Cluster>, Arc<DataStore>), String> {
        let me = members
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("--cluster-id {id} is not among --cluster-members"))?;
        // Bound first: whether the address is loopback is known only once
        // a name is resolved, and nothing is opened for a refused one.
        let listen = tuning.listen.clone().unwrap_or_else(|| me.raft.clone());
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen for Raft on {listen}: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("cannot read the Raft address: {e}"))?;
        check_raft_address(bound, tuning.password.is_some(), tuning.insecure_raft)?;
        let key = network::PeerKey::new(tuning.password.as_deref());
        let log = LogStore::open(&dir.join("raft"), options.clone())
            .map_err(|e| format!("cannot open the Raft log store: {e}"))?;
        let committed = log.committed();
        let data = DataStore::open(dir, options)?;
        let sm = StateMachine::new(data.clone(), &dir.join("snapshots"))?;
        let snapshots = sm.counts.clone();
        let raft = Raft::new(
            id,
            config(tuning.snapshot_every)?,
            Network {
                source: tuning.source,
                key: key.clone(),
                counts: snapshots.clone(),
            },
            log,
            sm,
        )
        .await
        .map_err(|e| format!("cannot start Raft: {e}"))?;
        tokio::spawn(network::serve(listener, raft.clone(), key));
        let first = members.keys().next().copied();
        if first == Some(id) && !raft.is_initialized().await.map_err(|e| e.to_string())? {
            raft.initialize(members)
                .await
                .map_err(|e| format!("cannot initialize the cluster: {e}"))?;
            log::info!("initialized a new cluster");
        }
        Ok((
            Arc::new(Cluster {
                id,
                raft,
                me,
                snapshots,
                committed,
            }),
            data,
        ))
    }

    fn redirect(&self, leader: Option<u64>, node: Option<ClusterNode>) -> ClusterError {
        match (leader, node) {
            (_, Some(n)) => ClusterError::Moved(n.redis),
            (Some(l), None) => self
                .raft
                .metrics()
                .borrow()
                .membership_config
                .membership()
                .get_node(&l)
                .map_or(ClusterError::NoLeader, |n| {
                    ClusterError::Moved(n.redis.clone())
                }),
            (None, None) => ClusterError::NoLeader,
        }
    }

    /// Proposes `req` and waits for it to be applied here (the leader).
    ///
    /// # Errors
    /// Not the leader (with its address), or Raft failed.
    pub async fn write(&self, req: Request) -> Result<Response, ClusterError> {
        match self.raft.client_write(req).await {
            Ok(r) => Ok(r.data),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                Err(self.redirect(f.leader_id, f.leader_node))
            }
            Err(e) => Err(ClusterError::Other(e.to_string())),
        }
    }

    /// Waits until this node (the leader) has applied everything committed
    /// when the call began, confirmed by a quorum (Raft's read index): a
    /// read after it is linearizable.
    ///
    /// # Errors
    /// Not the leader (with its address), or Raft failed.
    pub async fn linearize(&self) -> Result<(), ClusterError> {
        match self.raft.ensure_linearizable().await {
            Ok(_) => Ok(()),
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                Err(self.redirect(f.leader_id, f.leader_node))
            }
            Err(e) => Err(ClusterError::Other(e.to_string())),
        }
    }

    /// Adds node `id` as a voter: first as a learner that catches up.
    ///
    /// # Errors
    /// Not the leader, or Raft failed.
    pub async fn add_node(&self, id: u64, node: ClusterNode) -> Result<(), ClusterError> {
        let fail = |e: String| ClusterError::Other(e);
        self.raft
            .add_learner(id, node, true)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let mut voters = self.voters();
        voters.insert(id);
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| fail(e.to_string()))?;
        Ok(())
    }

    /// Removes node `id` from the voters.
    ///
    /// # Errors
    /// Not the leader, or Raft failed.
    pub async fn remove_node(&self, id: u64) -> Result<(), ClusterError> {
        let mut voters = self.voters();
        voters.remove(&id);
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| ClusterError::Other(e.to_string()))?;
        Ok(())
    }

    fn voters(&self) -> BTreeSet<u64> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .voter_ids()
            .collect()
    }

    /// `name:value` lines for `INFO` and the metrics: role, term, leader,
    /// log, commit and apply positions, replication lag, snapshots.
    pub fn status(&self) -> Vec<(String, String)> {
        let m = self.raft.metrics().borrow().clone();
        let count = |c: &std::sync::atomic::AtomicU64| {
            c.load(std::sync::atomic::Ordering::Relaxed).to_string()
        };
        let role = match m.state {
            ServerState::Leader => "leader",
            ServerState::Follower => "follower",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            ServerState::Shutdown => "shutdown",
        };
        let idx = |l: Option<openraft::LogId<u64>>| l.map_or(0, |l| l.index);
        let mut out = vec![
            ("cluster_node_id".into(), self.id.to_string()),
            ("cluster_role".into(), role.into()),
            ("cluster_term".into(), m.current_term.to_string()),
            (
                "cluster_leader".into(),
                m.current_leader.map_or("none".into(), |l| l.to_string()),
            ),
            (
                "cluster_last_log_index".into(),
                idx(m
                    .last_log_index
                    .map(|i| openraft::LogId::new(Default::default(), i)))
                .to_string(),
            ),
            (
                "cluster_commit_index".into(),
                idx(*self.committed.lock()).to_string(),
            ),
            (
                "cluster_applied_index".into(),
                idx(m.last_applied).to_string(),
            ),
            ("cluster_snapshot_index".into(), idx(m.snapshot).to_string()),
            (
                "cluster_snapshots_built".into(),
                count(&self.snapshots.built),
            ),
            (
                "cluster_snapshots_installed".into(),
                count(&self.snapshots.installed),
            ),
            ("cluster_snapshots_sent".into(), count(&self.snapshots.sent)),
            (
                "cluster_snapshot_bytes_sent".into(),
                count(&self.snapshots.sent_bytes),
            ),
            (
                "cluster_voters".into(),
                self.voters()
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        if let Some(repl) = &m.replication {
            let last = m.last_log_index.unwrap_or(0);
            for (id, matched) in repl {
                let lag = last.saturating_sub(idx(*matched));
                out.push((format!("cluster_replication_lag_{id}"), lag.to_string()));
            }
        }
        out
    }
}

/// The Raft port's protected mode, the RESP port's rule: a node whose Raft
/// port is reachable from other hosts must have a password (which its peers
/// then prove they know), unless the operator says otherwise.
///
/// # Errors
/// A message for the operator.
pub fn check_raft_address(
    bound: std::net::SocketAddr,
    password: bool,
    insecure: bool,
) -> Result<(), String> {
    if bound.ip().is_loopback() || password {
        return Ok(());
    }
    if insecure {
        log::warn!(
            "Raft on {bound} without a password: any host that reaches it can join the \
             cluster's replication and rewrite the store"
        );
        return Ok(());
    }
    Err(format!(
        "refusing to listen for Raft on {bound} without a password: any host that reaches it \
         could send log entries and rewrite the store. Give every node the same \
         --requirepass (or --requirepass-file), use loopback addresses, or pass \
         --cluster-insecure-raft on a network where every host is trusted"
    ))
}
