//! Helpers shared by the integration tests: run the real binary, read a
//! store, and take a byte-exact picture of a directory.

#![allow(dead_code)] // each test file uses a different subset

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `evendb --db DB ARGS...` with stdin closed.
pub fn evendb(db: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_evendb"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the evendb binary");
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs the binary and asserts it succeeded; returns stdout.
pub fn ok(db: &Path, args: &[&str]) -> String {
    let r = evendb(db, args);
    assert_eq!(r.code, 0, "evendb {args:?} failed: {r:?}");
    r.stdout
}

/// Opens a store in the test process. No maintenance thread: closing a
/// store right after opening it can hang while one is starting.
pub fn open(db: &Path) -> evendb::Db {
    evendb::Options::default()
        .maintenance_threads(0)
        .open(db)
        .expect("open store")
}

/// Every pair of the store at `db`, read through the library.
pub fn contents(db: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = open(db);
    db.scan::<&[u8], _>(..)
        .collect::<Result<_, _>>()
        .expect("scan store")
}

/// Bytes of the header every table and log file starts with: an empty log
/// is this long, and the first table block or log record starts here.
pub const FILE_HEADER_LEN: u64 = 48;

/// Name and bytes of every file in `dir` and its subfolders (such as
/// `lost+found/`), named by their path relative to `dir` with `/`; empty if
/// the directory is missing.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    add_files(dir, "", &mut out);
    out
}

fn add_files(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        let name = format!("{prefix}{}", e.file_name().into_string().unwrap());
        if e.file_type().unwrap().is_dir() {
            add_files(&e.path(), &format!("{name}/"), out);
        } else {
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
}
