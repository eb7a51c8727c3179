//! Errors as the operator sees them: what failed, on which path, and what
//! to do, plus the exit code.

use std::fmt;
use std::io;
use std::path::Path;

/// Exit codes of the tool. Usage errors (2) are reported by clap.
pub mod exit {
    /// The command did what was asked.
    pub const OK: u8 = 0;
    /// The command failed: I/O, a locked store, a bad input file, ...
    pub const ERROR: u8 = 1;
    /// Bad arguments (reported by the argument parser).
    pub const USAGE: u8 = 2;
    /// The store is damaged: `verify` found problems, or a command met
    /// corrupt data or a missing file.
    pub const DAMAGED: u8 = 3;
    /// `get` found no value for the key.
    pub const NOT_FOUND: u8 = 4;
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
    /// the store at /x") on the store at `db`.
    pub fn engine(action: impl fmt::Display, db: &Path, e: evendb::Error) -> Self {
        let verify = format!(
            "run `evendb --db {} verify` to check the whole store, and restore it \
             from a backup if that reports problems",
            db.display()
        );
        match e {
            evendb::Error::Locked(path) => Failure::new(format!(
                "{action}: another process has the store at {} open (its LOCK file is held)",
                path.display()
            ))
            .hint("close the other process first; evendb needs the store to itself"),
            evendb::Error::NotAStore(path) => Failure::new(format!(
                "{action}: {} is not an evendb store (no MANIFEST) and holds other files",
                path.display()
            ))
            .hint("check the path; evendb never writes into a directory it does not own"),
            evendb::Error::Corruption {
                file,
                offset,
                detail,
            } => Failure::new(format!(
                "{action}: corrupt data in {} at offset {offset}: {detail}",
                file.display()
            ))
            .hint(verify)
            .code(exit::DAMAGED),
            evendb::Error::MissingFile(path) => Failure::new(format!(
                "{action}: {} is listed in the store's MANIFEST but does not exist",
                path.display()
            ))
            .hint(verify)
            .code(exit::DAMAGED),
            evendb::Error::UnsupportedVersion {
                path,
                found,
                supported,
            } => Failure::new(format!(
                "{action}: {} has format version {found}; this evendb reads up to {supported}",
                path.display()
            ))
            .hint("use a newer evendb build"),
            evendb::Error::Poisoned(why) => Failure::new(format!(
                "{action}: writes to the store at {} stopped after an earlier failure ({why})",
                db.display()
            ))
            .hint("fix the cause (disk full? permissions?) and run the command again"),
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
        }
    }
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
