//! The engines a benchmark can drive, behind one small trait.
//!
//! Adding an engine is one file here: implement [`Engine`], add a variant to
//! [`EngineKind`] and a line to [`open`]. Peer engines sit behind cargo
//! features so that the default build never compiles them; what each peer
//! configuration sets is plain data ([`rocksdb_config`], [`fjall_config`])
//! that every build compiles, so that tests and reports can check it.
//!
//! # Memory sizing rule
//!
//! Every engine gets one memory budget `B` ([`EngineConfig::budget`]): the
//! `--cache-size`, else a quarter of `--memory-limit`, else evendb's default
//! budget ([`DEFAULT_BUDGET`]). evendb spends all of `B` on munks, row
//! cache, filters and indexes. The tuned RocksDB configurations give `B` to
//! the block cache (which also holds index and filter blocks) and up to `B`
//! more to memtables; fjall gives `B` to its cache and bounds its unflushed
//! memtables by `B` through its journal limit. Each peer thus has at most
//! twice evendb's memory (half the cap with a cap), erring in the peer's
//! favour, and the rest of the cap stays for the page cache.
//!
//! # Durability pairing
//!
//! By default, writes are acknowledged before they are on stable storage in
//! every engine: evendb syncs its logs every 100 ms (`Durability::Buffered`),
//! RocksDB writes its WAL to the OS on every put without fsync
//! (`WriteOptions::sync = false`) and fjall flushes its journal to OS buffers
//! on every write (`PersistMode::Buffer`, its default). With `--sync` every
//! acknowledged write is durable in every engine: evendb `Durability::Sync`,
//! RocksDB `WriteOptions::sync = true`, fjall a write batch per write
//! committed with `PersistMode::SyncData`. All three use `fdatasync`.
//! Write batches ([`Engine::put_batch`], `--batch N`) get the same
//! durability as single puts: evendb `Db::write` in the store's durability
//! mode, RocksDB `DB::write_opt` with the puts' `WriteOptions`, fjall a
//! write batch committed with the puts' persist mode.
//!
//! # Reverse scans
//!
//! With `--reverse`, scans read newest-first through each engine's own
//! reverse iteration ([`Engine::scan_rev`], [`Engine::prefix_rev`]): evendb
//! `Db::scan(..=key).rev()` and `Db::prefix(p).rev()`; RocksDB a raw
//! iterator positioned by `seek_for_prev` and stepped by `prev`, with the
//! forward scan's `ReadOptions` (RocksDB's defaults) plus
//! `iterate_lower_bound` (and `iterate_upper_bound` for a prefix) where the
//! scan has a bound; fjall `Keyspace::range(..=key).rev()` and
//! `Keyspace::prefix(p).rev()`.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

mod evendb;
#[cfg(feature = "fjall")]
mod fjall;
pub mod fjall_config;
#[cfg(feature = "rocksdb")]
mod rocksdb;
pub mod rocksdb_config;

/// What a scan returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// Records visited.
    pub records: usize,
    /// Key and value bytes visited.
    pub bytes: usize,
}

/// `(key, value)` pairs that [`Engine::put_batch`] writes atomically, kept
/// in one reusable buffer so that filling a batch allocates nothing once
/// the buffer has grown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PutBatch {
    bytes: Vec<u8>,
    /// Where each key ends and where its value ends in `bytes`.
    ends: Vec<(usize, usize)>,
}

impl PutBatch {
    /// An empty batch.
    pub fn new() -> PutBatch {
        PutBatch::default()
    }

    /// Adds a put of `value` under `key`.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    /// Puts added.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no put was added.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key and value bytes added.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Removes every put, keeping the buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// The puts in the order they were added.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&(key_end, value_end)| {
            let pair = (&self.bytes[start..key_end], &self.bytes[key_end..value_end]);
            start = value_end;
            pair
        })
    }
}

/// One option an engine was opened with: its name in the engine's own
/// terms, the value, and where the value comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub option: String,
    pub value: String,
    pub source: String,
}

impl Setting {
    /// A setting from three displayable parts.
    pub fn new(option: &str, value: impl ToString, source: &str) -> Setting {
        Setting {
            option: option.to_string(),
            value: value.to_string(),
            source: source.to_string(),
        }
    }
}

/// One key-value store under test. Implementations are shared by all worker
/// threads, so every method takes `&self`.
pub trait Engine: Send + Sync {
    /// Writes `value` under `key`, replacing any previous value.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Writes every put of `batch` atomically, with the durability of
    /// [`Engine::put`]: in the engine's own write batch, so that readers
    /// and a crash see all of them or none. A later put of a key in the
    /// batch overrides an earlier one.
    fn put_batch(&self, batch: &PutBatch) -> Result<()>;
    /// Reads the value under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Removes `key`.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Visits up to `count` records in key order from `start` (inclusive),
    /// stopping early at `end` (exclusive) when given.
    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary>;
    /// The mirror of [`Engine::scan`]: visits up to `count` records in
    /// descending key order from `start` (inclusive) down, that is the
    /// `count` largest keys at or below `start`, stopping early below
    /// `floor` (inclusive) when given.
    fn scan_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> Result<ScanSummary>;
    /// Visits up to `count` records whose keys start with `prefix`, in
    /// descending key order: an app's latest `count` events when its keys
    /// end in a timestamp.
    fn prefix_rev(&self, prefix: &[u8], count: usize) -> Result<ScanSummary>;
    /// Makes every write so far durable.
    fn flush(&self) -> Result<()>;
    /// Deletes every key in `[start, end)` with the engine's own range
    /// delete (evendb `Db::delete_range`, RocksDB `DeleteRange` on the default
    /// column family, through a write batch), with the durability of [`Engine::delete`].
    /// Engines without one (fjall) refuse.
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let _ = (start, end);
        anyhow::bail!("this engine has no range delete")
    }
    /// Rewrites the data of `[start, end)` (unbounded where `None`) to
    /// reclaim the space of deleted records: evendb `Db::flush` then
    /// `Db::compact` (which rebuilds every chunk, its only way), RocksDB
    /// `compact_range` (memtables flushed first). Engines without it
    /// refuse.
    fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let _ = (start, end);
        anyhow::bail!("this engine has no compaction on request")
    }
    /// Engine-specific counters, as `(name, value)` pairs.
    fn stats(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// One line describing the configuration used, for reports.
    fn describe(&self) -> String;
    /// Every option this harness set, with its value and source.
    fn settings(&self) -> Vec<Setting> {
        Vec::new()
    }
}

/// Engines known to the harness (whether or not this build includes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// The engine of this repository.
    Evendb,
    /// RocksDB as its `tools/benchmark.sh` configures leveled compaction,
    /// scaled to the memory budget (cargo feature `rocksdb`).
    Rocksdb,
    /// RocksDB as `tools/benchmark.sh` configures universal compaction
    /// (cargo feature `rocksdb`).
    RocksdbUniversal,
    /// RocksDB's defaults plus a block cache of the budget: the reference
    /// configuration of earlier reports (cargo feature `rocksdb`).
    RocksdbDefault,
    /// fjall, a pure-Rust LSM store (cargo feature `fjall`).
    Fjall,
}

impl EngineKind {
    /// Every engine, in report order.
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Evendb,
        EngineKind::Rocksdb,
        EngineKind::RocksdbUniversal,
        EngineKind::RocksdbDefault,
        EngineKind::Fjall,
    ];

    /// The name used on the command line, in reports and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Evendb => "evendb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::RocksdbUniversal => "rocksdb-universal",
            EngineKind::RocksdbDefault => "rocksdb-default",
            EngineKind::Fjall => "fjall",
        }
    }

    /// The engine called `name` (case-insensitive), if any.
    pub fn from_name(name: &str) -> Option<EngineKind> {
        let name = name.to_ascii_lowercase();
        EngineKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this is one of the RocksDB configurations.
    pub fn is_rocksdb(self) -> bool {
        matches!(
            self,
            EngineKind::Rocksdb | EngineKind::RocksdbUniversal | EngineKind::RocksdbDefault
        )
    }

    /// The cargo feature that brings the engine in, if it needs one.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            EngineKind::Evendb => None,
            EngineKind::Rocksdb | EngineKind::RocksdbUniversal | EngineKind::RocksdbDefault => {
                Some("rocksdb")
            }
            EngineKind::Fjall => Some("fjall"),
        }
    }

    /// Whether this build can open the engine.
    pub fn available(self) -> bool {
        match self.feature() {
            None => true,
            Some("rocksdb") => cfg!(feature = "rocksdb"),
            Some(_) => cfg!(feature = "fjall"),
        }
    }

    /// Every engine this build includes.
    pub fn all_available() -> Vec<EngineKind> {
        EngineKind::ALL
            .into_iter()
            .filter(|e| e.available())
            .collect()
    }
}

/// Whether the peers compress their tables.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum PeerCompression {
    /// No compression anywhere: parity with evendb under
    /// `--evendb-compression none`.
    #[default]
    None,
    /// LZ4 on every level of the tables, logs and journals uncompressed:
    /// parity with evendb's default (LZ4 table and run blocks, logs
    /// appended by puts never compressed). RocksDB `compression = bottommost_compression = LZ4`;
    /// fjall LZ4 data blocks on every level, journal uncompressed.
    Lz4,
    /// RocksDB's recommended setting (LZ4 on upper levels, ZSTD at the
    /// bottommost level); fjall's own default (LZ4 from L2 down).
    Recommended,
}

impl PeerCompression {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PeerCompression::None => "none",
            PeerCompression::Lz4 => "lz4",
            PeerCompression::Recommended => "recommended",
        }
    }
}

/// How evendb stores its table and run blocks (`evendb::Options::compression`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum EvendbCompression {
    /// `evendb::Compression::None`: blocks as they are.
    None,
    /// `evendb::Compression::Lz4`, evendb's default: each block compressed
    /// with LZ4 when that saves an eighth or more.
    #[default]
    Lz4,
}

impl EvendbCompression {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EvendbCompression::None => "none",
            EvendbCompression::Lz4 => "lz4",
        }
    }

    /// The engine's setting.
    pub fn to_evendb(self) -> ::evendb::Compression {
        match self {
            EvendbCompression::None => ::evendb::Compression::None,
            EvendbCompression::Lz4 => ::evendb::Compression::Lz4,
        }
    }
}

/// evendb's default memory budget (`evendb::Options::memory_budget`), the
/// budget every engine gets when the command line sets none. A test checks
/// it against evendb.
pub const DEFAULT_BUDGET: u64 = 256 << 20;

/// Settings shared by all engines.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineConfig {
    /// Memory budget in bytes (evendb's budget, the peers' cache); `None`
    /// when the command line set none (see [`EngineConfig::budget`]).
    pub cache_bytes: Option<u64>,
    /// Every acknowledged write durable (`--sync`).
    #[serde(default)]
    pub sync: bool,
    /// Whether the peers compress (`--peer-compression`).
    #[serde(default)]
    pub peer_compression: PeerCompression,
    /// Whether evendb compresses its table and run blocks (`--evendb-compression`).
    #[serde(default)]
    pub evendb_compression: EvendbCompression,
}

impl EngineConfig {
    /// The memory budget `B` of the sizing rule (see the module docs).
    pub fn budget(&self) -> u64 {
        self.cache_bytes.unwrap_or(DEFAULT_BUDGET)
    }

    /// The durability mode, as reports name it.
    pub fn durability_mode(&self) -> &'static str {
        if self.sync {
            "sync"
        } else {
            "buffered"
        }
    }
}

/// How each engine treats an acknowledged write in the mode `sync`, as
/// stated in every report.
pub fn durability_pairing(sync: bool) -> &'static str {
    if sync {
        "--sync: every acknowledged write is durable (fdatasync before the write returns) in every engine: evendb Durability::Sync; RocksDB WriteOptions::sync = true on every put and delete; fjall one write batch per write, committed with PersistMode::SyncData"
    } else {
        "default: no engine syncs before acknowledging a write. evendb Durability::Buffered, logs synced every 100 ms (a crash may lose the last 100 ms); RocksDB WAL on, written to the OS on every put, never fsynced by a put (WriteOptions::sync = false); fjall journal flushed to OS buffers on every write (PersistMode::Buffer, its default). Run with --sync for durable acknowledged writes everywhere"
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix
/// with its last byte below 0xFF incremented and what follows dropped;
/// `None` when every byte is 0xFF (no key bounds the prefix from above).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The cores the machine offers this process, at least 1.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Opens (creating if needed) an engine of `kind` in the directory `path`.
pub fn open(kind: EngineKind, path: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Evendb => Ok(Box::new(evendb::EvenDb::open(path, config)?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb | EngineKind::RocksdbUniversal | EngineKind::RocksdbDefault => {
            Ok(Box::new(rocksdb::RocksDb::open(kind, path, config)?))
        }
        #[cfg(feature = "fjall")]
        EngineKind::Fjall => Ok(Box::new(fjall::Fjall::open(path, config)?)),
        #[allow(unreachable_patterns)]
        other => anyhow::bail!(
            "this build has no `{}` engine: rebuild with `--features {}`",
            other.name(),
            other.feature().unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{prefix_end, PutBatch};

    #[test]
    fn a_prefix_ends_at_its_last_byte_below_ff_incremented() {
        assert_eq!(prefix_end(b"app1"), Some(b"app2".to_vec()));
        assert_eq!(prefix_end(&[0, 0, 1, 0xFF]), Some(vec![0, 0, 2]));
        assert_eq!(prefix_end(&[7, 0xFF, 0xFF]), Some(vec![8]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_end(b""), None);
    }

    #[test]
    fn a_put_batch_gives_back_its_pairs_in_order_and_clears_for_reuse() {
        let mut b = PutBatch::new();
        assert!(b.is_empty());
        b.push(b"k1", b"value one");
        b.push(b"", b"");
        b.push(b"key3", b"v");
        assert_eq!((b.len(), b.size_in_bytes()), (3, 16));
        let pairs: Vec<(&[u8], &[u8])> = b.iter().collect();
        assert_eq!(
            pairs,
            vec![
                (&b"k1"[..], &b"value one"[..]),
                (&b""[..], &b""[..]),
                (&b"key3"[..], &b"v"[..]),
            ]
        );
        b.clear();
        assert!(b.is_empty());
        b.push(b"a", b"b");
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![(&b"a"[..], &b"b"[..])]);
    }
}
