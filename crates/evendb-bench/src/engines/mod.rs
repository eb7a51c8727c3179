//! The engines a benchmark can drive, behind one small trait.
//!
//! Adding an engine is one file here: implement [`Engine`], add a variant to
//! [`EngineKind`] and a line to [`open`]. Peer engines sit behind cargo
//! features so that the default build never compiles them.

use std::path::Path;

use anyhow::Result;

mod evendb;
#[cfg(feature = "fjall")]
mod fjall;
#[cfg(feature = "rocksdb")]
mod rocksdb;

/// What a scan returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// Records visited.
    pub records: usize,
    /// Key and value bytes visited.
    pub bytes: usize,
}

/// One key-value store under test. Implementations are shared by all worker
/// threads, so every method takes `&self`.
pub trait Engine: Send + Sync {
    /// Writes `value` under `key`, replacing any previous value.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Reads the value under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Removes `key`.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Visits up to `count` records in key order from `start` (inclusive),
    /// stopping early at `end` (exclusive) when given.
    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary>;
    /// Makes every write so far durable.
    fn flush(&self) -> Result<()>;
    /// Engine-specific counters, as `(name, value)` pairs.
    fn stats(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// One line describing the configuration used, for reports.
    fn describe(&self) -> String;
}

/// Engines known to the harness (whether or not this build includes them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The engine of this repository.
    Evendb,
    /// RocksDB through the `rocksdb` crate (cargo feature `rocksdb`).
    Rocksdb,
    /// fjall, a pure-Rust LSM store (cargo feature `fjall`).
    Fjall,
}

impl EngineKind {
    /// The lower-case name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Evendb => "evendb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Fjall => "fjall",
        }
    }

    /// Whether this build can open the engine.
    pub fn available(self) -> bool {
        match self {
            EngineKind::Evendb => true,
            EngineKind::Rocksdb => cfg!(feature = "rocksdb"),
            EngineKind::Fjall => cfg!(feature = "fjall"),
        }
    }

    /// Every engine this build includes.
    pub fn all_available() -> Vec<EngineKind> {
        [EngineKind::Evendb, EngineKind::Rocksdb, EngineKind::Fjall]
            .into_iter()
            .filter(|e| e.available())
            .collect()
    }
}

/// Settings shared by all engines.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EngineConfig {
    /// Block/row cache budget in bytes for engines that take one; `None`
    /// keeps each engine's default.
    pub cache_bytes: Option<u64>,
}

/// Opens (creating if needed) an engine of `kind` in the directory `path`.
pub fn open(kind: EngineKind, path: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Evendb => Ok(Box::new(evendb::EvenDb::open(path, config)?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocksdb::RocksDb::open(path, config)?)),
        #[cfg(feature = "fjall")]
        EngineKind::Fjall => Ok(Box::new(fjall::Fjall::open(path, config)?)),
        #[allow(unreachable_patterns)]
        other => anyhow::bail!(
            "this build has no `{0}` engine: rebuild with `--features {0}`",
            other.name()
        ),
    }
}
