//! Bad input: each case gives a clear error and a non-zero exit, and
//! changes nothing on disk.

mod common;

use common::{evendb, files, ok, open, FILE_HEADER_LEN};
use std::collections::BTreeMap;

/// Every command that must not create a store, with arguments.
const READERS: &[&[&str]] = &[
    &["get", "k"],
    &["delete", "k"],
    &["scan"],
    &["dump"],
    &["stats"],
    &["verify"],
    &["chunks"],
    &["compact"],
];

#[test]
fn a_missing_directory_is_reported_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo");
    for args in READERS
        .iter()
        .copied()
        .chain([&["backup", "/nonexistent/x"][..]])
    {
        let r = evendb(&db, args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!(
                "cannot open the store at {}: the directory does not exist",
                db.display()
            )),
            "{args:?}: {r:?}"
        );
        assert!(r.stderr.contains("hint:"), "{r:?}");
        assert!(!db.exists(), "{args:?} created {}", db.display());
    }
}

#[test]
fn an_empty_directory_is_not_a_store_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    for args in READERS {
        let r = evendb(dir.path(), args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stderr.contains("the directory is empty"), "{r:?}");
        assert!(
            files(dir.path()).is_empty(),
            "{args:?} wrote into the directory"
        );
    }
}

#[test]
fn a_foreign_directory_is_refused_even_by_put() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thesis.txt"), "do not touch").unwrap();
    let before = files(dir.path());
    let r = evendb(dir.path(), &["put", "k", "v"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("is not an evendb store"), "{r:?}");
    assert_eq!(files(dir.path()), before);
    let r = evendb(dir.path(), &["get", "k"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("holds no MANIFEST"), "{r:?}");
    assert_eq!(files(dir.path()), before);
}

#[test]
fn a_store_held_open_by_another_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "k", "v"]);
    let holder = open(&db);
    let before = files(&db);
    let commands: Vec<&[&str]> = READERS
        .iter()
        .copied()
        .chain([&["put", "k", "new"][..], &["get", "k"]])
        .collect();
    for args in commands {
        let r = evendb(&db, args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("another process has the store")
                && r.stderr.contains("close the other process first"),
            "{args:?}: {r:?}"
        );
        assert_eq!(files(&db), before, "{args:?} changed the store");
    }
    drop(holder);
    assert_eq!(ok(&db, &["get", "k"]), "v\n");
}

/// What a command that only reads must leave as it was. The engine has no
/// read-only open: every open stores a new MANIFEST (the next generation
/// and epoch; files deleted since the last one drop off its obsolete list)
/// and records the epoch in CHECKPOINT. So those two are compared by what
/// they mean, the chunks and the sizes of their files as `chunks --json`
/// lists them, and every other file (tables, logs, anything moved into
/// lost+found/) byte for byte.
#[derive(Debug, PartialEq)]
struct Picture {
    files: BTreeMap<String, Vec<u8>>,
    chunks: serde_json::Value,
}

fn picture(db: &std::path::Path) -> Picture {
    let mut files = files(db);
    files.remove("MANIFEST");
    files.remove("CHECKPOINT");
    let chunks = serde_json::from_str(&ok(db, &["chunks", "--json"])).unwrap();
    Picture { files, chunks }
}

#[test]
fn a_corrupt_table_is_reported_with_file_and_offset_and_left_as_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    {
        let h = evendb::Options::default()
            .max_log_size(1024)
            .maintenance_threads(0)
            .open(&db)
            .unwrap();
        for i in 0..50 {
            h.put(format!("user{i:03}"), format!("v{i}")).unwrap();
        }
        h.compact().unwrap();
    }
    let table = files(&db)
        .into_keys()
        .find(|n| n.ends_with(".tbl"))
        .expect("compact wrote a table");
    let path = db.join(&table);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[FILE_HEADER_LEN as usize + 20] ^= 0xff; // inside the first data block
    std::fs::write(&path, bytes).unwrap();
    let before = picture(&db);

    for args in [&["get", "user001"][..], &["scan"], &["dump"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!(
                "corrupt data in {} at offset {FILE_HEADER_LEN}",
                path.display()
            )),
            "{args:?}: {r:?}"
        );
        assert!(
            r.stderr
                .contains(&format!("evendb --db {} verify", db.display())),
            "{r:?}"
        );
        assert_eq!(picture(&db), before, "{args:?} changed the store");
    }
    let r = evendb(&db, &["verify"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stdout.contains(&format!(
            "problem: chunk 1: corruption in {}",
            path.display()
        )),
        "{r:?}"
    );
    assert!(
        r.stdout.ends_with("FAILED: 1 problems, 0 orphan files\n"),
        "{r:?}"
    );
    assert_eq!(picture(&db), before);
}

#[test]
fn a_corrupt_manifest_stops_every_command_and_is_left_as_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "k", "v"]);
    let manifest = db.join("MANIFEST");
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[30] ^= 0x01;
    std::fs::write(&manifest, bytes).unwrap();
    let before = files(&db);
    for args in [&["get", "k"][..], &["verify"], &["put", "k", "w"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr
                .contains(&format!("corrupt data in {}", manifest.display())),
            "{args:?}: {r:?}"
        );
        assert_eq!(files(&db), before, "{args:?} changed the store");
    }
}

#[test]
fn a_damaged_log_record_before_valid_ones_is_reported_and_not_truncated() {
    let (_dir, db, log) = store_with_a_log();
    let path = db.join(&log);
    let mut bytes = std::fs::read(&path).unwrap();
    // The key of the first record (after its 36-byte record header): its
    // body checksum fails.
    bytes[FILE_HEADER_LEN as usize + 40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let before = picture(&db);

    for args in [&["get", "k1"][..], &["scan"], &["stats", "--open"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        // The engine's detail goes on to say why this is damage and not a
        // torn tail: the record lies before the length the last checkpoint
        // recorded durable (as here), or valid records follow it.
        assert!(
            r.stderr.contains(&format!(
                "corrupt data in {} at offset {FILE_HEADER_LEN}: damaged log record",
                path.display()
            )),
            "{args:?}: {r:?}"
        );
        assert!(r.stderr.contains("hint: run `evendb --db"), "{r:?}");
        assert_eq!(
            picture(&db),
            before,
            "{args:?} cut the log as if its tail were torn"
        );
    }
    let r = evendb(&db, &["verify", "--json"]);
    assert_eq!(r.code, 3, "{r:?}");
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert!(
        report["problems"][0].as_str().unwrap().contains(&log),
        "{report}"
    );
}

#[test]
fn a_missing_listed_log_is_damage_for_every_command() {
    let (dir, db, log) = store_with_a_log();
    std::fs::remove_file(db.join(&log)).unwrap();
    let before = files(&db);
    let dump = dir.path().join("out.jsonl");
    let backup = dir.path().join("backup");
    for args in [
        &["get", "k1"][..],
        &["scan"],
        &["stats"],
        &["chunks"],
        &["verify"],
        &["verify", "--json"],
        &["stats", "--open"],
        &["chunks", "--open"],
        &["dump", dump.to_str().unwrap()],
        &["put", "k", "v"],
        &["delete", "k1"],
        &["compact"],
        &["backup", backup.to_str().unwrap()],
    ] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!(
                "{} is listed in the store's MANIFEST but does not exist",
                db.join(&log).display()
            )),
            "{args:?}: {r:?}"
        );
        assert!(
            r.stderr.contains("hint: restore the store from a backup")
                && r.stderr.contains("repair --out"),
            "{args:?}: {r:?}"
        );
        assert_eq!(files(&db), before, "{args:?} changed the store");
    }
    assert!(!dump.exists() && !backup.exists());
}

#[test]
fn a_write_into_evendb_files_without_a_manifest_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..5 {
        ok(&db, &["put", &format!("k{i}"), &format!("value {i}")]);
    }
    std::fs::remove_file(db.join("MANIFEST")).unwrap();
    let before = files(&db);
    let log = before.get("000001.log").expect("the puts' log").clone();
    assert!(log.len() as u64 > FILE_HEADER_LEN, "the log holds the puts");

    let input = dir.path().join("more.tsv");
    std::fs::write(&input, "k9\tv9\n").unwrap();
    for args in [
        &["put", "k", "v"][..],
        &["load", input.to_str().unwrap()],
        &["delete", "k1"],
        &["get", "k1"],
        &["verify"],
    ] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!(
                "{} holds evendb files but no MANIFEST",
                db.display()
            )) && r.stderr.contains("000001.log"),
            "{args:?}: {r:?}"
        );
        assert!(
            r.stderr.contains("restore the MANIFEST from a backup")
                && r.stderr
                    .contains(&format!("evendb --db {} repair --out", db.display())),
            "{args:?}: {r:?}"
        );
        assert_eq!(files(&db), before, "{args:?} changed the store");
        assert_eq!(
            files(&db)["000001.log"],
            log,
            "{args:?} started a new store over the old log"
        );
    }
}

/// A store of five puts made by the tool, and the name of its log.
fn store_with_a_log() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..5 {
        ok(&db, &["put", &format!("k{i}"), "value"]);
    }
    let log = files(&db)
        .into_keys()
        .find(|n| n.ends_with(".log"))
        .expect("puts wrote a log");
    (dir, db, log)
}
