//! Raft's messages between nodes: over TCP, one request at a time per
//! connection, each a frame of a 4-byte little-endian length and a JSON
//! body. A node keeps one connection per peer and opens a new one after
//! any error. Snapshots go as openraft's chunked `install_snapshot`
//! requests, read from and written to files.

use super::{ClusterNode, TypeConfig};
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::Raft;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest frame accepted (a snapshot chunk, JSON-encoded, and more).
const MAX_FRAME: usize = 256 << 20;

#[derive(Serialize, Deserialize)]
enum Rpc {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<u64>),
    Snapshot(InstallSnapshotRequest<TypeConfig>),
}

#[derive(Serialize, Deserialize)]
enum RpcReply {
    Append(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    Snapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
}

async fn write_frame(s: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    s.write_all(&len.to_le_bytes()).await?;
    s.write_all(body).await
}

async fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!("frame of {len} bytes")));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    Ok(body)
}

/// Makes a [`Peer`] per target node.
#[derive(Debug, Clone, Default)]
pub struct Network {
    /// The local address outgoing connections are made from (a host with
    /// several addresses); `None`: the system's choice.
    pub source: Option<std::net::IpAddr>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &ClusterNode) -> Peer {
        Peer {
            target,
            addr: node.raft.clone(),
            source: self.source,
            conn: None,
        }
    }
}

/// A connection to one peer.
pub struct Peer {
    target: u64,
    addr: String,
    source: Option<std::net::IpAddr>,
    conn: Option<TcpStream>,
}

/// Connects to `addr`, from `source` if given.
async fn connect(addr: &str, source: Option<std::net::IpAddr>) -> std::io::Result<TcpStream> {
    let Some(ip) = source else {
        return TcpStream::connect(addr).await;
    };
    let to = tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{addr} resolves to nothing")))?;
    let socket = if ip.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(std::net::SocketAddr::new(ip, 0))?;
    socket.connect(to).await
}

type RpcErr<E = openraft::error::Infallible> = RPCError<u64, ClusterNode, E>;

impl Peer {
    async fn call<E: std::error::Error>(
        &mut self,
        rpc: &Rpc,
        option: &RPCOption,
    ) -> Result<RpcReply, RpcErr<E>> {
        let body = serde_json::to_vec(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let exchange = async {
            if self.conn.is_none() {
                let s = connect(&self.addr, self.source).await?;
                s.set_nodelay(true)?;
                self.conn = Some(s);
            }
            let s = self
                .conn
                .as_mut()
                .ok_or_else(|| std::io::Error::other("no connection"))?;
            write_frame(s, &body).await?;
            read_frame(s).await
        };
        let reply = match tokio::time::timeout(option.hard_ttl(), exchange).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
            Err(_) => {
                self.conn = None;
                let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "RPC timed out");
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
        };
        serde_json::from_slice(&reply).map_err(|e| {
            self.conn = None;
            RPCError::Network(NetworkError::new(&e))
        })
    }

    // The error type is openraft's, as its `RaftNetwork` methods return.
    #[allow(clippy::result_large_err)]
    fn remote<T, E: std::error::Error>(
        &self,
        r: Result<T, RaftError<u64, E>>,
    ) -> Result<T, RpcErr<RaftError<u64, E>>> {
        r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

#[allow(clippy::result_large_err)]
fn mismatch<E: std::error::Error>() -> RpcErr<E> {
    let e = std::io::Error::other("reply of the wrong kind");
    RPCError::Network(NetworkError::new(&e))
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RpcErr<RaftError<u64>>> {
        match self.call(&Rpc::Append(rpc), &option).await? {
            RpcReply::Append(r) => self.remote(r),
            _ => Err(mismatch()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RpcErr<RaftError<u64, InstallSnapshotError>>> {
        match self.call(&Rpc::Snapshot(rpc), &option).await? {
            RpcReply::Snapshot(r) => self.remote(r),
            _ => Err(mismatch()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RpcErr<RaftError<u64>>> {
        match self.call(&Rpc::Vote(rpc), &option).await? {
            RpcReply::Vote(r) => self.remote(r),
            _ => Err(mismatch()),
        }
    }
}

/// Serves peers' messages to `raft` on `listener`.
pub async fn serve(listener: TcpListener, raft: Raft<TypeConfig>) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let _ = s.set_nodelay(true);
        let raft = raft.clone();
        tokio::spawn(async move {
            while let Ok(body) = read_frame(&mut s).await {
                let Ok(rpc) = serde_json::from_slice::<Rpc>(&body) else {
                    break;
                };
                let reply = match rpc {
                    Rpc::Append(r) => RpcReply::Append(raft.append_entries(r).await),
                    Rpc::Vote(r) => RpcReply::Vote(raft.vote(r).await),
                    Rpc::Snapshot(r) => RpcReply::Snapshot(raft.install_snapshot(r).await),
                };
                let Ok(bytes) = serde_json::to_vec(&reply) else {
                    break;
                };
                if write_frame(&mut s, &bytes).await.is_err() {
                    break;
                }
            }
        });
    }
}
