//! Raft's messages between nodes: over TCP, one request at a time per
//! connection, each a frame of a 4-byte little-endian length and a JSON
//! body. A node keeps one connection per peer and opens a new one after
//! any error. Snapshots go as openraft's chunked `install_snapshot`
//! requests, read from and written to files.
//!
//! A connection starts with a handshake in which each side proves it knows
//! the cluster's key, derived from `--requirepass` ([`PeerKey`]); a peer
//! that fails it is closed before any message is read. A frame's declared
//! length is bounded before anything is read, and its buffer grows with
//! the bytes that arrive, never ahead of them: a peer cannot make a node
//! reserve memory it has not sent.

use super::state_machine::SnapshotCounts;
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
use std::io::{Error, ErrorKind};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest frame accepted (a snapshot chunk, JSON-encoded, and more).
pub const MAX_FRAME: usize = 256 << 20;

/// Bytes a frame's buffer may run ahead of what has arrived.
pub const READ_STEP: usize = 64 << 10;

/// The largest handshake frame (a magic and two nonces or tags).
const MAX_HANDSHAKE_FRAME: usize = 64;

/// How long an accepted connection has to complete the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Writes one frame: `body`'s length (u32 LE), then `body`.
///
/// # Errors
/// The stream fails, or `body` is 4 GiB or more.
pub async fn write_frame<W: AsyncWrite + Unpin>(s: &mut W, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(Error::other)?;
    s.write_all(&len.to_le_bytes()).await?;
    s.write_all(body).await
}

/// Reads one frame of at most `max` bytes. A frame of up to [`READ_STEP`]
/// bytes is read into a buffer of its size; a larger one through a
/// [`READ_STEP`] buffer into one that grows with the bytes that arrived
/// (at most twice them, never past the declared length): a frame that
/// declares 200 MiB and sends nothing costs 64 KiB.
///
/// # Errors
/// The stream fails or ends inside the frame, or the frame declares more
/// than `max` bytes (refused before its body is read).
pub async fn read_frame<R: AsyncRead + Unpin>(s: &mut R, max: usize) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("a frame of {len} bytes (at most {max})"),
        ));
    }
    let cut = |got: usize| {
        Error::new(
            ErrorKind::UnexpectedEof,
            format!("the stream ended {got} bytes into a frame of {len}"),
        )
    };
    if len <= READ_STEP {
        let mut body = vec![0u8; len];
        let mut got = 0;
        while got < len {
            match s.read(&mut body[got..]).await? {
                0 => return Err(cut(got)),
                n => got += n,
            }
        }
        return Ok(body);
    }
    let mut step = vec![0u8; READ_STEP];
    let mut body: Vec<u8> = Vec::new();
    while body.len() < len {
        let want = (len - body.len()).min(READ_STEP);
        let n = s.read(&mut step[..want]).await?;
        if n == 0 {
            return Err(cut(body.len()));
        }
        if body.capacity() < body.len() + n {
            // Doubling keeps the copies linear; the declared length caps it.
            let cap = (2 * body.capacity()).max(body.len() + n).min(len);
            body.reserve_exact(cap - body.len());
        }
        body.extend_from_slice(&step[..n]);
    }
    Ok(body)
}

/// The key nodes prove to each other they know: derived from the cluster's
/// password (every node's `--requirepass`), or a fixed one without it.
///
/// Each side's proof is HMAC-SHA-256 of both sides' fresh nonces under the
/// key (itself HMAC-SHA-256 of the password under a fixed label), cut to
/// 128 bits; the proofs are compared in constant time. This authenticates
/// the peer at the start of a connection; it neither encrypts nor
/// authenticates each message later on, so a node on a network others can
/// listen to or tamper with needs a tunnel as well (as Redis's own
/// replication does without TLS).
#[derive(Clone)]
pub struct PeerKey([u8; 32]);

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

/// The first bytes a connecting node sends (and the version of the
/// handshake).
const HELLO: &[u8; 8] = b"EVRAFT2\n";

/// Nonce and tag width.
const NONCE: usize = 16;

/// HMAC-SHA-256 of the concatenated `parts` under `key`.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use hmac::Mac;
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

impl PeerKey {
    /// The key of a cluster whose nodes have `password` (`None`: none).
    pub fn new(password: Option<&[u8]>) -> PeerKey {
        let (flag, pw): (&[u8], &[u8]) = match password {
            Some(p) => (b"\x01", p),
            None => (b"\x00", b""),
        };
        PeerKey(hmac(b"evendb raft peer key", &[flag, pw]))
    }

    /// The proof of side `who` (`b'C'` connecting, `b'S'` accepting).
    fn tag(&self, who: u8, client: &[u8], server: &[u8]) -> [u8; NONCE] {
        let mut out = [0u8; NONCE];
        out.copy_from_slice(&hmac(&self.0, &[&[who], client, server])[..NONCE]);
        out
    }

    fn check(&self, who: u8, client: &[u8], server: &[u8], got: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        got.len() == NONCE && bool::from(self.tag(who, client, server).ct_eq(got))
    }
}

fn nonce() -> std::io::Result<[u8; NONCE]> {
    let mut n = [0u8; NONCE];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut n))?;
    Ok(n)
}

fn refused(what: &str) -> Error {
    Error::new(ErrorKind::PermissionDenied, what.to_string())
}

/// The connecting side of the handshake: sends `EVRAFT2\n` and a nonce,
/// checks the node's proof, sends its own.
///
/// # Errors
/// The stream fails, or the node does not know `key`.
pub async fn handshake_connect<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    key: &PeerKey,
) -> std::io::Result<()> {
    let mine = nonce()?;
    write_frame(s, &[&HELLO[..], &mine].concat()).await?;
    let reply = read_frame(s, MAX_HANDSHAKE_FRAME).await?;
    let (theirs, proof) = reply.split_at(reply.len().min(NONCE));
    if theirs.len() != NONCE || !key.check(b'S', &mine, theirs, proof) {
        return Err(refused(
            "the Raft peer does not know the cluster's key (a different --requirepass?)",
        ));
    }
    write_frame(s, &key.tag(b'C', &mine, theirs)).await
}

/// The accepting side of the handshake.
///
/// # Errors
/// The stream fails, or the peer is not a node that knows `key`.
pub async fn handshake_accept<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    key: &PeerKey,
) -> std::io::Result<()> {
    let hello = read_frame(s, MAX_HANDSHAKE_FRAME).await?;
    let Some(theirs) = hello.strip_prefix(&HELLO[..]).filter(|n| n.len() == NONCE) else {
        return Err(refused("not an evendb Raft peer"));
    };
    let mine = nonce()?;
    let proof = key.tag(b'S', theirs, &mine);
    write_frame(s, &[&mine[..], &proof].concat()).await?;
    let answer = read_frame(s, MAX_HANDSHAKE_FRAME).await?;
    if !key.check(b'C', theirs, &mine, &answer) {
        return Err(refused(
            "a Raft peer does not know the cluster's key (a different --requirepass?)",
        ));
    }
    Ok(())
}

/// Makes a [`Peer`] per target node.
#[derive(Debug, Clone)]
pub struct Network {
    /// The local address outgoing connections are made from (a host with
    /// several addresses); `None`: the system's choice.
    pub source: Option<std::net::IpAddr>,
    /// What peers prove to each other at the start of a connection.
    pub key: PeerKey,
    /// Where snapshots sent are counted.
    pub counts: Arc<SnapshotCounts>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &ClusterNode) -> Peer {
        Peer {
            target,
            addr: node.raft.clone(),
            source: self.source,
            key: self.key.clone(),
            counts: self.counts.clone(),
            conn: None,
        }
    }
}

/// A connection to one peer.
pub struct Peer {
    target: u64,
    addr: String,
    source: Option<std::net::IpAddr>,
    key: PeerKey,
    counts: Arc<SnapshotCounts>,
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
                let mut s = connect(&self.addr, self.source).await?;
                s.set_nodelay(true)?;
                handshake_connect(&mut s, &self.key).await?;
                self.conn = Some(s);
            }
            let s = self
                .conn
                .as_mut()
                .ok_or_else(|| std::io::Error::other("no connection"))?;
            write_frame(s, &body).await?;
            read_frame(s, MAX_FRAME).await
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
        let (bytes, last) = (rpc.data.len() as u64, rpc.done);
        let reply = match self.call(&Rpc::Snapshot(rpc), &option).await? {
            RpcReply::Snapshot(r) => self.remote(r)?,
            _ => return Err(mismatch()),
        };
        self.counts.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
        if last {
            self.counts.sent.fetch_add(1, Ordering::Relaxed);
        }
        Ok(reply)
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

/// Serves peers' messages to `raft` on `listener`, to peers that prove
/// they know `key`.
pub async fn serve(listener: TcpListener, raft: Raft<TypeConfig>, key: PeerKey) {
    loop {
        let Ok((mut s, peer)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let _ = s.set_nodelay(true);
        let (raft, key) = (raft.clone(), key.clone());
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake_accept(&mut s, &key)).await {
                Ok(Ok(())) => {}
                // A peer that does not know the key, or is not a node.
                Ok(Err(e))
                    if matches!(
                        e.kind(),
                        ErrorKind::PermissionDenied | ErrorKind::InvalidData
                    ) =>
                {
                    log::warn!("Raft connection from {peer} refused: {e}");
                    return;
                }
                // Gone mid-handshake (a node stopping, a proxy cutting).
                Ok(Err(e)) => {
                    log::debug!("Raft connection from {peer} closed in the handshake: {e}");
                    return;
                }
                Err(_) => {
                    log::warn!("Raft connection from {peer} closed: no handshake within {HANDSHAKE_TIMEOUT:?}");
                    return;
                }
            }
            while let Ok(body) = read_frame(&mut s, MAX_FRAME).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The MAC is standard HMAC-SHA-256 (RFC 4231, test case 2), fed in
    /// parts as the handshake feeds it.
    #[test]
    fn the_mac_is_hmac_sha_256() {
        let tag = hmac(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// Runs both sides of the handshake over an in-memory pipe.
    async fn shake(client: &PeerKey, server: &PeerKey) -> (bool, bool) {
        let (mut a, mut b) = tokio::io::duplex(1024);
        // Each side closes its end when done, as a node closes the socket.
        let (c, s) = tokio::join!(
            async {
                let r = handshake_connect(&mut a, client).await;
                drop(a);
                r
            },
            async {
                let r = handshake_accept(&mut b, server).await;
                drop(b);
                r
            }
        );
        (c.is_ok(), s.is_ok())
    }

    #[tokio::test]
    async fn peers_with_the_same_password_pass_the_handshake_and_others_do_not() {
        let pw = PeerKey::new(Some(b"secret"));
        assert_eq!(shake(&pw, &pw).await, (true, true));
        let none = PeerKey::new(None);
        assert_eq!(shake(&none, &none).await, (true, true));
        let other = PeerKey::new(Some(b"secreT"));
        // The accepting side proves itself first: a connecting node with
        // another key gives up there, and the acceptor sees no proof.
        assert_eq!(shake(&other, &pw).await, (false, false));
        assert_eq!(shake(&none, &pw).await, (false, false));
        assert_eq!(shake(&pw, &none).await, (false, false));
    }

    #[tokio::test]
    async fn a_connection_that_is_not_a_peer_is_refused_before_any_message() {
        let key = PeerKey::new(Some(b"secret"));
        let (mut a, mut b) = tokio::io::duplex(1024);
        // A Raft message sent straight away, as an old node would.
        write_frame(&mut a, br#"{"Vote":{}}"#).await.unwrap();
        assert!(handshake_accept(&mut b, &key).await.is_err());
        // A frame larger than any handshake frame is refused by its length.
        let (mut a, mut b) = tokio::io::duplex(1024);
        a.write_all(&(1u32 << 20).to_le_bytes()).await.unwrap();
        let e = handshake_accept(&mut b, &key).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn a_frame_arriving_in_pieces_reads_whole_and_a_cut_one_fails() {
        let body: Vec<u8> = (0..3 * READ_STEP + 17).map(|i| (i % 251) as u8).collect();
        let (mut a, mut b) = tokio::io::duplex(4096);
        let sent = body.clone();
        let writer = tokio::spawn(async move {
            write_frame(&mut a, &sent).await.unwrap();
            // And a frame cut short: 10 bytes of 100.
            a.write_all(&100u32.to_le_bytes()).await.unwrap();
            a.write_all(&[7; 10]).await.unwrap();
        });
        assert_eq!(read_frame(&mut b, MAX_FRAME).await.unwrap(), body);
        writer.await.unwrap();
        let e = read_frame(&mut b, MAX_FRAME).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        // Past the bound: refused from the length alone.
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&1000u32.to_le_bytes()).await.unwrap();
        let e = read_frame(&mut b, 999).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
    }
}
