//! put / get / delete / scan through the real binary, and the key rules.

mod common;

use common::{evendb, ok};

#[test]
fn put_then_get_returns_the_value_and_delete_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "user42|msg1", "hello world"]);
    assert_eq!(ok(&db, &["get", "user42|msg1"]), "hello world\n");
    ok(&db, &["put", "user42|msg1", "edited"]);
    assert_eq!(ok(&db, &["get", "user42|msg1"]), "edited\n");
    ok(&db, &["delete", "user42|msg1"]);
    let r = evendb(&db, &["get", "user42|msg1"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert_eq!(r.stdout, "");
    assert!(r.stderr.contains("no value for key user42|msg1"), "{r:?}");
    // Deleting an absent key succeeds.
    ok(&db, &["delete", "never-there"]);
}

#[test]
fn empty_values_and_the_empty_key_are_stored_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "k", ""]);
    ok(&db, &["put", "", "value of the empty key"]);
    assert_eq!(ok(&db, &["get", "k"]), "\n");
    assert_eq!(ok(&db, &["get", ""]), "value of the empty key\n");
    assert_eq!(ok(&db, &["scan"]), "\tvalue of the empty key\nk\t\n");
}

#[test]
fn scan_honours_from_to_prefix_and_limit_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for (k, v) in [
        ("app2|0001", "d"),
        ("app1|0002", "b"),
        ("app1|0001", "a"),
        ("app1|0003", "c"),
        ("app10|0001", "e"),
    ] {
        ok(&db, &["put", k, v]);
    }
    // Byte order: '0' (0x30) sorts before '|' (0x7c).
    assert_eq!(
        ok(&db, &["scan"]),
        "app10|0001\te\napp1|0001\ta\napp1|0002\tb\napp1|0003\tc\napp2|0001\td\n"
    );
    assert_eq!(
        ok(&db, &["scan", "--prefix", "app1|"]),
        "app1|0001\ta\napp1|0002\tb\napp1|0003\tc\n"
    );
    assert_eq!(
        ok(&db, &["scan", "--from", "app1|0002", "--to", "app2|0001"]),
        "app1|0002\tb\napp1|0003\tc\n"
    );
    assert_eq!(
        ok(
            &db,
            &[
                "scan",
                "--prefix",
                "app1|",
                "--from",
                "app1|0002",
                "--limit",
                "1"
            ]
        ),
        "app1|0002\tb\n"
    );
    assert_eq!(
        ok(
            &db,
            &[
                "scan",
                "--prefix",
                "app1",
                "--to",
                "app1|0002",
                "--keys-only"
            ]
        ),
        "app10|0001\napp1|0001\n"
    );
    assert_eq!(ok(&db, &["scan", "--limit", "0"]), "");
    assert_eq!(ok(&db, &["scan", "--from", "b", "--to", "a"]), "");
    // Newest first: an app's latest events.
    assert_eq!(
        ok(
            &db,
            &["scan", "--prefix", "app1|", "--reverse", "--limit", "2"]
        ),
        "app1|0003\tc\napp1|0002\tb\n"
    );
    assert_eq!(
        ok(
            &db,
            &["scan", "--reverse", "--keys-only", "--to", "app1|0002"]
        ),
        "app1|0001\napp10|0001\n"
    );
}

#[test]
fn delete_range_removes_a_prefix_or_a_range_and_refuses_no_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for k in ["app1|01", "app1|02", "app1|03", "app2|01", "app3|01"] {
        ok(&db, &["put", k, "v"]);
    }
    ok(
        &db,
        &["delete-range", "--prefix", "app1|", "--from", "app1|02"],
    );
    assert_eq!(
        ok(&db, &["scan", "--keys-only"]),
        "app1|01\napp2|01\napp3|01\n"
    );
    ok(&db, &["delete-range", "--to", "app3|"]);
    assert_eq!(ok(&db, &["scan", "--keys-only"]), "app3|01\n");
    let r = evendb(&db, &["delete-range"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--all"), "{r:?}");
    assert_eq!(ok(&db, &["scan", "--keys-only"]), "app3|01\n");
    ok(&db, &["delete-range", "--all"]);
    assert_eq!(ok(&db, &["scan"]), "");
}

#[test]
fn binary_keys_go_in_as_hex_and_come_out_as_hex() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "--hex", "00ff", "cafe"]);
    ok(&db, &["put", "0x0a0b", "text value"]);
    // A text key that looks like hex: --text stores it as text, and it is
    // shown as hex so that the shown form names it again.
    ok(&db, &["put", "--text", "0xab", "literal"]);
    ok(&db, &["put", "tab\tkey", "line\nvalue"]);
    assert_eq!(
        ok(&db, &["scan"]),
        "0x00ff\t0xcafe\n0x0a0b\ttext value\n0x30786162\tliteral\n\
         0x746162096b6579\t0x6c696e650a76616c7565\n"
    );
    assert_eq!(ok(&db, &["get", "0x30786162"]), "literal\n");
    assert_eq!(ok(&db, &["get", "--text", "0xab"]), "literal\n");
    assert_eq!(
        ok(&db, &["get", "--hex", "0a0b"]),
        "0x746578742076616c7565\n"
    );
    assert_eq!(
        ok(&db, &["scan", "--hex", "--keys-only", "--prefix", "0x00"]),
        "0x00ff\n"
    );
}

#[test]
fn a_bad_hex_argument_is_a_usage_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let r = evendb(&db, &["put", "0xzz", "v"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("not valid hex") && r.stderr.contains("--text"),
        "{r:?}"
    );
    assert!(!db.exists());
    let r = evendb(&db, &["put", "--hex", "abc", "00"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(!db.exists());
}

#[test]
fn only_put_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for args in [&["get", "k"][..], &["delete", "k"], &["scan"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stderr.contains("does not exist"), "{r:?}");
        assert!(!db.exists(), "{args:?} created the store");
    }
    ok(&db, &["put", "k", "v"]);
    assert!(db.join("MANIFEST").exists());
}

#[test]
fn missing_db_option_is_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evendb"))
        .args(["get", "k"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db PATH is required"));
}

#[test]
fn scan_into_a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let lines: String = (0..5000)
        .map(|i| {
            format!(
                "{{\"key\":\"k{i:05}\",\"value\":\"{}\"}}\n",
                "v".repeat(100)
            )
        })
        .collect();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, lines).unwrap();
    ok(&db, &["load", input.to_str().unwrap()]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_evendb"))
        .arg("--db")
        .arg(&db)
        .arg("scan")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(&first[..7], b"k00000\t");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
}
