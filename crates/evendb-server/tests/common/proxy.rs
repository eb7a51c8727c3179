//! A TCP proxy that can cut traffic: in front of one node's Raft port, it
//! forwards connections unless the node is isolated or the connection
//! comes from a blocked source address (each node connects from its own
//! loopback address, 127.0.0.11 and up). Cutting also closes the
//! connections already open.

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Cuts {
    isolated: bool,
    sources: HashSet<IpAddr>,
}

/// A running proxy.
#[derive(Clone)]
pub struct Proxy {
    cuts: Arc<Mutex<Cuts>>,
}

impl Proxy {
    /// Forwards `listen` (a bound listener) to `to`.
    pub fn start(listen: TcpListener, to: std::net::SocketAddr) -> Proxy {
        let p = Proxy {
            cuts: Arc::default(),
        };
        let me = p.clone();
        std::thread::spawn(move || {
            for conn in listen.incoming() {
                let Ok(conn) = conn else { continue };
                let Ok(source) = conn.peer_addr().map(|a| a.ip()) else {
                    continue;
                };
                if me.cut(source) {
                    let _ = conn.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(upstream) = TcpStream::connect(to) else {
                    continue;
                };
                // Small Raft messages, forwarded at once (no Nagle delay).
                let _ = conn.set_nodelay(true);
                let _ = upstream.set_nodelay(true);
                for (mut from, mut into) in [
                    (conn.try_clone().unwrap(), upstream.try_clone().unwrap()),
                    (upstream, conn),
                ] {
                    let me = me.clone();
                    std::thread::spawn(move || {
                        let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            if me.cut(source) {
                                break;
                            }
                            match from.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => {
                                    if into.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        ErrorKind::WouldBlock | ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => break,
                            }
                        }
                        let _ = from.shutdown(Shutdown::Both);
                        let _ = into.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        p
    }

    fn cut(&self, source: IpAddr) -> bool {
        let c = self.cuts.lock().unwrap();
        c.isolated || c.sources.contains(&source)
    }

    /// Cuts (or restores) every connection to this node.
    pub fn isolate(&self, on: bool) {
        self.cuts.lock().unwrap().isolated = on;
    }

    /// Cuts (or restores) connections from `source`.
    pub fn block(&self, source: IpAddr, on: bool) {
        let mut c = self.cuts.lock().unwrap();
        if on {
            c.sources.insert(source);
        } else {
            c.sources.remove(&source);
        }
    }
}
