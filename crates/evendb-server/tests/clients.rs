//! The server driven by clients no one here wrote: `redis-cli` (Debian's
//! `redis-tools`) and the `redis` package for Python.
//!
//! Where a client is not installed the test says so and passes without
//! it; `.ci/run` installs both and sets `EVENDB_REQUIRE_CLIENTS=1`, which
//! turns a missing client into a failure.

mod common;

use common::Server;
use std::io::Write;
use std::process::{Command, Stdio};

/// True if `program` runs; panics if it does not and the clients are
/// required.
fn available(program: &str, check: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(check)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("EVENDB_REQUIRE_CLIENTS").is_none(),
            "{program} is required (EVENDB_REQUIRE_CLIENTS is set) but does not run"
        );
        eprintln!(
            "SKIPPED: {program} is not installed (apt-get install redis-tools; pip install redis)"
        );
    }
    ok
}

/// Runs `redis-cli -p <port> <args>` and returns its output.
fn cli(port: u16, args: &[&str]) -> String {
    cli_in(port, args, None)
}

fn cli_in(port: u16, args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn redis_cli_runs_every_command() {
    if !available("redis-cli", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &["--requirepass", "pw"]);
    let p = s.port;
    assert!(cli(p, &["PING"]).contains("NOAUTH"));
    let a = |args: &[&str]| -> String {
        let mut all = vec!["-a", "pw", "--no-auth-warning"];
        all.extend_from_slice(args);
        cli(p, &all)
    };
    assert_eq!(a(&["PING"]), "PONG\n");
    assert_eq!(a(&["ECHO", "hello world"]), "hello world\n");
    assert_eq!(a(&["SET", "user:1", "alice"]), "OK\n");
    assert_eq!(a(&["SET", "user:1", "bob", "NX"]), "\n");
    assert_eq!(a(&["SET", "user:2", "bob", "XX"]), "\n");
    assert_eq!(a(&["GET", "user:1"]), "alice\n");
    assert_eq!(a(&["MSET", "user:2", "bob", "user:3", "carol"]), "OK\n");
    assert_eq!(
        a(&["MGET", "user:1", "nobody", "user:3"]),
        "alice\n\ncarol\n"
    );
    assert_eq!(a(&["EXISTS", "user:1", "user:2", "nobody"]), "2\n");
    assert_eq!(a(&["DEL", "user:3", "nobody"]), "1\n");
    assert_eq!(
        a(&["RANGE", "-", "+", "LIMIT", "1"]),
        "(user:1\nuser:1\nalice\n"
    );
    assert_eq!(
        a(&["PREFIX", "user:", "REV"]),
        "\nuser:2\nbob\nuser:1\nalice\n"
    );
    // Paging: newest first one pair at a time, the cursor as the next
    // read's end; a prefix read from a cursor.
    assert_eq!(
        a(&["RANGE", "-", "+", "LIMIT", "1", "REV"]),
        "(user:2\nuser:2\nbob\n"
    );
    assert_eq!(
        a(&["RANGE", "-", "(user:2", "LIMIT", "1", "REV"]),
        "\nuser:1\nalice\n" // the empty cursor: nothing is left
    );
    assert_eq!(
        a(&["PREFIX", "user:", "CURSOR", "(user:1"]),
        "\nuser:2\nbob\n"
    );
    assert_eq!(a(&["DELRANGE", "[user:2", "+"]), "OK\n");
    assert_eq!(a(&["PREFIX", "user:"]), "\nuser:1\nalice\n");
    assert_eq!(a(&["SET", "other", "x"]), "OK\n");
    assert_eq!(a(&["DELPREFIX", "user:"]), "OK\n");
    assert_eq!(a(&["PREFIX", "user:"]), "\n\n");
    assert_eq!(a(&["GET", "other"]), "x\n");
    // QUIT answers before the server closes the connection.
    assert_eq!(a(&["QUIT"]), "OK\n");
    assert_eq!(a(&["FLUSH"]), "OK\n");
    assert!(a(&["INFO", "evendb"]).contains("puts:"));
    let hello = cli(
        p,
        &["-3", "--no-raw", "HELLO", "3", "AUTH", "default", "pw"],
    );
    assert!(
        hello.contains("\"proto\"") && hello.contains("(integer) 3"),
        "{hello}"
    );
    assert!(a(&["NOSUCHCOMMAND", "x"]).contains("ERR unknown command"));
    assert!(a(&["SET", "k"]).contains("wrong number of arguments"));
    // Binary-safe: a value with NUL, CR and LF from stdin (-x), and a key
    // with them written as redis-cli's quoted escapes.
    let value = b"a\x00b\r\nc\xff";
    assert_eq!(
        cli_in(
            p,
            &["-a", "pw", "--no-auth-warning", "-x", "SET", "bin"],
            Some(value)
        ),
        "OK\n"
    );
    let got = cli(
        p,
        &["-a", "pw", "--no-auth-warning", "--no-raw", "GET", "bin"],
    );
    assert_eq!(got, "\"a\\x00b\\r\\nc\\xff\"\n");
    let script = b"AUTH pw\nSET \"k\\x00\\r\\n\" \"v\\x01\"\nGET \"k\\x00\\r\\n\"\n";
    assert_eq!(
        cli_in(p, &["--no-raw"], Some(script)),
        "OK\nOK\n\"v\\x01\"\n"
    );
    assert_eq!(a(&["SHUTDOWN"]), "");
    assert!(s.wait_exit().success());
}

#[test]
fn redis_cli_pipelines_and_sees_mset_whole_from_another_connection() {
    if !available("redis-cli", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let p = s.port;
    // Mass insertion: 20,000 commands in one stream.
    let mut stream = Vec::new();
    for i in 0..20_000 {
        let (k, v) = (format!("pipe:{i:05}"), i.to_string());
        stream.extend(common::Client::encode(&[
            b"SET",
            k.as_bytes(),
            v.as_bytes(),
        ]));
    }
    let out = cli_in(p, &["--pipe"], Some(&stream));
    assert!(out.contains("errors: 0, replies: 20000"), "{out}");
    let mut c = s.client();
    assert_eq!(c.cmd("PREFIX pipe: LIMIT 100000").pairs().1.len(), 20_000);
    // One connection alternates two MSETs of 30 keys; another reads them
    // all with MGET, 300 times, and must see one MSET or the other.
    let keys: Vec<String> = (0..30).map(|i| format!("m{i:02}")).collect();
    let mset = |v: &str| {
        let mut line = String::from("MSET");
        for k in &keys {
            line.push_str(&format!(" {k} {v}"));
        }
        line + "\n"
    };
    let mut script = String::new();
    for _ in 0..400 {
        script.push_str(&mset("one"));
        script.push_str(&mset("two"));
    }
    c.cmd(&mset("one"));
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| cli_in(p, &[], Some(script.as_bytes())));
        let mut args = vec!["-r", "300", "MGET"];
        args.extend(keys.iter().map(String::as_str));
        let out = cli(p, &args);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 300 * keys.len(), "{out}");
        for group in lines.chunks(keys.len()) {
            assert!(
                group.iter().all(|v| *v == group[0]),
                "half an MSET: {group:?}"
            );
        }
        assert_eq!(
            writer
                .join()
                .unwrap()
                .lines()
                .filter(|l| *l == "OK")
                .count(),
            800
        );
    });
}

#[test]
fn the_python_redis_client_works() {
    if !available("python3", &["-c", "import redis"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python_client.py");
    let out = Command::new("python3")
        .args([script, &s.port.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("python client: all checks passed"));
}
