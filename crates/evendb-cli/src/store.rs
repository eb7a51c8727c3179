//! Opening the store.
//!
//! Only `put` and `load` may create a store. Every other command opens with
//! `create_if_missing(false)` after checking, without touching anything,
//! that the path is a directory that is not empty, so the tool can name the
//! exact problem (missing directory, a file, empty directory) before the
//! engine refuses. A directory without a MANIFEST is left to the engine,
//! which tells evendb files whose MANIFEST is lost (`NoManifest`: damage)
//! from foreign files (`NotAStore`) and touches neither.
//!
//! The tool runs no maintenance thread (`maintenance_threads(0)`): a put that
//! fills a chunk's log rebuilds the chunk before it returns. A one-shot
//! command gains nothing from background rebuilds and exits sooner without
//! a thread to start and stop.

use crate::failure::{Failure, Outcome};
use evendb::{Db, Options};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by `--stats`: every store the command opened prints the engine's
/// figures to stderr when the command is done with it.
pub static PRINT_STATS: AtomicBool = AtomicBool::new(false);

/// An open store (derefs to [`Db`]); see [`PRINT_STATS`].
#[derive(Debug)]
pub struct Store(Db);

impl std::ops::Deref for Store {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.0
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if PRINT_STATS.load(Ordering::Relaxed) {
            eprintln!(
                "engine figures for {} during this command:\n{}",
                self.0.path().display(),
                self.0.stats().to_string().trim_end()
            );
        }
    }
}

/// Whether a command may create the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// `put` and `load`: create the directory and store if missing.
    IfMissing,
    /// `delete`, `compact`, `backup`: the store must exist.
    Never,
    /// The read commands (`get`, `scan`, `dump`, `stats`, `verify`,
    /// `chunks`): the store must exist and is opened read-only, writing
    /// nothing (they work on a full disk or a read-only mount).
    ReadOnly,
}

/// Opens the store at `path`.
pub fn open(path: &Path, create: Create) -> Outcome<Store> {
    if create != Create::IfMissing {
        check_is_store(path)?;
    }
    log::debug!("opening {} ({create:?})", path.display());
    Options::default()
        .create_if_missing(create == Create::IfMissing)
        .read_only(create == Create::ReadOnly)
        .maintenance_threads(0)
        .open(path)
        .map(Store)
        .map_err(|e| {
            Failure::engine(
                format_args!("cannot open the store at {}", path.display()),
                path,
                e,
            )
        })
}

/// Refuses, without writing anything, a path that cannot hold a store: a
/// missing directory, a file, an empty directory.
pub fn check_is_store(path: &Path) -> Outcome {
    let cannot = format!("cannot open the store at {}", path.display());
    let create_hint = "check the path; only `evendb put` and `evendb load` create a new store";
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(
                Failure::new(format!("{cannot}: it is a file, not a directory"))
                    .hint("--db names the store's directory"),
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                Failure::new(format!("{cannot}: the directory does not exist")).hint(create_hint),
            )
        }
        Err(e) => return Err(Failure::io(&format!("{cannot}: cannot read"), path, &e)),
    }
    match std::fs::read_dir(path).map(|mut entries| entries.next().is_none()) {
        Ok(true) => {
            Err(Failure::new(format!("{cannot}: the directory is empty")).hint(create_hint))
        }
        Ok(false) => Ok(()),
        Err(e) => Err(Failure::io(&format!("{cannot}: cannot read"), path, &e)),
    }
}
