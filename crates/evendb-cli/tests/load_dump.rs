//! load and dump: exact round trips, the three formats, and bad input that
//! must leave the store untouched.

mod common;

use common::{contents, evendb, files, ok};
use std::collections::BTreeMap;
use std::path::Path;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Pairs that exercise every encoding corner: binary, empty, control
/// characters, quotes, text that looks like hex, non-ASCII text.
fn awkward_pairs() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    m.insert(b"".to_vec(), b"value of the empty key".to_vec());
    m.insert(b"empty-value".to_vec(), b"".to_vec());
    m.insert(vec![0x00, 0xff, 0x80], vec![0xc3, 0x28, 0x00]);
    m.insert(
        b"tab\tand\nnewline".to_vec(),
        b"quote \" backslash \\".to_vec(),
    );
    m.insert(b"0xab".to_vec(), b"0x".to_vec());
    m.insert("caf\u{e9}|\u{1f600}".as_bytes().to_vec(), vec![0xff; 3]);
    for i in 0..200u32 {
        m.insert(
            format!("bulk|{i:04}").into_bytes(),
            i.to_le_bytes().to_vec(),
        );
    }
    m
}

fn write_jsonl(path: &Path, pairs: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let text: String = pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{{\"key_hex\":\"{}\",\"value_hex\":\"0x{}\"}}\n",
                hex(k),
                hex(v)
            )
        })
        .collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn load_dump_load_gives_a_second_store_with_the_same_contents() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let expected = awkward_pairs();
    let input = dir.path().join("input.jsonl");
    write_jsonl(&input, &expected);

    let r = evendb(&a, &["load", input.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        format!(
            "loaded {} pairs from {} into {}\n",
            expected.len(),
            input.display(),
            a.display()
        )
    );
    assert_eq!(
        r.stderr, "",
        "no progress bar when stderr is not a terminal"
    );
    assert_eq!(contents(&a), expected);

    let dump = dir.path().join("a.jsonl");
    ok(&a, &["dump", dump.to_str().unwrap()]);
    let text = std::fs::read_to_string(&dump).unwrap();
    assert_eq!(text.lines().count(), expected.len());
    assert!(
        text.contains(r#"{"key":"empty-value","value":""}"#),
        "UTF-8 stays readable"
    );
    assert!(
        text.contains(r#"{"key_hex":"00ff80","value_hex":"c32800"}"#),
        "binary as hex"
    );
    // Dumping to standard output writes the same bytes.
    assert_eq!(ok(&a, &["dump"]), text);

    ok(&b, &["load", dump.to_str().unwrap()]);
    assert_eq!(contents(&b), expected);

    // --hex writes every pair as hex, and that loads back the same too.
    let c = dir.path().join("c");
    let hex_dump = dir.path().join("hex.ndjson");
    ok(&b, &["dump", "--hex", hex_dump.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&hex_dump)
        .unwrap()
        .lines()
        .all(|l| l.starts_with("{\"key_hex\":")));
    ok(&c, &["load", hex_dump.to_str().unwrap()]);
    assert_eq!(contents(&c), expected);
}

#[test]
fn dump_covers_only_the_requested_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for k in ["a1", "b1", "b2", "c1"] {
        ok(&db, &["put", k, "v"]);
    }
    assert_eq!(
        ok(&db, &["dump", "--prefix", "b"]),
        "{\"key\":\"b1\",\"value\":\"v\"}\n{\"key\":\"b2\",\"value\":\"v\"}\n"
    );
}

#[test]
fn csv_and_tsv_load_with_quoting_headers_and_hex() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let csv = dir.path().join("in.csv");
    std::fs::write(
        &csv,
        "key,value\nk1,plain\n\"k,2\",\"two\nlines, \"\"quoted\"\"\"\nk3,\n",
    )
    .unwrap();
    ok(&db, &["load", "--header", csv.to_str().unwrap()]);
    let tsv = dir.path().join("in.tsv");
    std::fs::write(&tsv, "t1\t\"not quoted\"\r\nt2\tsecond\n").unwrap();
    ok(&db, &["load", tsv.to_str().unwrap()]);
    let hex_csv = dir.path().join("hex.data");
    std::fs::write(&hex_csv, "00ff,0xbeef\n").unwrap();
    ok(
        &db,
        &[
            "load",
            "--format",
            "csv",
            "--hex",
            hex_csv.to_str().unwrap(),
        ],
    );

    let expected: BTreeMap<Vec<u8>, Vec<u8>> = [
        (&b"k1"[..], &b"plain"[..]),
        (b"k,2", b"two\nlines, \"quoted\""),
        (b"k3", b""),
        (b"t1", b"\"not quoted\""),
        (b"t2", b"second"),
        (&[0x00, 0xff], &[0xbe, 0xef]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_vec(), v.to_vec()))
    .collect();
    assert_eq!(contents(&db), expected);
}

#[test]
fn a_malformed_line_is_named_and_the_store_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "existing", "value"]);
    let before = files(&db);

    let input = dir.path().join("bad.jsonl");
    std::fs::write(
        &input,
        "{\"key\":\"a\",\"value\":\"1\"}\n\n{\"key\":\"b\",\"value\":\"2\"}\n{\"key\":\"c\",\"value\":3}\n{\"key\":\"d\",\"value\":\"4\"}\n",
    )
    .unwrap();
    let r = evendb(&db, &["load", input.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("line 4"), "{r:?}");
    assert!(
        r.stderr.contains("\"value\" must be a JSON string"),
        "{r:?}"
    );
    assert!(r.stderr.contains("nothing was written"), "{r:?}");
    assert_eq!(
        files(&db),
        before,
        "a failed load changed the store's files"
    );

    // Into a path with no store, a failed load creates nothing.
    let fresh = dir.path().join("fresh");
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "k1,v1\nk2,v2,extra\n").unwrap();
    let r = evendb(&fresh, &["load", csv.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("line 2: expected 2 fields"), "{r:?}");
    assert!(!fresh.exists());
}

#[test]
fn an_oversized_key_in_an_import_is_refused_before_any_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "existing", "value"]);
    let before = files(&db);
    let input = dir.path().join("big.tsv");
    let big = "k".repeat(evendb::MAX_KEY_SIZE + 1);
    std::fs::write(&input, format!("small\tv\n{big}\tv\n")).unwrap();
    let r = evendb(&db, &["load", input.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("line 2: key of 16385 bytes is over the limit"),
        "{r:?}"
    );
    assert_eq!(files(&db), before);
}

#[test]
fn load_needs_a_known_format_and_dump_will_not_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let input = dir.path().join("pairs.txt");
    std::fs::write(&input, "k\tv\n").unwrap();
    let r = evendb(&db, &["load", input.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--format"), "{r:?}");
    assert!(!db.exists());
    ok(&db, &["load", "--format", "tsv", input.to_str().unwrap()]);

    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "precious").unwrap();
    let r = evendb(&db, &["dump", out.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("--force"), "{r:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");
    ok(&db, &["dump", "--force", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "{\"key\":\"k\",\"value\":\"v\"}\n"
    );
}

#[test]
fn load_reads_standard_input_when_given_a_format() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let run = |args: &[&str], input: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_evendb"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A command that refuses its arguments exits without reading its
        // input: then the pipe is closed, and that is no failure.
        let written = child.stdin.take().unwrap().write_all(input.as_bytes());
        if let Err(e) = written {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    };
    let out = run(&["load", "-"], "a\t1\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format"));
    assert!(!db.exists());
    let out = run(&["load", "--format", "tsv", "-"], "a\t1\nb\t2\n");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("loaded 2 pairs from standard input into {}\n", db.display())
    );
    assert_eq!(contents(&db).len(), 2);
}
