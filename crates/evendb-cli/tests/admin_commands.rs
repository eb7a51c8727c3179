//! stats, verify, backup, chunks, compact.

mod common;

use common::{contents, evendb, files, ok};

/// A closed store with several chunks and tables: small chunks and logs
/// force splits, and `compact` rebuilds every chunk into a table.
fn store_with_tables(db: &std::path::Path, keys: u32) {
    let h = evendb::Options::default()
        .max_chunk_size(4096)
        .max_log_size(1024)
        .maintenance_threads(0)
        .open(db)
        .unwrap();
    for i in 0..keys {
        h.put(
            format!("key|{i:05}"),
            format!("value {i} {}", "x".repeat(40)),
        )
        .unwrap();
    }
    h.compact().unwrap();
}

#[test]
fn backup_copies_a_store_that_opens_and_holds_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 300);
    ok(&db, &["put", "after-compact", "in the log"]);
    let expected = contents(&db);
    assert_eq!(expected.len(), 301);

    let dest = dir.path().join("backups").join("one");
    let out = ok(&db, &["backup", dest.to_str().unwrap(), "--verify"]);
    assert!(
        out.starts_with(&format!("backed up {} to {}", db.display(), dest.display())),
        "{out}"
    );
    assert!(out.ends_with("ok\n"), "{out}");
    let tables = files(&db).keys().filter(|n| n.ends_with(".tbl")).count();
    assert!(tables > 0);
    assert!(
        out.contains(&format!(", {tables} of them hard-linked tables")),
        "{out}"
    );
    assert_eq!(contents(&dest), expected);
    assert_eq!(ok(&dest, &["get", "after-compact"]), "in the log\n");

    // A destination that is not empty is refused and left as it was.
    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let r = evendb(&db, &["backup", busy.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("not empty") && r.stderr.contains("new or empty directory"),
        "{r:?}"
    );
    assert_eq!(files(&busy).len(), 1);

    // So is a destination inside the store (it would stop it from opening).
    let r = evendb(&db, &["backup", db.join("copy").to_str().unwrap()]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(!db.join("copy").exists());
    ok(&db, &["verify"]);
}

#[test]
fn verify_reports_a_sound_store_as_ok() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 200);
    let out = ok(&db, &["verify"]);
    assert!(out.ends_with("\nok\n"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&db, &["verify", "--json"])).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(json["problems"].as_array().unwrap().len(), 0);
    assert!(json["tables"].as_u64().unwrap() >= 2, "{json}");
    assert!(json["entries"].as_u64().unwrap() >= 200, "{json}");
}

#[test]
fn chunks_partition_the_key_space_and_open_reports_entries() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 400);
    let list: serde_json::Value = serde_json::from_str(&ok(&db, &["chunks", "--json"])).unwrap();
    let list = list.as_array().unwrap();
    assert!(list.len() >= 3, "expected splits: {list:?}");
    assert_eq!(list[0]["min_key"], "");
    assert!(list.last().unwrap()["end_key"].is_null());
    for pair in list.windows(2) {
        assert_eq!(pair[0]["end_key"], pair[1]["min_key"]);
        assert_eq!(pair[0]["open"], false);
        assert!(pair[0]["table_entries"].is_null());
    }

    let opened: serde_json::Value =
        serde_json::from_str(&ok(&db, &["chunks", "--json", "--open"])).unwrap();
    let entries: u64 = opened
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["open"], true);
            c["table_entries"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(entries, 400);

    let table = ok(&db, &["chunks"]);
    assert!(table.starts_with("id  min_key"), "{table}");
    assert_eq!(
        table.lines().filter(|l| l.contains("key|")).count(),
        list.len()
    );
    assert!(table.ends_with("pass --open)\n"), "{table}");
}

#[test]
fn chunks_show_log_length_filters_munks_and_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 200);
    // Two more opens, each writing a pair to the log: the log's versions
    // come from two epochs, later than the table's.
    ok(&db, &["put", "key|00001", "again"]);
    ok(&db, &["put", "key|00002", "again"]);
    let opened: serde_json::Value =
        serde_json::from_str(&ok(&db, &["chunks", "--json", "--open"])).unwrap();
    let chunks = opened.as_array().unwrap();
    let records: u64 = chunks
        .iter()
        .map(|c| c["log_records"].as_u64().unwrap())
        .sum();
    assert_eq!(records, 2, "{opened:#}");
    let first = &chunks[0];
    let (lo, hi) = (
        first["log_min_version"].as_u64().unwrap(),
        first["log_max_version"].as_u64().unwrap(),
    );
    assert!(lo < hi && lo >> 40 < hi >> 40, "two epochs: {first}");
    assert!(first["max_version"].as_u64().unwrap() < lo, "{first}");
    assert!(first["log_parts"].as_u64().unwrap() >= 1);
    assert!(first["filter_bytes"].as_u64().unwrap() > 0);
    assert!(first["munk_bytes"].is_null(), "the tool loads no munks");

    let table = ok(&db, &["chunks", "--open"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "id", "min_key", "end_key", "table", "entries", "log", "records", "segs", "filters",
            "munk", "versions"
        ]
    );
    let row = table.lines().nth(1).unwrap();
    let epoch = |v: u64| v >> 40;
    assert!(
        row.contains(&format!("{}.", epoch(lo))) && row.contains(&format!("{}.", epoch(hi))),
        "{table}"
    );
    assert!(!table.contains("pass --open"), "{table}");
}

#[test]
fn stats_shows_the_store_size_and_every_engine_figure_in_each_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 100);
    let before = files(&db);

    let json: serde_json::Value =
        serde_json::from_str(&ok(&db, &["stats", "--json", "--open"])).unwrap();
    let figures = evendb::Stats::default();
    for (name, _) in figures.fields() {
        assert!(json["engine"][name].is_u64(), "{name} missing: {json}");
    }
    for (name, _) in figures.derived() {
        assert!(json["engine"][name].is_number(), "{name} missing: {json}");
    }
    assert!(json["table_bytes"].as_u64().unwrap() > 0);
    assert_eq!(json["chunks"], json["engine"]["chunks"]);
    assert!(
        json["engine"]["funks_opened"].as_u64().unwrap() > 0,
        "--open opens every chunk: {json}"
    );
    assert!(json["engine"]["memory_indexes"].as_u64().unwrap() > 0);

    let human = ok(&db, &["stats"]);
    for label in [
        "size ",
        "operations",
        "rebuilds",
        "funk rebalance",
        "munks ",
        "row cache",
        "log filters",
        "memory",
        "put waits",
        "snapshots",
    ] {
        assert!(human.contains(label), "{label} missing:\n{human}");
    }
    assert!(
        human.contains(&format!("{} chunks", json["chunks"])),
        "{human}"
    );

    let text = ok(&db, &["stats", "--format", "prometheus"]);
    let mut samples = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let (kw, rest) = rest.split_once(' ').unwrap();
            assert!(kw == "HELP" || kw == "TYPE", "{line}");
            assert!(rest.starts_with("evendb_"), "{line}");
            continue;
        }
        let (name, value) = line.split_once(' ').expect("name value");
        assert!(
            name.starts_with("evendb_")
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        value.parse::<f64>().expect("numeric sample");
        samples += 1;
    }
    assert_eq!(
        samples,
        figures.fields().len() + figures.derived().len() + 3,
        "every figure, derived figure and store size: {text}"
    );
    assert!(text.contains(&format!(
        "\nevendb_store_table_bytes {}\n",
        json["table_bytes"]
    )));

    // Looking changes no pair (the open rewrites only the MANIFEST).
    let after = files(&db);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
}

#[test]
fn compact_keeps_the_data_and_drops_deleted_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..20 {
        ok(&db, &["put", &format!("k{i:02}"), "v"]);
    }
    for i in 0..10 {
        ok(&db, &["delete", &format!("k{i:02}")]);
    }
    let out = ok(&db, &["compact"]);
    assert!(out.starts_with("compacted"), "{out}");
    assert_eq!(contents(&db).len(), 10);
    let opened: serde_json::Value =
        serde_json::from_str(&ok(&db, &["chunks", "--json", "--open"])).unwrap();
    assert_eq!(opened[0]["table_entries"], 10);
    // The rebuilt chunk starts a new, empty log: no records, only the
    // file header every log starts with.
    assert_eq!(opened[0]["log_records"], 0, "{opened:#}");
    assert_eq!(
        opened[0]["log_bytes"],
        common::FILE_HEADER_LEN,
        "{opened:#}"
    );
}

#[test]
fn long_commands_draw_no_progress_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 300);
    let dump = dir.path().join("all.jsonl");
    let backup = dir.path().join("backup");
    let copy = dir.path().join("copy");
    for (store, args) in [
        (&db, vec!["verify"]),
        (&db, vec!["dump", dump.to_str().unwrap()]),
        (&copy, vec!["load", dump.to_str().unwrap()]),
        (&db, vec!["backup", backup.to_str().unwrap(), "--verify"]),
        (&db, vec!["compact"]),
        (&db, vec!["stats", "--open"]),
        (&db, vec!["chunks", "--open"]),
    ] {
        let r = evendb(store, &args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        assert_eq!(r.stderr, "", "{args:?} wrote to a piped stderr");
    }
}

/// Runs `evendb ARGS` under a pseudo-terminal (util-linux `script`), or
/// returns None where that tool is missing.
fn on_a_terminal(db: &std::path::Path, args: &str) -> Option<String> {
    let cmd = format!(
        "{} --db {} {args}",
        env!("CARGO_BIN_EXE_evendb"),
        db.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn verify_draws_a_progress_bar_on_a_terminal_unless_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 300);
    let Some(shown) = on_a_terminal(&db, "verify") else {
        eprintln!("skipped: no `script` to make a pseudo-terminal");
        return;
    };
    assert!(
        shown.contains("verifying") && shown.contains("KiB"),
        "{shown}"
    );
    let quiet = on_a_terminal(&db, "verify --quiet").unwrap();
    assert!(!quiet.contains("verifying"), "{quiet}");
    assert!(quiet.contains("ok"), "{quiet}");
}

#[test]
fn the_stats_flag_prints_what_the_engine_did_for_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    let input = dir.path().join("pairs.tsv");
    let lines: String = (0..2000)
        .map(|i| format!("key|{i:05}\tvalue {i}\n"))
        .collect();
    std::fs::write(&input, lines).unwrap();
    let r = evendb(&db, &["load", input.to_str().unwrap(), "--stats"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("loaded 2000 pairs"), "{r:?}");
    assert!(
        r.stderr.starts_with(&format!(
            "engine figures for {} during this command:\n",
            db.display()
        )),
        "{r:?}"
    );
    assert!(r.stderr.contains("2000 puts, 0 deletes"), "{r:?}");
    assert!(r.stderr.contains("write amplification"), "{r:?}");
    // Without the flag, stderr stays empty.
    let r = evendb(&db, &["get", "key|00007"]);
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("value 7\n", ""));
}

#[test]
fn verify_shows_a_torn_log_tail_but_passes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..3 {
        ok(&db, &["put", &format!("k{i}"), "v"]);
    }
    // Bytes after the last whole record, past the length the checkpoint
    // recorded durable: what a crash in the middle of an append leaves.
    // (First the zero padding of the log's last page: the records end in
    // a non-zero byte.)
    let log = db.join("000001.log");
    let mut bytes = std::fs::read(&log).unwrap();
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes.extend_from_slice(&[0; 20]);
    std::fs::write(&log, bytes).unwrap();

    let r = evendb(&db, &["verify", "--json"]);
    assert_eq!(r.code, 0, "a torn tail is no damage: {r:?}");
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(
        json["torn_tails"],
        serde_json::json!([{ "file": "000001.log", "bytes": 20 }]),
        "{json:#}"
    );
    assert_eq!(json["lost_and_found"], serde_json::json!([]));

    let r = evendb(&db, &["verify"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .contains("torn tail: 000001.log ends in 20 bytes after its last whole record"),
        "{r:?}"
    );
    assert!(r.stdout.ends_with("\nok\n"), "{r:?}");
}

#[test]
fn verify_shows_files_moved_to_lost_and_found_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "k", "v"]);
    // An engine-named file the MANIFEST does not list, whose header is
    // unreadable: open keeps it, out of the way, instead of deleting it.
    let stray = vec![0xab; 100];
    std::fs::write(db.join("000077.log"), &stray).unwrap();

    // `verify` opens read-only: it reports the file and moves nothing.
    let r = evendb(&db, &["verify"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("leftover: 000077.log"), "{r:?}");
    assert_eq!(files(&db)["000077.log"], stray);
    // The next command that writes moves it aside.
    ok(&db, &["put", "k2", "v"]);
    let r = evendb(&db, &["verify"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(files(&db)["lost+found/000077.log"], stray, "kept as it was");
    assert!(!db.join("000077.log").exists());
    assert!(
        r.stdout.contains("lost+found: 000077.log (moved aside"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains(&format!(
            "hint: the store does not use the files in {}",
            db.join("lost+found").display()
        )),
        "{r:?}"
    );
    assert!(r.stdout.ends_with("\nok\n"), "{r:?}");

    let json: serde_json::Value = serde_json::from_str(&ok(&db, &["verify", "--json"])).unwrap();
    assert_eq!(json["lost_and_found"], serde_json::json!(["000077.log"]));
    assert_eq!(json["torn_tails"], serde_json::json!([]));
    assert_eq!(ok(&db, &["get", "k"]), "v\n");
}

#[test]
fn read_commands_open_the_store_read_only_and_change_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    store_with_tables(&db, 200);
    ok(&db, &["put", "in-the-log", "v"]);
    let before = files(&db);
    let out = ok(&db, &["get", "key|00007"]);
    assert!(out.contains("value 7"), "{out}");
    ok(&db, &["scan", "--limit", "5"]);
    ok(&db, &["dump"]);
    ok(&db, &["stats"]);
    ok(&db, &["verify"]);
    ok(&db, &["chunks"]);
    // Writes and every new epoch would change MANIFEST, CHECKPOINT or logs.
    assert_eq!(files(&db), before, "a read command wrote to the store");
    // A write command still writes.
    ok(&db, &["put", "later", "v"]);
    assert_ne!(files(&db), before);
}
