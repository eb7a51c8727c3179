//! repair: salvage a damaged store into a new one, leave the old one as it
//! was, and say what was lost.

mod common;

use common::{contents, evendb, files, ok, open, FILE_HEADER_LEN};
use std::collections::BTreeMap;
use std::path::Path;

/// A store made by the CLI: 300 pairs loaded, then compacted into one
/// table of several blocks (and an empty log).
fn store_with_a_table(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("store");
    let input = dir.join("pairs.tsv");
    let lines: String = (0..300)
        .map(|i| format!("user{i:03}\tvalue {i} {}\n", "x".repeat(30)))
        .collect();
    std::fs::write(&input, lines).unwrap();
    ok(&db, &["load", input.to_str().unwrap()]);
    ok(&db, &["compact"]);
    db
}

fn table_of(db: &Path) -> String {
    let tables: Vec<String> = files(db)
        .into_keys()
        .filter(|n| n.ends_with(".tbl"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    tables.into_iter().next().unwrap()
}

#[test]
fn repair_of_a_sound_store_copies_every_pair_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_with_a_table(dir.path());
    ok(&db, &["put", "in-the-log", "too"]);
    ok(&db, &["delete", "user007"]);
    let expected = contents(&db);
    let before = files(&db);

    let out = dir.path().join("new");
    let r = evendb(&db, &["repair", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.starts_with(&format!(
            "repaired {} into {}: read ",
            db.display(),
            out.display()
        )),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("wrote 300 keys, left out 1 deleted key"),
        "{r:?}"
    );
    assert!(r.stdout.contains("lossless"), "{r:?}");
    assert_eq!(files(&db), before, "repair changed the store it read");
    assert_eq!(contents(&out), expected);
    ok(&out, &["verify"]);
}

#[test]
fn repair_salvages_every_key_outside_a_damaged_table_block_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_with_a_table(dir.path());
    let original = contents(&db);
    let table = table_of(&db);
    let path = db.join(&table);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[FILE_HEADER_LEN as usize + 30] ^= 0xff; // inside the first block
    std::fs::write(&path, bytes).unwrap();
    let before = files(&db);

    let out = dir.path().join("salvaged");
    let r = evendb(&db, &["repair", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 3, "something was lost: {r:?}");
    assert!(
        r.stdout.contains(&format!(
            "damaged: {}: block 0: corruption in {} at offset {FILE_HEADER_LEN}",
            path.display(),
            path.display()
        )),
        "{r:?}"
    );
    assert!(
        r.stdout
            .contains("LOSSY: skipped 1 damaged region and 0 unreadable files"),
        "{r:?}"
    );
    assert_eq!(files(&db), before, "repair changed the damaged store");

    // The new store opens, and holds every pair but those of the first
    // block, which are the smallest keys: a non-empty prefix of the old
    // key order, and not all of it.
    let salvaged = contents(&out);
    ok(&out, &["verify"]);
    let lost: Vec<&Vec<u8>> = original
        .keys()
        .filter(|k| !salvaged.contains_key(*k))
        .collect();
    assert!(
        !lost.is_empty() && lost.len() < original.len() / 2,
        "{} lost",
        lost.len()
    );
    let kept: BTreeMap<Vec<u8>, Vec<u8>> = original
        .iter()
        .skip(lost.len())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(salvaged, kept, "lost keys are the first block's, and only");

    // The JSON report says the same.
    let again = dir.path().join("again");
    let r = evendb(&db, &["repair", "--json", "--out", again.to_str().unwrap()]);
    assert_eq!(r.code, 3, "{r:?}");
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["lossless"], false);
    assert_eq!(json["keys_written"], salvaged.len() as u64);
    assert!(
        json["damaged"][0].as_str().unwrap().contains(&table),
        "{json:#}"
    );
    assert_eq!(json["skipped_files"], serde_json::json!([]));
}

#[test]
fn repair_salvages_a_store_whose_manifest_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    for i in 0..5 {
        ok(&db, &["put", &format!("k{i}"), &format!("value {i}")]);
    }
    let expected = contents(&db);
    std::fs::remove_file(db.join("MANIFEST")).unwrap();
    assert_eq!(evendb(&db, &["get", "k1"]).code, 3);

    let out = dir.path().join("new");
    let r = evendb(&db, &["repair", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("warning: no MANIFEST"), "{r:?}");
    assert_eq!(contents(&out), expected);
}

#[test]
fn repair_refuses_a_busy_destination_a_destination_inside_the_store_and_a_locked_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store");
    ok(&db, &["put", "k", "v"]);
    let before = files(&db);

    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let r = evendb(&db, &["repair", "--out", busy.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("is not empty") && r.stderr.contains("new or empty directory"),
        "{r:?}"
    );
    assert_eq!(files(&busy).len(), 1);

    for inside in [db.clone(), db.join("copy")] {
        let r = evendb(&db, &["repair", "--out", inside.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("inside the old one"), "{r:?}");
    }

    let missing = dir.path().join("typo");
    let r = evendb(&missing, &["repair", "--out", "/nonexistent/x"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("the directory does not exist"), "{r:?}");
    assert!(!missing.exists());

    assert_eq!(files(&db), before);

    // A store open elsewhere may change under the reads: refused.
    let holder = open(&db);
    let before = files(&db);
    let out = dir.path().join("new");
    let r = evendb(&db, &["repair", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("another process has the store"), "{r:?}");
    assert!(!out.exists());
    assert_eq!(files(&db), before);
    drop(holder);
}
