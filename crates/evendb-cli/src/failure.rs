//! Errors as the operator sees them: what failed, on which path, and what
//! to do, plus the exit code.

use std::fmt;
use std::io;
use std::path::Path;

/// Exit codes of the tool: the same for every command. Usage errors (2)
/// are reported by clap; an engine error gets its code from [`exit_code`],
/// and only there.
pub mod exit {
    /// The command did what was asked.
    pub const OK: u8 = 0;
    /// The command failed: I/O, a locked store, a bad input file, ...
    pub const ERROR: u8 = 1;
    /// Bad arguments (reported by the argument parser).
    pub const USAGE: u8 = 2;
    /// The store is damaged: `verify` found problems, `repair` lost data,
    /// or a command met corrupt data, a missing file or a lost MANIFEST.
    pub const DAMAGED: u8 = 3;
    /// `get` found no value for the key.
    pub const NOT_FOUND: u8 = 4;
}

/// The exit codes as `evendb --help` shows them. Each engine error is
/// named by its `evendb::Error` variant on the line of its code, as
/// [`exit_code`] maps it (a unit test holds the two together).
pub const EXIT_CODES_HELP: &str = "\
Exit codes (the same for every command):
  0  done; `verify`: the store is sound (torn log tails and files in
     lost+found/ are shown, but are no damage); `repair`: nothing was lost
  1  failed: I/O error (Io), the store is open in another process
     (Locked), no store at the path (NotAStore), a store of a newer evendb
     (UnsupportedVersion), writes stopped after an earlier failure
     (Poisoned), an argument the engine refused (InvalidArgument), a
     counter of the store is used up (Exhausted), a bad input file, ...
  2  bad usage: unknown option, missing --db, invalid hex argument,
     unknown input format
  3  the store is damaged: corrupt data (Corruption), a file its MANIFEST
     lists is missing (MissingFile), evendb files without a MANIFEST
     (NoManifest); `verify` found problems; `repair` could not salvage
     everything
  4  `get`: the key has no value";

/// The exit code of a command that failed with the engine error `e`: the
/// one mapping every command uses (through [`Failure::engine`]).
///
/// | `evendb::Error` | exit code |
/// |---|---|
/// | `Corruption`, `MissingFile`, `NoManifest` | [`exit::DAMAGED`] (3) |
/// | `Io`, `Locked`, `NotAStore`, `UnsupportedVersion`, `Poisoned`, `InvalidArgument`, `Exhausted`, any later variant | [`exit::ERROR`] (1) |
pub fn exit_code(e: &evendb::Error) -> u8 {
    use evendb::Error as E;
    match e {
        E::Corruption { .. } | E::MissingFile(_) | E::NoManifest { .. } => exit::DAMAGED,
        E::Io { .. }
        | E::Locked(_)
        | E::NotAStore(_)
        | E::UnsupportedVersion { .. }
        | E::Poisoned(_)
        | E::InvalidArgument(_)
        | E::Exhausted(_) => exit::ERROR,
        // `evendb::Error` is non-exhaustive: a variant added later is an
        // error until this table places it.
        _ => exit::ERROR,
    }
}

/// A failed command: a message saying what failed and why, an optional hint
/// saying what to do, and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub hint: Option<String>,
    pub code: u8,
}

impl Failure {
    /// A failure with exit code [`exit::ERROR`] and no hint.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            hint: None,
            code: exit::ERROR,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn code(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// An I/O error of the tool itself (reading an input file, writing an
    /// output file), not of the engine.
    pub fn io(action: &str, path: &Path, e: &io::Error) -> Self {
        let f = Failure::new(format!("{action} {}: {}", path.display(), e));
        match e.kind() {
            io::ErrorKind::NotFound => f.hint("check the path"),
            io::ErrorKind::PermissionDenied => {
                f.hint("check the file's permissions, or run as a user who may access it")
            }
            io::ErrorKind::AlreadyExists => f.hint("pass --force to overwrite it"),
            _ => f,
        }
    }

    /// A failed write to standard output. A closed pipe (`evendb scan |
    /// head`) is no error: the reader has all it wanted, so the tool stops
    /// quietly with exit code 0.
    pub fn stdout(e: &io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure {
                message: String::new(),
                hint: None,
                code: exit::OK,
            }
        } else {
            Failure::new(format!("cannot write to standard output: {e}"))
        }
    }

    /// True for a failure that has nothing to report (see [`Failure::stdout`]).
    pub fn is_silent(&self) -> bool {
        self.message.is_empty()
    }

    /// Maps an engine error met while doing `action` (e.g. "cannot open
    /// the store at /x") on the store at `db`: what failed, a hint, and
    /// the exit code [`exit_code`] gives it.
    pub fn engine(action: impl fmt::Display, db: &Path, e: evendb::Error) -> Self {
        let code = exit_code(&e);
        let salvage = format!(
            "`evendb --db {} repair --out NEW_DIR` salvages what checksums allow into a new store",
            db.display()
        );
        let verify = format!(
            "run `evendb --db {} verify` to check the whole store, and restore it \
             from a backup if that reports problems (or {salvage})",
            db.display()
        );
        let f = match e {
            evendb::Error::Locked(path) => Failure::new(format!(
                "{action}: another process has the store at {} open (its LOCK file is held)",
                path.display()
            ))
            .hint("close the other process first; evendb needs the store to itself"),
            evendb::Error::NotAStore(path) => Failure::new(format!(
                "{action}: {} holds no MANIFEST and no evendb files, so it is not an evendb store",
                path.display()
            ))
            .hint(
                "check the path; only `evendb put` and `evendb load` create a store, and only \
                 in a new or empty directory: evendb never writes into one it does not own",
            ),
            evendb::Error::NoManifest { dir, files } => Failure::new(format!(
                "{action}: {} holds evendb files but no MANIFEST, so the store's list of \
                 its files is lost: {}",
                dir.display(),
                files.join(", ")
            ))
            .hint(format!(
                "nothing was changed; restore the MANIFEST from a backup of this store, or {salvage}"
            )),
            evendb::Error::Corruption {
                file,
                offset,
                detail,
            } => Failure::new(format!(
                "{action}: corrupt data in {} at offset {offset}: {detail}",
                file.display()
            ))
            .hint(verify),
            evendb::Error::MissingFile(path) => Failure::new(format!(
                "{action}: {} is listed in the store's MANIFEST but does not exist",
                path.display()
            ))
            .hint(format!(
                "restore the store from a backup, or {salvage} (what the missing file held is lost)"
            )),
            evendb::Error::Exhausted(what) => Failure::new(format!(
                "{action}: the store's {what} counter is used up, so it takes no more writes"
            ))
            .hint(format!(
                "copy the data into a new store with `evendb --db {} repair --out NEW_DIR`, \
                 which reads the store's files without opening it",
                db.display()
            )),
            evendb::Error::UnsupportedVersion {
                path,
                found,
                supported,
            } => Failure::new(format!(
                "{action}: {} has format version {found}; this evendb reads up to {supported}",
                path.display()
            ))
            .hint("use a newer evendb build"),
            evendb::Error::Poisoned(why) => {
                let f = Failure::new(format!(
                    "{action}: writes to the store at {} stopped after an earlier failure ({why})",
                    db.display()
                ));
                // A background write (a table, a run) may be what met the
                // full disk first: the puts then fail for the poison.
                if disk_full(&why) {
                    f.hint("free some disk space and run the command again")
                } else {
                    f.hint("fix the cause (disk full? permissions?) and run the command again")
                }
            }
            evendb::Error::InvalidArgument(why) => {
                Failure::new(format!("{action}: invalid argument: {why}"))
            }
            evendb::Error::Io { path, source } => {
                let f = Failure::new(format!(
                    "{action}: I/O error on {}: {source}",
                    path.display()
                ));
                match source.kind() {
                    io::ErrorKind::PermissionDenied => {
                        f.hint("run as a user who may read and write the store's directory")
                    }
                    io::ErrorKind::StorageFull => f.hint("free some disk space and retry"),
                    _ => f,
                }
            }
            other => Failure::new(format!("{action}: {other}")),
        };
        f.code(code)
    }
}

/// True if a poisoned store's cause, as the engine worded it, is a full
/// disk (the operating system's words for ENOSPC, or the error kind's).
fn disk_full(why: &str) -> bool {
    why.contains("No space left on device") || why.contains("storage full")
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "evendb: {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// `Result` of a command.
pub type Outcome<T = ()> = Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// One error of each variant, with the name `EXIT_CODES_HELP` uses.
    fn one_of_each() -> Vec<(&'static str, evendb::Error)> {
        let p = || PathBuf::from("/s/000001.log");
        vec![
            (
                "Io",
                evendb::Error::Io {
                    path: p(),
                    source: io::Error::other("x"),
                },
            ),
            (
                "Corruption",
                evendb::Error::Corruption {
                    file: p(),
                    offset: 48,
                    detail: "x".into(),
                },
            ),
            (
                "InvalidArgument",
                evendb::Error::InvalidArgument("x".into()),
            ),
            ("Locked", evendb::Error::Locked(p())),
            ("NotAStore", evendb::Error::NotAStore(p())),
            (
                "UnsupportedVersion",
                evendb::Error::UnsupportedVersion {
                    path: p(),
                    found: 9,
                    supported: 3,
                },
            ),
            (
                "NoManifest",
                evendb::Error::NoManifest {
                    dir: PathBuf::from("/s"),
                    files: vec!["000001.log".into(), "CHECKPOINT".into()],
                },
            ),
            ("Exhausted", evendb::Error::Exhausted("epoch".into())),
            ("MissingFile", evendb::Error::MissingFile(p())),
            ("Poisoned", evendb::Error::Poisoned("x".into())),
        ]
    }

    /// The code whose entry in `EXIT_CODES_HELP` names `variant`.
    fn documented_code(variant: &str) -> Option<u8> {
        let mut code = None;
        for line in EXIT_CODES_HELP.lines().skip(1) {
            if let Some(c) = line.split_whitespace().next() {
                if let Ok(c) = c.parse::<u8>() {
                    code = Some(c);
                }
            }
            if line.contains(&format!("({variant})")) {
                return code;
            }
        }
        None
    }

    #[test]
    fn every_engine_error_has_the_exit_code_the_help_documents() {
        for (name, e) in one_of_each() {
            assert_eq!(
                documented_code(name),
                Some(exit_code(&e)),
                "{name}: --help and exit_code disagree"
            );
        }
        assert_eq!(
            exit_code(&evendb::Error::NoManifest {
                dir: "/s".into(),
                files: vec![]
            }),
            exit::DAMAGED
        );
        assert_eq!(
            exit_code(&evendb::Error::Exhausted("epoch".into())),
            exit::ERROR
        );
    }

    #[test]
    fn every_engine_error_says_what_to_do() {
        for (name, e) in one_of_each() {
            let f = Failure::engine("cannot open the store at /s", Path::new("/s"), e);
            assert!(
                f.message.starts_with("cannot open the store at /s: "),
                "{name}: {f}"
            );
            if !matches!(name, "InvalidArgument" | "Io") {
                assert!(f.hint.is_some(), "{name} has no hint: {f}");
            }
        }
    }

    #[test]
    fn no_manifest_lists_the_files_and_points_to_a_backup_or_repair() {
        let e = evendb::Error::NoManifest {
            dir: PathBuf::from("/s"),
            files: vec!["000001.log".into(), "CHECKPOINT".into()],
        };
        let f = Failure::engine("cannot put key k", Path::new("/s"), e);
        assert_eq!(f.code, exit::DAMAGED);
        assert!(f.message.contains("000001.log, CHECKPOINT"), "{f}");
        let hint = f.hint.unwrap();
        assert!(hint.contains("backup"), "{hint}");
        assert!(hint.contains("evendb --db /s repair --out"), "{hint}");
    }

    #[test]
    fn a_store_poisoned_by_a_full_disk_says_to_free_space() {
        let full = evendb::Error::Poisoned(format!(
            "I/O error on /s/000015.tbl: {}",
            io::Error::from_raw_os_error(28)
        ));
        let f = Failure::engine("cannot load line 7 of f", Path::new("/s"), full);
        assert!(
            f.hint.as_deref().unwrap().contains("free some disk space"),
            "{f}"
        );
        let other = evendb::Error::Poisoned("I/O error on /s/000015.tbl: permission denied".into());
        let f = Failure::engine("cannot load line 7 of f", Path::new("/s"), other);
        assert!(!f.hint.as_deref().unwrap().contains("free some"), "{f}");
    }
}
