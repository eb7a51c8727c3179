//! The one error type of evendb.

use std::path::PathBuf;

/// Everything that can go wrong in evendb.
///
/// The enum is `#[non_exhaustive]`: match the variants you act on and keep a
/// wildcard arm for the rest.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed. `path` names the file or folder.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or folder the failing call touched.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Bytes read from disk failed a checksum or a structural check.
    ///
    /// Nothing was served from the damaged region. `offset` is the byte offset
    /// of the damaged record or block within `file`.
    #[error("corruption in {file} at offset {offset}: {detail}")]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Offset of the damaged record or block.
        offset: u64,
        /// What check failed.
        detail: String,
    },

    /// An argument is out of range (oversized key or value, bad option).
    /// Returned before any I/O is done.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A write (put, delete, flush, compact) through a handle opened with
    /// `Options::read_only`. Nothing was changed.
    #[error("the store at {0} is open read-only; open it without read_only to write")]
    ReadOnly(PathBuf),

    /// A store whose `Sync` commit journal holds acknowledged writes its
    /// chunk logs lack (a crash came before they were synced) could not be
    /// shown without them.
    ///
    /// No longer returned: a read-only open holds those writes in memory
    /// and shows the store as a read-write open does once it has replayed
    /// them (see [`Options::read_only`](crate::Options::read_only)). The
    /// variant stays so that code matching it still compiles.
    #[error(
        "the store at {dir} holds {writes} acknowledged writes only in its Sync journal; \
         open it read-write once to replay them"
    )]
    NeedsReplay {
        /// The store's directory.
        dir: PathBuf,
        /// Journaled writes missing from the chunk logs.
        writes: u64,
    },

    /// Another handle, in this process or another one, has the store open.
    #[error("the store at {0} is locked by another open handle; close it first")]
    Locked(PathBuf),

    /// The directory holds no evendb store and either holds other files or
    /// `create_if_missing` is off. Nothing in it was touched.
    #[error("{0} holds no evendb store (no MANIFEST); refusing to touch it (pass create_if_missing to create one in an empty directory)")]
    NotAStore(PathBuf),

    /// The store was written by a newer format version than this build reads.
    #[error(
        "{path} has format version {found}, this build reads up to {supported}; upgrade evendb"
    )]
    UnsupportedVersion {
        /// The file carrying the version.
        path: PathBuf,
        /// The version found on disk.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },

    /// The directory holds evendb files (logs, tables, a CHECKPOINT) but no
    /// MANIFEST: the store's file list is lost. Nothing was touched; a new
    /// store is never created over such files. Restore the MANIFEST from a
    /// backup, or salvage the data with `evendb repair`.
    #[error("{dir} holds evendb files but no MANIFEST ({}); refusing to open or recreate it: restore the MANIFEST from a backup, or salvage the data with `evendb repair`", files.join(", "))]
    NoManifest {
        /// The store's directory.
        dir: PathBuf,
        /// The evendb files found there (at most a few dozen names).
        files: Vec<String>,
    },

    /// A counter the store's versions are made of has reached its end (more
    /// than 16 million crashed sessions, or more than 2^40 snapshots in one
    /// session). Nothing is wrapped around: writes are refused instead.
    #[error("the store's {0} counter is exhausted; copy the data into a new store (evendb dump, then load)")]
    Exhausted(String),

    /// A file the manifest refers to does not exist.
    #[error("missing file {0}, referenced by the manifest; restore it from a backup")]
    MissingFile(PathBuf),

    /// An earlier write or sync failed; writes are refused until the store is
    /// reopened, so that nothing is reported durable that may not be.
    #[error("the store is poisoned by an earlier failure ({0}); reopen it")]
    Poisoned(String),
}

/// `Result` with evendb's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
