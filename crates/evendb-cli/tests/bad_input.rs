//! Bad input: each case gives a clear error and a non-zero exit, and
//! changes nothing on disk.

mod common;

use common::{evendb, files, ok, open};
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

/// Files of a store less what every open changes (the engine has no
/// read-only open): the MANIFEST's epoch and checksum are blanked (each open
/// writes epoch + 1) and CHECKPOINT is left out (each open records the new
/// epoch there). Nothing else may change.
fn files_but_epoch(db: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut f = files(db);
    f.remove("CHECKPOINT");
    let m = f.get_mut("MANIFEST").unwrap();
    let n = m.len();
    m[16..24].fill(0);
    m[n - 4..].fill(0);
    f
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
    bytes[20] ^= 0xff; // inside the first data block
    std::fs::write(&path, bytes).unwrap();
    let before = files_but_epoch(&db);

    for args in [&["get", "user001"][..], &["scan"], &["dump"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr
                .contains(&format!("corrupt data in {} at offset 0", path.display())),
            "{args:?}: {r:?}"
        );
        assert!(
            r.stderr
                .contains(&format!("evendb --db {} verify", db.display())),
            "{r:?}"
        );
        assert_eq!(files_but_epoch(&db), before, "{args:?} changed the store");
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
    assert_eq!(files_but_epoch(&db), before);
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
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..5 {
        ok(&db, &["put", &format!("k{i}"), "value"]);
    }
    let log = files(&db)
        .into_keys()
        .find(|n| n.ends_with(".log"))
        .expect("puts wrote a log");
    let path = db.join(&log);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[40] ^= 0xff; // the key of the first record: its body checksum fails
    std::fs::write(&path, &bytes).unwrap();
    let before = files_but_epoch(&db);

    for args in [&["get", "k1"][..], &["scan"], &["stats", "--open"]] {
        let r = evendb(&db, args);
        assert_eq!(r.code, 3, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!(
                "corrupt data in {} at offset 0: damaged log record followed by valid records",
                path.display()
            )),
            "{args:?}: {r:?}"
        );
        assert!(r.stderr.contains("hint: run `evendb --db"), "{r:?}");
        assert_eq!(
            files_but_epoch(&db),
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
