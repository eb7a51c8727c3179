//! The Raft port: a frame's declared length reserves nothing before its
//! bytes arrive, and a node refuses to expose the port beyond loopback
//! without a password, whose knowledge peers then prove before any
//! message is read.

mod common;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use common::{Client, Reply, Server};
use evendb_server::cluster::network::{read_frame, MAX_FRAME, READ_STEP};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// One test at a time: each picks ports that are free when it asks.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A port picked free can be taken before the server binds it (seen in a
/// full test run, after the tests before this file left thousands of
/// loopback connections: "cannot listen for Raft on 0.0.0.0:37073: Address
/// already in use"): true when a start failed that way, so the test picks
/// new ports and tries again.
fn port_taken(stderr: &str) -> bool {
    stderr.contains("Address already in use")
}

/// Starts a one-node cluster with `extra` flags on new ports, again with
/// others while a port was taken; returns it and its Raft port.
fn start_node(dir: &std::path::Path, extra: &[&str]) -> (Server, u16) {
    for _ in 0..10 {
        let ports = free_ports(2);
        let mut flags = cluster_flags(ports[1], ports[0]);
        flags.extend(extra.iter().map(|f| f.to_string()));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        match Server::try_start_on(dir, ports[0], &flags) {
            Ok(s) => return (s, ports[1]),
            Err(e) if port_taken(&e) => continue,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("no free ports in 10 tries");
}

/// A runtime on this thread only, so the counting allocator sees the
/// reads' allocations.
fn local_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_frame_declaring_200_mib_allocates_only_what_arrives() {
    let _serial = serial();
    local_runtime().block_on(async {
        for sent in [0usize, 1000, 1 << 20] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let writer = tokio::spawn(async move {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                s.write_all(&(200u32 << 20).to_le_bytes()).await.unwrap();
                s.write_all(&vec![1u8; sent]).await.unwrap();
                // Then the sender goes away.
            });
            let (mut s, _) = listener.accept().await.unwrap();
            writer.await.unwrap();
            counting_alloc::reset();
            let e = read_frame(&mut s, MAX_FRAME).await.unwrap_err();
            let largest = counting_alloc::largest();
            assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{e}");
            assert!(
                largest <= 2 * sent + READ_STEP,
                "{sent} bytes of a 200 MiB frame sent: allocated {largest} bytes at once"
            );
        }
    });
}

/// Ports free on every address, as the Raft port here binds them (one
/// free on loopback alone may still be held elsewhere).
fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("0.0.0.0:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// A one-node cluster whose Raft port is `raft` (all interfaces).
fn cluster_flags(raft: u16, redis: u16) -> Vec<String> {
    vec![
        "--cluster".into(),
        "--cluster-id".into(),
        "1".into(),
        "--cluster-members".into(),
        format!("1@0.0.0.0:{raft}/127.0.0.1:{redis}"),
    ]
}

#[test]
fn a_raft_port_beyond_loopback_without_a_password_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (out, stderr) = (0..10)
        .map(|_| {
            let ports = free_ports(2);
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_evendb-server"))
                .arg("--dir")
                .arg(dir.path())
                .args(["--port", &ports[0].to_string(), "--log-level", "error"])
                .args(cluster_flags(ports[1], ports[0]))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            (out, stderr)
        })
        .find(|(_, stderr)| !port_taken(stderr))
        .expect("no free ports in 10 tries");
    assert!(!out.status.success(), "started: {stderr}");
    assert!(
        stderr.contains("refusing to listen for Raft on 0.0.0.0"),
        "{stderr}"
    );
    // Nothing was created for it.
    assert!(!dir.path().join("raft").exists());

    // Said explicitly, it starts.
    let (s, _) = start_node(dir.path(), &["--cluster-insecure-raft"]);
    assert_eq!(s.client().cmd("PING"), Reply::Simple("PONG".into()));
}

#[test]
fn with_a_password_the_raft_port_serves_only_peers_that_prove_it() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (s, raft) = start_node(dir.path(), &["--requirepass", "pw"]);
    let mut c: Client = s.client();
    assert_eq!(c.cmd("AUTH pw"), Reply::ok());
    // The one-node cluster elects itself and takes writes.
    let t = std::time::Instant::now();
    while c.cmd("SET k v") != Reply::ok() {
        assert!(t.elapsed() < Duration::from_secs(20), "no leader");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A connection that sends a Raft message (here, the head of a
    // 200 MiB one) without the handshake is closed at once.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", raft)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(&(200u32 << 20).to_le_bytes()).unwrap();
    raw.write_all(b"{\"Append\":").unwrap();
    let mut buf = [0u8; 16];
    // Closed with the request unread: an end of stream or a reset, not a
    // reply and not a wait.
    match raw.read(&mut buf) {
        Ok(n) => assert_eq!(n, 0, "the node answered"),
        Err(e) => assert!(
            !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "the connection stayed open: {e}"
        ),
    }
    assert_eq!(c.cmd("GET k"), Reply::bulk("v"));
}
