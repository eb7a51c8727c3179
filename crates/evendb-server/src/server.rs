//! The network side: accepting connections, reading pipelined requests,
//! running them against the store, writing replies, and stopping cleanly.
//!
//! Threading: tokio's multi-threaded runtime owns the sockets. Each
//! connection reads whatever requests have arrived, then runs them, up to
//! [`BATCH_COMMANDS`] at a time, where [`Exec`] says: on the I/O thread
//! itself (`Inline`), or in one call on tokio's blocking pool (`Pool`), so
//! that a store call waiting for the disk does not hold up the sockets
//! that thread serves. A hand-off to the pool and back costs two thread
//! wake-ups per batch, which measured 3-4 times the CPU of the commands
//! themselves (docs/design.md §15), so `Pool` is the choice only where
//! commands mostly wait: `Sync` durability, whose writes commit in groups
//! only when many wait for the same fsync.
//!
//! Back-pressure: a connection reads no new request until the replies to
//! the previous ones are written, so a client that stops reading stops
//! itself, not the server. What one connection holds is bounded: one
//! request (the parser's limits), and replies up to [`OUT_FLUSH`] bytes
//! before they are written (one command's reply is bounded by
//! `--max-reply-bytes` and the range reads' own limits).

use crate::commands::{execute, After, Session};
use crate::resp::{Command, Limits, Out, Parser};
use crate::state::Shared;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Commands run in one blocking call.
pub const BATCH_COMMANDS: usize = 256;
/// Reply bytes after which a connection writes before running more.
pub const OUT_FLUSH: usize = 1 << 20;
/// Bytes a connection asks the socket for at a time.
const READ_CHUNK: usize = 16 << 10;

/// Where commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exec {
    /// On the thread that serves the socket: no hand-off, but a command
    /// waiting for the disk holds up that thread's other sockets.
    Inline,
    /// On tokio's blocking pool, one hand-off per batch.
    Pool,
}

/// Connection limits.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    pub exec: Exec,
    pub max_clients: usize,
    /// Close a connection idle this long; `None`: never.
    pub idle: Option<Duration>,
    pub parser: Limits,
}

/// Accepts connections on `listener` until `stop` turns true (a signal or
/// `SHUTDOWN`), then waits up to `grace` for connections to finish.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    limits: ConnLimits,
    stop_tx: Arc<watch::Sender<bool>>,
    grace: Duration,
) {
    let mut stop = stop_tx.subscribe();
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: wait, go on.
                        log::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let m = &shared.metrics;
                m.connections_received.fetch_add(1, Ordering::Relaxed);
                if m.connections_current.load(Ordering::Relaxed) as usize >= limits.max_clients {
                    m.connections_rejected.fetch_add(1, Ordering::Relaxed);
                    let mut stream = stream;
                    tokio::spawn(async move {
                        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
                    });
                    continue;
                }
                let _ = stream.set_nodelay(true);
                m.connections_current.fetch_add(1, Ordering::Relaxed);
                let (shared, limits, stop, stop_tx) =
                    (shared.clone(), limits.clone(), stop.clone(), stop_tx.clone());
                conns.spawn(async move {
                    log::debug!("connection from {peer}");
                    let why = connection(stream, &shared, &limits, stop, &stop_tx).await;
                    log::debug!("connection from {peer} closed: {why}");
                    shared.metrics.connections_current.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    log::info!(
        "stopping: waiting up to {:?} for {} connections",
        grace,
        conns.len()
    );
    let drained =
        tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        conns.shutdown().await;
    }
}

/// A batch's outcome: the session back, the commands not run yet, the
/// replies, and what to do next.
type Ran = (Option<Session>, VecDeque<Command>, Out, After);

/// Runs `cmds` in order until one closes the connection or the replies
/// pass [`OUT_FLUSH`].
fn run_batch(shared: &Shared, mut sess: Option<Session>, mut cmds: VecDeque<Command>) -> Ran {
    let mut after = After::Continue;
    let mut out = Out::new(sess.as_ref().map_or(crate::resp::Proto::Resp2, |s| s.proto));
    if let Some(s) = sess.as_mut() {
        // In `sync` durability, pipelined plain SETs commit together.
        let grouping = shared.groups_sets() && s.authed;
        while !cmds.is_empty() {
            let run = if grouping {
                cmds.iter()
                    .take_while(|c| crate::commands::plain_set(c))
                    .count()
            } else {
                0
            };
            if run > 1 && crate::commands::set_group(shared, cmds.range(..run), &mut out) {
                cmds.drain(..run);
                continue;
            }
            let Some(c) = cmds.pop_front() else {
                break;
            };
            after = execute(shared, s, &c, &mut out);
            if after != After::Continue || out.buf.len() >= OUT_FLUSH {
                break;
            }
        }
    }
    (sess, cmds, out, after)
}

/// Serves one connection; returns why it ended.
async fn connection(
    mut stream: TcpStream,
    shared: &Arc<Shared>,
    limits: &ConnLimits,
    mut stop: watch::Receiver<bool>,
    stop_tx: &watch::Sender<bool>,
) -> String {
    let mut parser = Parser::new(limits.parser);
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut pending: VecDeque<Command> = VecDeque::new();
    let mut session = Some(Session::new(shared));
    loop {
        // Every complete request that has arrived, up to a batch.
        let mut at = 0;
        while pending.len() < BATCH_COMMANDS {
            match parser.next(&buf[at..]) {
                Ok((n, cmd)) => {
                    at += n;
                    match cmd {
                        Some(c) => pending.push_back(c),
                        None if n == 0 => break,
                        None => {}
                    }
                }
                Err(e) => {
                    shared
                        .metrics
                        .protocol_errors
                        .fetch_add(1, Ordering::Relaxed);
                    let _ = stream.write_all(format!("-ERR {e}\r\n").as_bytes()).await;
                    return e.to_string();
                }
            }
        }
        buf.drain(..at);
        if pending.is_empty() {
            if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                buf.reserve(READ_CHUNK);
            }
            let read = async {
                match limits.idle {
                    Some(idle) => tokio::time::timeout(idle, stream.read_buf(&mut buf)).await,
                    None => Ok(stream.read_buf(&mut buf).await),
                }
            };
            tokio::select! {
                _ = stop.changed() => return "server stopping".into(),
                r = read => match r {
                    Err(_) => {
                        shared.metrics.connections_timed_out.fetch_add(1, Ordering::Relaxed);
                        return "idle timeout".into();
                    }
                    Ok(Err(e)) => return format!("read error: {e}"),
                    Ok(Ok(0)) => return "closed by the client".into(),
                    Ok(Ok(n)) => {
                        shared.metrics.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
                        continue;
                    }
                }
            }
        }
        // Run them, up to a reply's worth.
        let (sh, sess, cmds) = (shared.clone(), session.take(), std::mem::take(&mut pending));
        let ran = match limits.exec {
            Exec::Inline => Ok(run_batch(&sh, sess, cmds)),
            Exec::Pool => tokio::task::spawn_blocking(move || run_batch(&sh, sess, cmds)).await,
        };
        let Ok((sess, rest, out, after)) = ran else {
            return "a command panicked".into();
        };
        session = sess;
        pending = rest;
        if let Err(e) = stream.write_all(&out.buf).await {
            return format!("write error: {e}");
        }
        shared
            .metrics
            .bytes_out
            .fetch_add(out.buf.len() as u64, Ordering::Relaxed);
        match after {
            After::Continue => {}
            After::Close => return "QUIT".into(),
            After::Shutdown => {
                log::info!("SHUTDOWN requested by a client");
                let _ = stop_tx.send(true);
                return "SHUTDOWN".into();
            }
        }
    }
}
