//! The Prometheus endpoint: `GET /metrics` on its own port answers the
//! engine's figures (`Stats::to_prometheus`) and the server's (connections,
//! commands by name, bytes) and, in a cluster, its role, term, log, commit
//! and apply positions, replication lag and snapshot transfers. A minimal HTTP/1.1 responder: one request per
//! connection, then close.

use crate::state::Shared;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes of a request's head read at most.
const MAX_HEAD: usize = 8 << 10;

/// Serves `/metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), answer(stream, shared)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return stream
                .write_all(&response("431 Request Header Fields Too Large", ""))
                .await;
        }
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let first = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = first.split(|&b| b == b' ');
    let (method, path) = (words.next(), words.next());
    let reply = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => {
            let body = tokio::task::spawn_blocking(move || {
                let mut text = shared.db().stats().to_prometheus("evendb");
                text.push_str(&shared.metrics.to_prometheus());
                if let Some(c) = &shared.cluster {
                    text.push_str(&cluster_metrics(&c.status()));
                }
                text
            })
            .await
            .unwrap_or_default();
            response("200 OK", &body)
        }
        (Some(b"GET"), _) => response("404 Not Found", "only /metrics is served here\n"),
        _ => response("405 Method Not Allowed", ""),
    };
    stream.write_all(&reply).await
}

/// The cluster's status: `evendb_cluster_<name>` for each numeric figure
/// (counters for the snapshot counts, gauges for the rest), the role as
/// `evendb_cluster_role{role="..."} 1`, and replication lag by peer as
/// `evendb_cluster_replication_lag{peer="..."}`.
fn cluster_metrics(status: &[(String, String)]) -> String {
    let mut out = String::new();
    for (name, value) in status {
        let name = name.strip_prefix("cluster_").unwrap_or(name);
        if let Some(peer) = name.strip_prefix("replication_lag_") {
            out.push_str(&format!(
                "evendb_cluster_replication_lag{{peer=\"{peer}\"}} {value}\n"
            ));
        } else if name == "role" {
            out.push_str(&format!("evendb_cluster_role{{role=\"{value}\"}} 1\n"));
        } else if value.parse::<f64>().is_ok() {
            let kind = if name.starts_with("snapshot") && name != "snapshot_index" {
                "counter"
            } else {
                "gauge"
            };
            out.push_str(&format!(
                "# TYPE evendb_cluster_{name} {kind}\nevendb_cluster_{name} {value}\n"
            ));
        }
    }
    out
}

fn response(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
