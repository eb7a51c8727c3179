//! A server process on a free loopback port, and a small RESP client.

#![allow(dead_code)]

pub mod linearizable;
pub mod proxy;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `evendb-server`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub metrics: Option<String>,
    pub dir: PathBuf,
}

impl Server {
    /// Starts the server on `dir` with extra flags, waiting for its
    /// "listening" line.
    pub fn start(dir: &Path, flags: &[&str]) -> Server {
        Self::start_on(dir, 0, flags)
    }

    /// `start` on a given port.
    pub fn start_on(dir: &Path, port: u16, flags: &[&str]) -> Server {
        Self::try_start_on(dir, port, flags).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `start_on`, or what the server wrote to stderr if it exited before
    /// listening.
    pub fn try_start_on(dir: &Path, port: u16, flags: &[&str]) -> Result<Server, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_evendb-server"))
            .arg("--dir")
            .arg(dir)
            .args(["--port", &port.to_string(), "--log-level", "warn"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start evendb-server");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        // Passed on to the test's stderr, and kept until the server listens.
        let err = BufReader::new(child.stderr.take().expect("stderr"));
        let (early_tx, early_rx) = std::sync::mpsc::channel::<String>();
        let echo = std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                eprintln!("{line}");
                let _ = early_tx.send(line);
            }
        });
        let mut metrics = None;
        let port = loop {
            let mut line = String::new();
            if out.read_line(&mut line).expect("read stdout") == 0 {
                let status = child.wait();
                // The process is gone: its stderr ends, and the thread.
                let _ = echo.join();
                let said: Vec<String> = early_rx.try_iter().collect();
                return Err(format!(
                    "evendb-server exited before listening: {status:?}: {}",
                    said.join("\n")
                ));
            }
            if let Some(url) = line.trim().strip_prefix("metrics at http://") {
                metrics = Some(url.trim_end_matches("/metrics").to_string());
            }
            if let Some(addr) = line.trim().strip_prefix("evendb-server listening on ") {
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = out.read_to_string(&mut sink);
        });
        Ok(Server {
            child,
            port,
            metrics,
            dir: dir.to_path_buf(),
        })
    }

    /// Kills the process at once (SIGKILL).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn client(&self) -> Client {
        Client::connect(self.port)
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let status = wait_timeout(&mut self.child, Duration::from_secs(30));
        std::mem::forget(self);
        status
    }

    /// Waits for the process to exit by itself (after SHUTDOWN).
    pub fn wait_exit(mut self) -> std::process::ExitStatus {
        let status = wait_timeout(&mut self.child, Duration::from_secs(30));
        std::mem::forget(self);
        status
    }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("evendb-server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Verbatim(String),
}

impl Reply {
    pub fn bulk(s: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(s.as_ref().to_vec())
    }

    pub fn ok() -> Reply {
        Reply::Simple("OK".into())
    }

    /// The flat key-value list of a RANGE/PREFIX reply, with its cursor.
    pub fn pairs(&self) -> (Vec<u8>, Vec<Pair>) {
        let Reply::Array(parts) = self else {
            panic!("not a range reply: {self:?}")
        };
        let [Reply::Bulk(cursor), Reply::Array(flat)] = parts.as_slice() else {
            panic!("not a range reply: {self:?}")
        };
        let pairs = flat
            .chunks(2)
            .map(|kv| match kv {
                [Reply::Bulk(k), Reply::Bulk(v)] => (k.clone(), v.clone()),
                _ => panic!("not a pair: {kv:?}"),
            })
            .collect();
        (cursor.clone(), pairs)
    }
}

/// A blocking RESP client.
pub struct Client {
    pub stream: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        Self::try_connect(port, Duration::from_secs(30)).expect("connect")
    }

    /// A connection whose reads give up after `timeout`.
    pub fn try_connect(port: u16, timeout: Duration) -> Option<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_read_timeout(Some(timeout)).ok()?;
        Some(Client {
            stream: BufReader::new(stream),
        })
    }

    /// Encodes a command as a RESP array.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.try_send_raw(bytes).expect("write");
    }

    /// `send_raw` for callers that expect the peer to die (fault tests).
    pub fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.get_mut().write_all(bytes)
    }

    pub fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.send_raw(&Self::encode(args));
        self.read().expect("reply")
    }

    /// `call` with text arguments.
    pub fn cmd(&mut self, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        self.call(&args)
    }

    /// Reads one reply; `None` at the end of the stream.
    pub fn read(&mut self) -> Option<Reply> {
        let mut line = Vec::new();
        if self.stream.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).to_string();
        let n = || text.parse::<i64>().expect("length");
        Some(match line[0] {
            b'+' => Reply::Simple(text),
            b'-' => Reply::Error(text),
            b':' => Reply::Int(n()),
            b'_' => Reply::Nil,
            b'$' if n() < 0 => Reply::Nil,
            b'$' | b'=' => {
                let mut data = vec![0; n() as usize + 2];
                self.stream.read_exact(&mut data).ok()?;
                data.truncate(n() as usize);
                if line[0] == b'=' {
                    Reply::Verbatim(String::from_utf8_lossy(&data[4..]).to_string())
                } else {
                    Reply::Bulk(data)
                }
            }
            b'*' if n() < 0 => Reply::Nil,
            b'*' => Reply::Array((0..n()).map(|_| self.read().expect("element")).collect()),
            b'%' => Reply::Map(
                (0..n())
                    .map(|_| (self.read().expect("key"), self.read().expect("value")))
                    .collect(),
            ),
            other => panic!("unknown reply type {:?}", other as char),
        })
    }
}
