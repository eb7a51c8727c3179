//! Three `evendb-server --cluster` processes on loopback ports: writes go
//! through the leader, followers redirect, a killed leader is replaced
//! without losing an acknowledged write, a restarted node catches up (from
//! a snapshot once the log it missed is gone), and a register workload
//! (reads, writes, compare-and-set) under faults is checked for
//! linearizability.

mod common;

use common::linearizable::{self, Kind, Op};
use common::proxy::Proxy;
use common::{Client, Reply, Server};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Ports no one listens on now (the listeners are dropped at once).
fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

struct Cluster {
    members: String,
    redis: Vec<u16>,
    nodes: Vec<Option<Server>>,
    extra: Vec<String>,
    /// With proxies: each node's proxy, and where the node really listens.
    proxies: Vec<Proxy>,
    listen: Vec<u16>,
    /// Last, so that it is removed after the nodes are killed (fields
    /// drop in order): a node outliving its directory logs I/O errors.
    root: tempfile::TempDir,
}

/// The loopback address node `i` connects to its peers from.
fn source(i: usize) -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, 0, 11 + i as u8])
}

impl Cluster {
    fn start(extra: &[&str]) -> Cluster {
        Self::start_with(extra, false)
    }

    /// Three nodes; with `proxied`, each behind a [`Proxy`] that can cut
    /// it off ([`Cluster::partition`]).
    fn start_with(extra: &[&str], proxied: bool) -> Cluster {
        let ports = free_ports(9);
        let members: Vec<String> = (0..3)
            .map(|i| {
                format!(
                    "{}@127.0.0.1:{}/127.0.0.1:{}",
                    i + 1,
                    ports[3 + i],
                    ports[i]
                )
            })
            .collect();
        let mut proxies = Vec::new();
        if proxied {
            for i in 0..3 {
                let l = std::net::TcpListener::bind(("127.0.0.1", ports[3 + i])).unwrap();
                let to = std::net::SocketAddr::from(([127, 0, 0, 1], ports[6 + i]));
                proxies.push(Proxy::start(l, to));
            }
        }
        let mut c = Cluster {
            root: tempfile::tempdir().unwrap(),
            members: members.join(","),
            redis: ports[..3].to_vec(),
            nodes: vec![None, None, None],
            extra: extra.iter().map(|s| s.to_string()).collect(),
            proxies,
            listen: ports[6..].to_vec(),
        };
        for i in 0..3 {
            c.restart(i);
        }
        c
    }

    /// Cuts node `i` off from the others, both ways (or heals it).
    fn partition(&self, i: usize, on: bool) {
        self.proxies[i].isolate(on);
        for (j, p) in self.proxies.iter().enumerate() {
            if j != i {
                p.block(source(i), on);
            }
        }
    }

    fn dir(&self, i: usize) -> std::path::PathBuf {
        self.root.path().join(format!("n{}", i + 1))
    }

    fn restart(&mut self, i: usize) {
        self.restart_with(i, &[]);
    }

    /// Restarts node `i` with `more` flags.
    fn restart_with(&mut self, i: usize, more: &[&str]) {
        let id = (i + 1).to_string();
        let mut flags = vec![
            "--cluster",
            "--cluster-id",
            &id,
            "--cluster-members",
            &self.members,
        ];
        flags.extend(self.extra.iter().map(String::as_str));
        flags.extend_from_slice(more);
        let (listen, from) = (
            format!("127.0.0.1:{}", self.listen[i]),
            source(i).to_string(),
        );
        if !self.proxies.is_empty() {
            flags.extend(["--cluster-listen", &listen, "--cluster-source-ip", &from]);
        }
        let dir = self.dir(i);
        self.nodes[i] = Some(Server::start_on(Path::new(&dir), self.redis[i], &flags));
    }

    fn kill(&mut self, i: usize) {
        if let Some(s) = self.nodes[i].take() {
            s.kill();
        }
    }

    /// The node that accepts a write now, waiting up to `limit`.
    fn leader(&self, limit: Duration) -> usize {
        let t = Instant::now();
        while t.elapsed() < limit {
            for i in (0..3).filter(|&i| self.nodes[i].is_some()) {
                if let Some(mut c) = Client::try_connect(self.redis[i], Duration::from_secs(2)) {
                    let sent = c.try_send_raw(&Client::encode(&[b"SET", b"probe", b"x"]));
                    if sent.is_ok() && c.read() == Some(Reply::ok()) {
                        return i;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no leader within {limit:?}");
    }

    fn client(&self, i: usize) -> Client {
        Client::connect(self.redis[i])
    }

    /// `key` as node `i` has it, read without the leader (`READONLY`).
    fn local(&self, i: usize, key: &str) -> Reply {
        let mut c = self.client(i);
        assert_eq!(c.cmd("READONLY"), Reply::ok());
        c.cmd(&format!("GET {key}"))
    }

    /// Waits until node `i` has `key` = `value` locally.
    fn wait_local(&self, i: usize, key: &str, value: &str) {
        let t = Instant::now();
        while self.local(i, key) != Reply::bulk(value) {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "node {} never got {key}",
                i + 1
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn http_get(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

fn info(c: &mut Client, field: &str) -> String {
    let Reply::Bulk(text) = c.cmd("CLUSTER INFO") else {
        panic!("CLUSTER INFO")
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("{field} not in {text}"))
        .trim()
        .to_string()
}

#[test]
fn writes_go_through_the_leader_and_followers_redirect() {
    let c = Cluster::start(&["--metrics-bind", "127.0.0.1:0"]);
    let l = c.leader(Duration::from_secs(20));
    let mut leader = c.client(l);
    let commit = |c: &mut Client| -> u64 { info(c, "cluster_commit_index").parse().unwrap() };
    let before = commit(&mut leader);
    assert!(before > 0, "the probe write is committed");
    assert_eq!(leader.cmd("MSET a 1 b 2"), Reply::ok());
    // An acknowledged write is committed: the index moved past it.
    assert_eq!(commit(&mut leader), before + 1);
    assert_eq!(leader.cmd("SET a 3 NX"), Reply::Nil);
    assert_eq!(leader.cmd("SET a 4 GET"), Reply::bulk("1"));
    assert_eq!(leader.cmd("DEL b zz"), Reply::Int(1));
    assert_eq!(leader.cmd("GET a"), Reply::bulk("4"));
    assert_eq!(
        leader.cmd("CLUSTER INFO").clone(),
        leader.cmd("CLUSTER INFO")
    );
    assert_eq!(info(&mut leader, "cluster_role"), "leader");
    let metrics = http_get(c.nodes[l].as_ref().unwrap().metrics.as_deref().unwrap());
    assert!(
        metrics.contains("evendb_cluster_role{role=\"leader\"} 1\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nevendb_cluster_term "));
    let in_metrics: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("evendb_cluster_commit_index "))
        .unwrap_or_else(|| panic!("no commit index in {metrics}"))
        .parse()
        .unwrap();
    assert!(
        in_metrics >= before + 4,
        "{in_metrics} after 4 writes past {before}"
    );
    assert!(metrics.contains("# TYPE evendb_cluster_snapshots_sent counter\n"));
    assert!(metrics.contains("evendb_cluster_replication_lag{peer="));
    let f = (l + 1) % 3;
    let mut follower = c.client(f);
    let moved = format!("MOVED 0 127.0.0.1:{}", c.redis[l]);
    assert_eq!(follower.cmd("SET a 5"), Reply::Error(moved.clone()));
    // A linearizable read asks the leader too.
    assert_eq!(follower.cmd("GET a"), Reply::Error(moved));
    assert_eq!(info(&mut follower, "cluster_role"), "follower");
    // Every node applies the same writes.
    for i in 0..3 {
        c.wait_local(i, "a", "4");
        assert_eq!(c.local(i, "b"), Reply::Nil);
    }
    // Range deletes replicate; the cluster's own keys stay out of reach.
    assert_eq!(leader.cmd("DELRANGE - +"), Reply::ok());
    assert_eq!(leader.cmd("RANGE - +").pairs().1, vec![]);
    assert!(matches!(
        leader.call(&[b"SET", b"\xff\xff\xffevendb-raft/applied", b"x"]),
        Reply::Error(e) if e.contains("cluster's own")
    ));
    assert_eq!(leader.cmd("SET after-delete yes"), Reply::ok());
    c.wait_local(f, "after-delete", "yes");
}

#[test]
fn a_node_joins_and_another_leaves() {
    let c = Cluster::start(&[]);
    let l = c.leader(Duration::from_secs(20));
    let mut leader = c.client(l);
    for i in 0..50 {
        assert_eq!(leader.cmd(&format!("SET j{i:02} {i}")), Reply::ok());
    }
    // A fourth node, started with every member named (it does not
    // initialize: it is not the lowest id), joins through the leader.
    let ports = free_ports(2);
    let four = format!("4@127.0.0.1:{}/127.0.0.1:{}", ports[1], ports[0]);
    let members = format!("{},{four}", c.members);
    let dir = c.root.path().join("n4");
    let n4 = Server::start_on(
        &dir,
        ports[0],
        &[
            "--cluster",
            "--cluster-id",
            "4",
            "--cluster-members",
            &members,
        ],
    );
    let (raft4, redis4) = (
        format!("127.0.0.1:{}", ports[1]),
        format!("127.0.0.1:{}", ports[0]),
    );
    assert_eq!(
        leader.call(&[
            b"CLUSTER",
            b"ADDNODE",
            b"4",
            raft4.as_bytes(),
            redis4.as_bytes()
        ]),
        Reply::ok()
    );
    assert_eq!(info(&mut leader, "cluster_voters"), "1,2,3,4");
    let mut c4 = n4.client();
    assert_eq!(c4.cmd("READONLY"), Reply::ok());
    let t = Instant::now();
    while c4.cmd("GET j49") != Reply::bulk("49") {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "node 4 never caught up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A follower leaves; writes go on with three voters.
    let gone = (0..3).find(|&i| i != l).unwrap() + 1;
    assert_eq!(
        leader.cmd(&format!("CLUSTER REMOVENODE {gone}")),
        Reply::ok()
    );
    let voters: Vec<String> = (1..=4)
        .filter(|&i| i != gone)
        .map(|i| i.to_string())
        .collect();
    assert_eq!(info(&mut leader, "cluster_voters"), voters.join(","));
    assert_eq!(leader.cmd("SET after-leave 1"), Reply::ok());
    let t = Instant::now();
    while c4.cmd("GET after-leave") != Reply::bulk("1") {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "node 4 never got the write"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_killed_leader_is_replaced_and_no_acknowledged_write_is_lost() {
    let mut c = Cluster::start(&["--cluster-snapshot-every", "300"]);
    let l = c.leader(Duration::from_secs(20));
    let mut acked = Vec::new();
    let mut leader = c.client(l);
    for i in 0..200 {
        assert_eq!(leader.cmd(&format!("SET k{i:04} {i}")), Reply::ok());
        acked.push(i);
    }
    c.kill(l);
    let killed_at = Instant::now();
    let l2 = c.leader(Duration::from_secs(10));
    let failover = killed_at.elapsed();
    assert_ne!(l2, l);
    let mut leader = c.client(l2);
    let lost = acked
        .iter()
        .filter(|i| leader.cmd(&format!("GET k{i:04}")) != Reply::bulk(i.to_string()))
        .count();
    eprintln!(
        "figures: leader kill: node {} accepted a write {:.2} s after the kill; \
         {} acknowledged writes re-read from it, {lost} lost",
        l2 + 1,
        failover.as_secs_f64(),
        acked.len()
    );
    assert_eq!(lost, 0, "acknowledged writes lost");
    // Past the snapshot interval while the old leader is down: it comes
    // back behind the purged log and catches up from a snapshot.
    for i in 200..1000 {
        assert_eq!(leader.cmd(&format!("SET k{i:04} {i}")), Reply::ok());
    }
    let restarted_at = Instant::now();
    c.restart(l);
    c.wait_local(l, "k0999", "999");
    let caught_up = restarted_at.elapsed();
    // Every write, as the restarted node has it.
    let mut back = c.client(l);
    assert_eq!(back.cmd("READONLY"), Reply::ok());
    let missing = (0..1000)
        .filter(|i| back.cmd(&format!("GET k{i:04}")) != Reply::bulk(i.to_string()))
        .count();
    assert_eq!(info(&mut back, "cluster_role"), "follower");
    let snap: u64 = info(&mut back, "cluster_snapshot_index").parse().unwrap();
    assert!(
        snap > 200,
        "the restarted node took a snapshot (index {snap})"
    );
    let mut leader = c.client(l2);
    assert!(
        info(&mut leader, "cluster_snapshots_sent")
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(
        info(&mut leader, "cluster_snapshot_bytes_sent")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    eprintln!(
        "figures: restart: the killed node caught up {:.2} s after its restart, from a \
         snapshot at index {snap}; 1000 acknowledged writes re-read from it, {missing} missing",
        caught_up.as_secs_f64()
    );
    assert_eq!(missing, 0, "the restarted node misses acknowledged writes");
}

#[test]
fn a_node_restarted_alone_applies_the_entries_it_knew_were_committed() {
    let mut c = Cluster::start(&[]);
    let l = c.leader(Duration::from_secs(20));
    let mut leader = c.client(l);
    for i in 0..50 {
        assert_eq!(leader.cmd(&format!("SET r{i:02} {i}")), Reply::ok());
    }
    let committed: u64 = info(&mut leader, "cluster_commit_index").parse().unwrap();
    for i in 0..3 {
        c.kill(i);
    }
    // Alone, it hears of no commit from anyone: what it applies at the
    // start is what its own log store kept (a commit index saved with the
    // append after it, so at most one write behind).
    c.restart(l);
    let mut back = c.client(l);
    let kept: u64 = info(&mut back, "cluster_commit_index").parse().unwrap();
    let applied: u64 = info(&mut back, "cluster_applied_index").parse().unwrap();
    assert!(
        kept + 1 >= committed && kept <= committed,
        "committed {committed} before the kill, {kept} after"
    );
    assert!(applied >= kept, "applied {applied} of {kept} committed");
    assert_eq!(back.cmd("READONLY"), Reply::ok());
    assert_eq!(back.cmd("GET r48"), Reply::bulk("48"));
}

#[test]
fn the_checker_accepts_and_rejects_hand_made_histories() {
    linearizable::self_test();
}

#[test]
fn registers_stay_linearizable_across_a_leader_kill() {
    let mut c = Cluster::start(&[]);
    registers_under(&mut c, "registers, leader kill", |c, l, _| c.kill(l));
}

#[test]
fn registers_stay_linearizable_across_a_partition_of_the_leader() {
    let mut c = Cluster::start_with(&[], true);
    // Cut off until the others have elected a leader and taken writes
    // (the pinned reader meanwhile asks the old leader), then healed.
    registers_under(&mut c, "registers, leader partitioned", |c, l, resumed| {
        c.partition(l, true);
        resumed();
        std::thread::sleep(Duration::from_millis(1000));
        c.partition(l, false);
        std::thread::sleep(Duration::from_millis(1500));
    });
    // Healed: one leader, and every node has the last write.
    let l = c.leader(Duration::from_secs(10));
    assert_eq!(c.client(l).cmd("SET healed yes"), Reply::ok());
    for i in 0..3 {
        c.wait_local(i, "healed", "yes");
    }
}

#[test]
fn registers_stay_linearizable_with_a_slow_disk_and_a_leader_kill() {
    let mut c = Cluster::start(&[]);
    // A follower whose every fsync takes 30 ms longer; then the leader
    // dies, and the slow node may have to lead.
    let l = c.leader(Duration::from_secs(20));
    let slow = (l + 1) % 3;
    c.kill(slow);
    c.restart_with(slow, &["--fault-sync-delay-ms", "30"]);
    registers_under(&mut c, "registers, slow disk and leader kill", |c, l, _| {
        c.kill(l)
    });
    let mut s = c.client(slow);
    assert_eq!(s.cmd("READONLY"), Reply::ok());
    let l = c.leader(Duration::from_secs(10));
    assert_eq!(c.client(l).cmd("SET last 1"), Reply::ok());
    c.wait_local(slow, "last", "1");
}

/// What a register client does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Get,
    Set,
    /// `SET k v NX`.
    SetIfAbsent,
    /// `SET k v XX`.
    SetIfPresent,
    /// `SET k v GET`.
    Swap,
    Del,
}

impl Action {
    /// Reads 40%, plain writes 20%, compare-and-set 40% of it as NX 10%,
    /// XX 10%, GET 15%, and deletes 5% (so that NX writes again).
    fn pick(roll: u64) -> Action {
        match roll % 20 {
            0..8 => Action::Get,
            8..12 => Action::Set,
            12..14 => Action::SetIfAbsent,
            14..16 => Action::SetIfPresent,
            16..19 => Action::Swap,
            _ => Action::Del,
        }
    }

    fn request(self, key: &str, value: u64) -> Vec<u8> {
        let (k, v) = (key.as_bytes(), value.to_string());
        let v = v.as_bytes();
        match self {
            Action::Get => Client::encode(&[b"GET", k]),
            Action::Set => Client::encode(&[b"SET", k, v]),
            Action::SetIfAbsent => Client::encode(&[b"SET", k, v, b"NX"]),
            Action::SetIfPresent => Client::encode(&[b"SET", k, v, b"XX"]),
            Action::Swap => Client::encode(&[b"SET", k, v, b"GET"]),
            Action::Del => Client::encode(&[b"DEL", k]),
        }
    }

    /// The operation a reply shows: `Some(kind)` for a reply that says
    /// what happened, the unknown-outcome kind for a write without one
    /// (`reply` `None`), `None` for what changed nothing (a read without a
    /// reply).
    fn kind(self, value: u64, reply: Option<&Reply>) -> Option<Kind> {
        let number = |b: &[u8]| String::from_utf8_lossy(b).parse::<u64>().ok();
        let Some(reply) = reply else {
            return match self {
                Action::Get => None,
                Action::Set => Some(Kind::Write(Some(value))),
                Action::SetIfAbsent => Some(Kind::SetIfAbsent(value, None)),
                Action::SetIfPresent => Some(Kind::SetIfPresent(value, None)),
                Action::Swap => Some(Kind::Swap(value, None)),
                Action::Del => Some(Kind::Delete(None)),
            };
        };
        Some(match (self, reply) {
            (Action::Get, Reply::Bulk(v)) => Kind::Read(number(v)),
            (Action::Get, Reply::Nil) => Kind::Read(None),
            (Action::Set, Reply::Simple(_)) => Kind::Write(Some(value)),
            (Action::SetIfAbsent, r) => Kind::SetIfAbsent(value, Some(*r != Reply::Nil)),
            (Action::SetIfPresent, r) => Kind::SetIfPresent(value, Some(*r != Reply::Nil)),
            (Action::Swap, Reply::Bulk(v)) => Kind::Swap(value, Some(number(v))),
            (Action::Swap, Reply::Nil) => Kind::Swap(value, Some(None)),
            (Action::Del, Reply::Int(n)) => Kind::Delete(Some(*n == 1)),
            (a, r) => panic!("{a:?} answered {r:?}"),
        })
    }
}

/// Three clients read, write and compare-and-set four registers through
/// whichever node leads, while `fault` runs (given the leader, and a call
/// that waits until a write sent after the fault began is acknowledged);
/// the load goes on until such a write and 1.5 s more, then each register
/// is read once more through the leader, and the history of each is
/// checked. Prints the figures, under `name`.
fn registers_under(
    c: &mut Cluster,
    name: &str,
    fault: impl FnOnce(&mut Cluster, usize, &dyn Fn()),
) {
    linearizable::self_test();
    let l = c.leader(Duration::from_secs(20));
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_micros() as u64;
    const KEYS: u64 = 4;
    const CLIENTS: usize = 3;
    let ports = c.redis.clone();
    let histories = std::sync::Mutex::new(vec![Vec::<Op>::new(); KEYS as usize]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    // When the fault began (none yet: never), and whether a write sent
    // after it was acknowledged since.
    let fault_at = AtomicU64::new(u64::MAX);
    let resumed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for client in 0..CLIENTS {
            let (ports, histories, stop) = (&ports, &histories, &stop);
            let (fault_at, resumed) = (&fault_at, &resumed);
            s.spawn(move || {
                let mut rng = fastrand_like(client as u64 + 1);
                let mut target = l;
                let mut conn: Option<Client> = None;
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    let key = rng() % KEYS;
                    // The last client only reads, and only from the first
                    // leader, whatever happens to it: a node cut off must
                    // not answer it with what the others have overwritten.
                    let pinned = client == CLIENTS - 1;
                    let action = if pinned {
                        Action::Get
                    } else {
                        Action::pick(rng())
                    };
                    let value = (client as u64) << 32 | n;
                    n += 1;
                    if conn.is_none() {
                        conn = Client::try_connect(ports[target], Duration::from_secs(2));
                        if conn.is_none() {
                            if !pinned {
                                target = (target + 1) % 3;
                            }
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                    }
                    let Some(cn) = conn.as_mut() else { continue };
                    let invoked = now();
                    // A killed node resets the connection: the request may
                    // still have reached it, so a failed send is handled
                    // like a missing reply below.
                    let reply = match cn.try_send_raw(&action.request(&format!("reg{key}"), value))
                    {
                        Ok(()) => cn.read(),
                        Err(_) => None,
                    };
                    let completed = now();
                    let op = match &reply {
                        // Refused before it was proposed, or its entry
                        // truncated (openraft answers those with the
                        // leader): never happened.
                        Some(Reply::Error(e))
                            if e.starts_with("MOVED") || e.starts_with("CLUSTERDOWN") =>
                        {
                            if let Some(addr) = e.strip_prefix("MOVED 0 127.0.0.1:") {
                                if let Some(i) = ports.iter().position(|p| p.to_string() == addr) {
                                    if !pinned {
                                        target = i;
                                    }
                                }
                            }
                            // CLUSTERDOWN: an election is running; this node
                            // will know the winner (moving on could lead
                            // back to an old leader cut off, which answers
                            // nothing).
                            if pinned || e.starts_with("CLUSTERDOWN") {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            conn = None;
                            None
                        }
                        // No reply, or another failure: a write may or may
                        // not have happened.
                        None | Some(Reply::Error(_)) => {
                            conn = None;
                            if !pinned {
                                target = (target + 1) % 3;
                            }
                            action.kind(value, None).map(|kind| Op {
                                kind,
                                invoked,
                                completed: None,
                            })
                        }
                        Some(r) => action.kind(value, Some(r)).map(|kind| Op {
                            kind,
                            invoked,
                            completed: Some(completed),
                        }),
                    };
                    if let Some(op) = op {
                        if op.completed.is_some()
                            && action != Action::Get
                            && op.invoked > fault_at.load(Relaxed)
                        {
                            resumed.store(true, Relaxed);
                        }
                        histories.lock().unwrap()[key as usize].push(op);
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_millis(1500));
        let wait_resumed = || {
            let t = Instant::now();
            while !resumed.load(Relaxed) {
                assert!(
                    t.elapsed() < Duration::from_secs(30),
                    "no write acknowledged within 30 s of the fault"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        fault_at.store(now(), Relaxed);
        fault(c, l, &wait_resumed);
        // The new leader's history is checked too.
        wait_resumed();
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, std::sync::atomic::Ordering::Release);
    });
    let fault_at = fault_at.into_inner();
    let mut histories = histories.into_inner().unwrap();
    // Acknowledged writes: the first sent after the fault began (the node
    // that took it led after the fault), and the longest time without one.
    let mut acked: Vec<(u64, u64)> = histories
        .iter()
        .flatten()
        .filter(|o| !matches!(o.kind, Kind::Read(_)))
        .filter_map(|o| Some((o.invoked, o.completed?)))
        .collect();
    let first_after = acked
        .iter()
        .filter(|(invoked, _)| *invoked > fault_at)
        .map(|(_, done)| done - fault_at)
        .min()
        .map_or(f64::NAN, |t| t as f64 / 1e6);
    acked.sort_unstable_by_key(|(_, done)| *done);
    let longest_gap = acked.windows(2).map(|w| w[1].1 - w[0].1).max().unwrap_or(0) as f64 / 1e6;
    // The registers as they end, read through the leader: part of each
    // history, so the last acknowledged writes must be there.
    let l = c.leader(Duration::from_secs(20));
    let mut leader = c.client(l);
    for (key, h) in histories.iter_mut().enumerate() {
        let invoked = now();
        let reply = leader.cmd(&format!("GET reg{key}"));
        let kind = Action::Get
            .kind(0, Some(&reply))
            .expect("a final read answers");
        h.push(Op {
            kind,
            invoked,
            completed: Some(now()),
        });
    }
    let total: usize = histories.iter().map(Vec::len).sum();
    let count = |f: fn(&Kind) -> bool| histories.iter().flatten().filter(|o| f(&o.kind)).count();
    let cas = count(|k| {
        matches!(
            k,
            Kind::SetIfAbsent(..) | Kind::SetIfPresent(..) | Kind::Swap(..)
        )
    });
    let cas_wrote = count(|k| {
        matches!(
            k,
            Kind::SetIfAbsent(_, Some(true))
                | Kind::SetIfPresent(_, Some(true))
                | Kind::Swap(_, Some(_))
        )
    });
    assert!(total > 100, "too few operations ({total}) to mean anything");
    assert!(
        cas_wrote > 10,
        "too few compare-and-sets took effect ({cas_wrote})"
    );
    // The search recurses once per operation: a deep stack.
    let checked = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || {
            histories
                .iter()
                .map(|h| linearizable::check(h))
                .collect::<Vec<_>>()
        })
        .unwrap()
        .join()
        .unwrap();
    let anomalies = checked.iter().filter(|ok| !**ok).count();
    eprintln!(
        "figures: {name}: {total} operations checked on {KEYS} registers ({cas} \
         compare-and-set, {cas_wrote} of them known to have written; {KEYS} final reads), \
         {anomalies} registers not linearizable; first write acknowledged {first_after:.2} s \
         after the fault began, longest time without one {longest_gap:.2} s"
    );
    assert_eq!(anomalies, 0, "registers not linearizable: {checked:?}");
}

/// A small deterministic generator (xorshift).
fn fastrand_like(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
