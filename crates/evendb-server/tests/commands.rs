//! The server's commands, limits and shutdown, through a raw RESP client.

mod common;

use common::{Client, Reply, Server};

#[test]
fn key_commands_answer_as_redis_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    assert_eq!(c.cmd("PING"), Reply::Simple("PONG".into()));
    assert_eq!(c.cmd("ping hi"), Reply::bulk("hi"));
    assert_eq!(c.cmd("ECHO x"), Reply::bulk("x"));
    assert_eq!(c.cmd("GET k"), Reply::Nil);
    assert_eq!(c.cmd("SET k v1"), Reply::ok());
    assert_eq!(c.cmd("SET k v2 NX"), Reply::Nil);
    assert_eq!(c.cmd("GET k"), Reply::bulk("v1"));
    assert_eq!(c.cmd("SET k v3 XX"), Reply::ok());
    assert_eq!(c.cmd("SET nope v XX"), Reply::Nil);
    assert_eq!(c.cmd("GET nope"), Reply::Nil);
    assert_eq!(c.cmd("SET k v4 GET"), Reply::bulk("v3"));
    assert_eq!(c.cmd("SET n v NX GET"), Reply::Nil);
    assert_eq!(c.cmd("GET n"), Reply::bulk("v"));
    assert!(matches!(c.cmd("SET k v EX 10"), Reply::Error(e) if e.contains("no TTLs")));
    assert!(matches!(c.cmd("SET k v NX XX"), Reply::Error(e) if e.contains("syntax")));
    assert_eq!(c.cmd("MSET a 1 b 2 c 3"), Reply::ok());
    assert_eq!(
        c.cmd("MGET a b zz c"),
        Reply::Array(vec![
            Reply::bulk("1"),
            Reply::bulk("2"),
            Reply::Nil,
            Reply::bulk("3")
        ])
    );
    assert_eq!(c.cmd("EXISTS a b zz a"), Reply::Int(3));
    assert_eq!(c.cmd("DEL a zz a"), Reply::Int(1));
    assert_eq!(c.cmd("EXISTS a"), Reply::Int(0));
    assert!(matches!(c.cmd("MSET a"), Reply::Error(e) if e.contains("wrong number")));
    assert!(matches!(c.cmd("GET"), Reply::Error(e) if e.contains("wrong number")));
    assert!(matches!(c.cmd("NOSUCH x"), Reply::Error(e) if e.starts_with("ERR unknown command")));
    assert!(matches!(c.cmd("DBSIZE"), Reply::Error(e) if e.contains("not supported")));
    assert!(matches!(c.cmd("FLUSHALL"), Reply::Error(e) if e.contains("DELRANGE")));
    // The connection is still good after errors.
    assert_eq!(c.cmd("SELECT 0"), Reply::ok());
    assert_eq!(c.cmd("FLUSH"), Reply::ok());
    assert_eq!(c.cmd("QUIT"), Reply::ok());
    assert_eq!(c.read(), None, "QUIT closes the connection");
}

#[test]
fn keys_and_values_are_binary_safe() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let key: &[u8] = b"\x00\r\n*1\r\n$\xff key";
    let value: &[u8] = b"\r\n\x00\x01$-1\r\n";
    assert_eq!(c.call(&[b"SET", key, value]), Reply::ok());
    assert_eq!(c.call(&[b"GET", key]), Reply::bulk(value));
    assert_eq!(c.call(&[b"SET", b"", b""]), Reply::ok());
    assert_eq!(c.call(&[b"GET", b""]), Reply::bulk(""));
    let (_, pairs) = c.cmd("RANGE - +").pairs();
    assert_eq!(
        pairs,
        vec![(vec![], vec![]), (key.to_vec(), value.to_vec())]
    );
    // Keys past the engine's limit get an error, not a dropped connection.
    let big = vec![b'k'; evendb::MAX_KEY_SIZE + 1];
    assert!(matches!(c.call(&[b"SET", &big, b"v"]), Reply::Error(_)));
    assert_eq!(c.cmd("PING"), Reply::Simple("PONG".into()));
}

#[test]
fn range_reads_page_forward_and_backward_with_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    for i in 0..25 {
        assert_eq!(c.cmd(&format!("SET app1|{i:03} v{i}")), Reply::ok());
    }
    c.cmd("SET app0|x before");
    c.cmd("SET app2|x after");
    // Forward pages of 10 through a cursor.
    let mut seen = Vec::new();
    let mut start = "[app1|".to_string();
    loop {
        let (cursor, pairs) = c.cmd(&format!("RANGE {start} (app1}} LIMIT 10")).pairs();
        seen.extend(
            pairs
                .into_iter()
                .map(|(k, _)| String::from_utf8(k).unwrap()),
        );
        if cursor.is_empty() {
            break;
        }
        start = String::from_utf8(cursor).unwrap();
    }
    let want: Vec<String> = (0..25).map(|i| format!("app1|{i:03}")).collect();
    assert_eq!(seen, want);
    // Backward, newest-first, through PREFIX's cursor.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let line = if cursor.is_empty() {
            "PREFIX app1| LIMIT 7 REV".to_string()
        } else {
            format!("PREFIX app1| LIMIT 7 REV CURSOR {cursor}")
        };
        let (next, pairs) = c.cmd(&line).pairs();
        seen.extend(
            pairs
                .into_iter()
                .map(|(k, _)| String::from_utf8(k).unwrap()),
        );
        if next.is_empty() {
            break;
        }
        cursor = String::from_utf8(next).unwrap();
    }
    let mut rev = want.clone();
    rev.reverse();
    assert_eq!(seen, rev);
    // Bounds: exclusive, inclusive, empty and inverted ranges.
    let keys = |r: Reply| -> Vec<String> {
        r.pairs()
            .1
            .into_iter()
            .map(|(k, _)| String::from_utf8(k).unwrap())
            .collect()
    };
    assert_eq!(
        keys(c.cmd("RANGE (app1|022 + LIMIT 3")),
        ["app1|023", "app1|024", "app2|x"]
    );
    assert_eq!(keys(c.cmd("RANGE - [app0|x")), ["app0|x"]);
    assert!(keys(c.cmd("RANGE [b [a")).is_empty());
    assert!(keys(c.cmd("RANGE + -")).is_empty());
    assert!(matches!(c.cmd("RANGE a b"), Reply::Error(e) if e.contains("range item")));
    assert!(matches!(c.cmd("RANGE - + LIMIT 0"), Reply::Error(e) if e.contains("LIMIT")));
    // Range deletes.
    assert_eq!(c.cmd("DELRANGE [app1|010 (app1|020"), Reply::ok());
    assert_eq!(keys(c.cmd("PREFIX app1|")).len(), 15);
    assert_eq!(c.cmd("DELPREFIX app1|"), Reply::ok());
    assert_eq!(keys(c.cmd("RANGE - +")), ["app0|x", "app2|x"]);
    assert_eq!(c.cmd("DELRANGE - +"), Reply::ok());
    assert!(keys(c.cmd("RANGE - +")).is_empty());
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    pipeline_in_order("inline");
    pipeline_in_order("pool");
}

fn pipeline_in_order(exec: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--exec", exec]);
    let mut c = s.client();
    let mut burst = Vec::new();
    for i in 0..2000 {
        burst.extend(Client::encode(&[
            b"SET",
            format!("p{i}").as_bytes(),
            format!("{i}").as_bytes(),
        ]));
        burst.extend(Client::encode(&[b"GET", format!("p{i}").as_bytes()]));
    }
    // Inline commands mix with arrays, as telnet would send them.
    burst.extend_from_slice(b"PING\r\n");
    c.send_raw(&burst);
    for i in 0..2000 {
        assert_eq!(c.read(), Some(Reply::ok()));
        assert_eq!(c.read(), Some(Reply::bulk(i.to_string())));
    }
    assert_eq!(c.read(), Some(Reply::Simple("PONG".into())));
}

#[test]
fn mset_is_atomic_for_a_reader_on_another_connection() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    const KEYS: usize = 50;
    let keys: Vec<String> = (0..KEYS)
        .map(|i| format!("atom{:02}", i * 37 % KEYS))
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            let mut w = s.client();
            for round in 0..300 {
                let v = round.to_string();
                let mut args: Vec<&[u8]> = vec![b"MSET"];
                for k in &keys {
                    args.push(k.as_bytes());
                    args.push(v.as_bytes());
                }
                assert_eq!(w.call(&args), Reply::ok());
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut r = s.client();
        let mut checks = 0;
        while !stop.load(std::sync::atomic::Ordering::Acquire) {
            let mut args: Vec<&[u8]> = vec![b"MGET"];
            args.extend(keys.iter().map(|k| k.as_bytes()));
            let Reply::Array(vals) = r.call(&args) else {
                panic!("MGET")
            };
            assert!(
                vals.windows(2).all(|w| w[0] == w[1]),
                "MGET saw half an MSET: {vals:?}"
            );
            // A range read is one snapshot too.
            let (_, pairs) = r.cmd("PREFIX atom LIMIT 1000").pairs();
            assert!(
                pairs.windows(2).all(|w| w[0].1 == w[1].1),
                "RANGE saw half an MSET"
            );
            checks += 1;
        }
        writer.join().unwrap();
        assert!(checks > 0);
    });
}

#[test]
fn resp3_and_hello() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let Reply::Map(fields) = c.cmd("HELLO 3") else {
        panic!("HELLO 3 answers a map")
    };
    assert!(fields.contains(&(Reply::bulk("proto"), Reply::Int(3))));
    assert!(fields.contains(&(Reply::bulk("server"), Reply::bulk("evendb"))));
    assert_eq!(c.cmd("GET missing"), Reply::Nil);
    assert!(matches!(c.cmd("INFO server"), Reply::Verbatim(t) if t.contains("redis_version:")));
    assert!(matches!(c.cmd("HELLO 4"), Reply::Error(e) if e.starts_with("NOPROTO")));
    let Reply::Array(fields) = c.cmd("HELLO 2") else {
        panic!("HELLO 2 answers a flat array")
    };
    assert_eq!(fields.len(), 14);
    let Reply::Bulk(info) = c.cmd("INFO") else {
        panic!("INFO")
    };
    let info = String::from_utf8(info).unwrap();
    for section in ["# Server", "# Clients", "# Memory", "# Stats", "# Evendb"] {
        assert!(info.contains(section), "{section} missing");
    }
    assert!(info.contains("\r\nputs:"));
    assert_eq!(c.cmd("CLIENT SETNAME me"), Reply::ok());
    assert_eq!(c.cmd("CLIENT GETNAME"), Reply::bulk("me"));
}

#[test]
fn a_password_guards_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--requirepass", "s3cret"]);
    let mut c = s.client();
    assert!(matches!(c.cmd("GET k"), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert!(matches!(c.cmd("SHUTDOWN"), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert!(matches!(c.cmd("AUTH wrong"), Reply::Error(e) if e.starts_with("WRONGPASS")));
    assert!(matches!(c.cmd("AUTH s3cre"), Reply::Error(e) if e.starts_with("WRONGPASS")));
    assert!(matches!(c.cmd("AUTH bob s3cret"), Reply::Error(e) if e.starts_with("WRONGPASS")));
    assert!(matches!(c.cmd("HELLO 3"), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert_eq!(c.cmd("AUTH s3cret"), Reply::ok());
    assert_eq!(c.cmd("SET k v"), Reply::ok());
    let mut d = s.client();
    assert!(matches!(
        d.cmd("HELLO 3 AUTH default s3cret"),
        Reply::Map(_)
    ));
    assert_eq!(d.cmd("GET k"), Reply::bulk("v"));
}

#[test]
fn a_public_bind_without_a_password_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evendb-server"))
        .arg("--dir")
        .arg(dir.path())
        .args(["--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without a password"));
}

#[test]
fn malformed_and_oversized_requests_get_an_error_and_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    for bad in [
        &b"*2\r\n$3\r\nGET\r\n$99999999999\r\n"[..],
        b"*2147483647\r\n",
        b"*1\r\n:1\r\n",
        b"*1\r\n$3\r\nGETxx\r\n",
    ] {
        let mut c = s.client();
        c.send_raw(bad);
        match c.read() {
            Some(Reply::Error(e)) => assert!(e.contains("Protocol error"), "{e}"),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
        }
        assert_eq!(c.read(), None, "closed after a protocol error");
    }
    // The server is fine.
    assert_eq!(s.client().cmd("PING"), Reply::Simple("PONG".into()));
}

#[test]
fn the_client_limit_and_the_idle_timeout_hold() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--maxclients", "2", "--timeout", "1"]);
    let mut a = s.client();
    let mut b = s.client();
    assert_eq!(a.cmd("PING"), Reply::Simple("PONG".into()));
    assert_eq!(b.cmd("PING"), Reply::Simple("PONG".into()));
    let mut third = s.client();
    assert!(matches!(third.read(), Some(Reply::Error(e)) if e.contains("max number of clients")));
    // Idle connections close after the timeout, making room.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_eq!(a.read(), None);
    assert_eq!(s.client().cmd("PING"), Reply::Simple("PONG".into()));
}

#[test]
fn sigterm_and_shutdown_close_the_store_with_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    for i in 0..500 {
        assert_eq!(c.cmd(&format!("SET t{i:03} {i}")), Reply::ok());
    }
    assert!(s.terminate().success());
    // The store was closed: it opens (its lock is free) with every write.
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    assert_eq!(c.cmd("PREFIX t LIMIT 1000").pairs().1.len(), 500);
    c.cmd("SET last one");
    c.send_raw(&Client::encode(&[b"SHUTDOWN"]));
    assert_eq!(c.read(), None);
    assert!(s.wait_exit().success());
    let db = evendb::Db::open(dir.path()).unwrap();
    assert_eq!(db.get("last").unwrap().as_deref(), Some(&b"one"[..]));
}

#[test]
fn metrics_are_served_over_http() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--metrics-bind", "127.0.0.1:0"]);
    let mut c = s.client();
    c.cmd("SET a b");
    c.cmd("GET a");
    let addr = s.metrics.clone().expect("metrics address");
    let mut http = std::net::TcpStream::connect(&addr).unwrap();
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("evendb_puts_total 1\n"), "engine figures");
    assert!(text.contains("evendb_server_commands_total{cmd=\"get\"} 1\n"));
    assert!(text.contains("evendb_server_connections 1\n"));
}

#[test]
fn thousands_of_connections_are_served_at_once() {
    // Each connection costs a descriptor here and one in the server (which
    // inherits this process's limit): as many as the limit allows, up to
    // 3,000.
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3)?.parse::<usize>().ok())
        })
        .unwrap_or(1024);
    let conns_n = (limit.saturating_sub(200)).min(3000);
    assert!(
        conns_n >= 500,
        "descriptor limit {limit} too low for this test"
    );
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut conns: Vec<Client> = (0..conns_n).map(|_| s.client()).collect();
    // Every connection sends before any reads: all are open at once.
    for (i, c) in conns.iter_mut().enumerate() {
        c.send_raw(&Client::encode(&[b"SET", format!("c{i}").as_bytes(), b"v"]));
    }
    for c in &mut conns {
        assert_eq!(c.read(), Some(Reply::ok()));
    }
    let Reply::Bulk(info) = conns[0].cmd("INFO clients") else {
        panic!("INFO")
    };
    let info = String::from_utf8(info).unwrap();
    assert!(
        info.contains(&format!("connected_clients:{conns_n}\r\n")),
        "{info}"
    );
}

/// The server's resident memory in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_client_that_does_not_read_its_replies_cannot_grow_server_memory() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let big = vec![b'x'; 1 << 20];
    assert_eq!(c.call(&[b"SET", b"big", &big]), Reply::ok());
    let before = rss_kib(s.child.id());
    // 4,000 GETs of 1 MiB: 4 GiB of replies, none read for now. The
    // writes block once the socket buffers fill: send from a thread.
    let mut stream = c.stream.get_ref().try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        use std::io::Write;
        let burst: Vec<u8> = (0..4000)
            .flat_map(|_| Client::encode(&[b"GET", b"big"]))
            .collect();
        stream.write_all(&burst).is_ok()
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    let during = rss_kib(s.child.id());
    // Other clients are served meanwhile.
    assert_eq!(s.client().cmd("PING"), Reply::Simple("PONG".into()));
    assert!(
        during < before + 64 * 1024,
        "server RSS grew from {before} KiB to {during} KiB for one slow client"
    );
    // The slow client still gets every reply, in order, when it reads.
    for _ in 0..4000 {
        assert_eq!(c.read(), Some(Reply::Bulk(big.clone())));
    }
    assert!(sender.join().unwrap());
}

#[test]
fn pipelined_sets_in_sync_mode_commit_together_and_answer_each() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--durability", "sync"]);
    let mut c = s.client();
    let big_key = vec![b'k'; evendb::MAX_KEY_SIZE + 1];
    let mut burst = Vec::new();
    for i in 0..500 {
        burst.extend(Client::encode(&[
            b"SET",
            format!("s{i:03}").as_bytes(),
            format!("{i}").as_bytes(),
        ]));
    }
    // A run with a key past the limit falls back to one SET at a time.
    burst.extend(Client::encode(&[b"SET", b"ok1", b"1"]));
    burst.extend(Client::encode(&[b"SET", &big_key, b"x"]));
    burst.extend(Client::encode(&[b"SET", b"ok2", b"2"]));
    c.send_raw(&burst);
    for _ in 0..501 {
        assert_eq!(c.read(), Some(Reply::ok()));
    }
    assert!(matches!(c.read(), Some(Reply::Error(_))));
    assert_eq!(c.read(), Some(Reply::ok()));
    let Reply::Bulk(info) = c.cmd("INFO commandstats") else {
        panic!("INFO")
    };
    assert!(String::from_utf8_lossy(&info).contains("cmdstat_set:calls=503,"));
    // Acknowledged means durable: kill -9, reopen, all there.
    s.kill();
    let db = evendb::Db::open(dir.path()).unwrap();
    for i in 0..500 {
        assert_eq!(
            db.get(format!("s{i:03}")).unwrap(),
            Some(i.to_string().into_bytes())
        );
    }
    assert_eq!(db.get("ok2").unwrap().as_deref(), Some(&b"2"[..]));
}
