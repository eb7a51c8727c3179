//! What each RocksDB configuration sets, as plain data, so that every build
//! (with or without RocksDB) can list, test and report it; the `rocksdb`
//! engine applies a [`RocksPlan`] option by option.
//!
//! The tuned configurations follow RocksDB's own benchmark driver,
//! `tools/benchmark.sh` of facebook/rocksdb (main branch, 2026):
//! `const_params_base` plus `level_const_params` (leveled) or
//! `univ_const_params` (universal), `l0_config` and `params_w`. Its absolute
//! sizes are made for servers with 16 GiB of block cache; here they are
//! scaled to the memory budget `B` keeping benchmark.sh's ratios:
//!
//! | option | benchmark.sh | here |
//! |---|---|---|
//! | block cache | `CACHE_SIZE` 16 GiB | `B` |
//! | write_buffer_size × max_write_buffer_number | 128 MiB × 8 | `B / 8` × 8 = `B` |
//! | target_file_size_base | 128 MiB (= write buffer) | `B / 8` |
//! | max_bytes_for_level_base | 1 GiB (= 8 write buffers) | `B` |
//! | max_background_jobs | 16 | the cores, at least 2 |
//!
//! Memtables get their own `B` rather than a share of the block cache (a
//! `WriteBufferManager` charged to the cache): the cap then holds the block
//! cache, full memtables and still half the cap for the page cache, and
//! RocksDB never runs short of write buffers because of our sizing.

use super::{EngineConfig, EngineKind, PeerCompression, Setting};

/// Where benchmark.sh's values come from.
const BENCH: &str = "tools/benchmark.sh";

/// The three RocksDB configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RocksProfile {
    /// benchmark.sh's leveled configuration (`rocksdb`).
    Leveled,
    /// benchmark.sh's universal configuration (`rocksdb-universal`).
    Universal,
    /// RocksDB's defaults plus a block cache (`rocksdb-default`).
    Default,
}

impl RocksProfile {
    /// The profile of engine `kind`, if it is a RocksDB one.
    pub fn of(kind: EngineKind) -> Option<RocksProfile> {
        match kind {
            EngineKind::Rocksdb => Some(RocksProfile::Leveled),
            EngineKind::RocksdbUniversal => Some(RocksProfile::Universal),
            EngineKind::RocksdbDefault => Some(RocksProfile::Default),
            _ => None,
        }
    }
}

/// Compaction settings of a tuned configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum Style {
    /// Leveled compaction, `level_const_params`.
    Leveled {
        num_levels: i32,
        level_compaction_dynamic_level_bytes: bool,
    },
    /// Universal compaction, `univ_const_params`.
    Universal {
        num_levels: i32,
        size_ratio: i32,
        min_merge_width: i32,
        max_merge_width: i32,
        max_size_amplification_percent: i32,
        compression_size_percent: i32,
        /// Not settable through the `rocksdb` crate; benchmark.sh's value
        /// equals RocksDB's default, so it is listed, not set.
        allow_trivial_move: bool,
    },
}

/// The options of a tuned (benchmark.sh) configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    pub cache_num_shard_bits: i32,
    pub block_size: usize,
    pub bloom_bits_per_key: f64,
    pub cache_index_and_filter_blocks: bool,
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    pub bytes_per_sync: u64,
    pub write_buffer_size: u64,
    pub max_write_buffer_number: i32,
    pub target_file_size_base: u64,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub level0_file_num_compaction_trigger: i32,
    pub level0_slowdown_writes_trigger: i32,
    pub level0_stop_writes_trigger: i32,
    pub max_background_jobs: i32,
    pub max_subcompactions: u32,
    pub max_open_files: i32,
    pub delete_obsolete_files_period_micros: u64,
    pub style: Style,
}

/// Everything one RocksDB engine is opened with.
#[derive(Clone, Debug, PartialEq)]
pub struct RocksPlan {
    pub profile: RocksProfile,
    /// LRU block cache capacity; `None` keeps RocksDB's default cache (only
    /// `rocksdb-default` without a budget on the command line).
    pub block_cache_bytes: Option<u64>,
    /// benchmark.sh's options; `None` for `rocksdb-default`.
    pub tuned: Option<Tuned>,
    pub compression: PeerCompression,
    /// `WriteOptions::sync` of every put and delete.
    pub sync: bool,
}

/// Smallest write buffer the sizing rule hands out.
const MIN_WRITE_BUFFER: u64 = 1 << 20;

impl RocksPlan {
    /// The plan of `profile` for `config` on a machine with `cores` cores.
    pub fn new(profile: RocksProfile, config: &EngineConfig, cores: usize) -> RocksPlan {
        let tuned = match profile {
            RocksProfile::Default => None,
            RocksProfile::Leveled | RocksProfile::Universal => {
                Some(Tuned::new(profile, config.budget(), cores))
            }
        };
        RocksPlan {
            profile,
            block_cache_bytes: match profile {
                RocksProfile::Default => config.cache_bytes,
                _ => Some(config.budget()),
            },
            tuned,
            compression: config.peer_compression,
            sync: config.sync,
        }
    }

    /// The memory the plan allows memtables: write buffer size × number.
    pub fn memtable_bytes(&self) -> Option<u64> {
        self.tuned
            .as_ref()
            .map(|t| t.write_buffer_size * t.max_write_buffer_number as u64)
    }

    /// Every option the plan sets (or, where marked, relies on), with its
    /// value and source.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        let size = |b: u64| crate::format::bytes(b);
        match (&self.tuned, self.block_cache_bytes) {
            (Some(_), Some(b)) => out.push(Setting::new(
                "block_cache",
                format!("LRU {}", size(b)),
                "memory budget B (benchmark.sh CACHE_SIZE, 16 GiB there)",
            )),
            (None, Some(b)) => out.push(Setting::new(
                "block_cache",
                format!("LRU {}", size(b)),
                "memory budget B",
            )),
            (_, None) => out.push(Setting::new(
                "block_cache",
                "RocksDB default (32 MiB LRU)",
                "no budget on the command line",
            )),
        }
        if let Some(t) = &self.tuned {
            t.settings(&mut out);
        } else {
            out.push(Setting::new(
                "all other options",
                "RocksDB defaults (Options::default())",
                "reference configuration of earlier reports",
            ));
        }
        let (compression, bottommost, source) = match self.compression {
            PeerCompression::None => (
                "none",
                "none (follows compression)",
                "--peer-compression none: parity with evendb under --evendb-compression none (benchmark.sh: COMPRESSION_TYPE=zstd)",
            ),
            PeerCompression::Lz4 => (
                "LZ4",
                "LZ4",
                "--peer-compression lz4: parity with evendb's default LZ4 table and run blocks (WAL uncompressed, RocksDB's default, as evendb's logs)",
            ),
            PeerCompression::Recommended => (
                "LZ4",
                "ZSTD",
                "--peer-compression recommended: RocksDB's recommended setting (LZ4 above, ZSTD at the bottommost level)",
            ),
        };
        out.push(Setting::new("compression", compression, source));
        out.push(Setting::new("bottommost_compression", bottommost, source));
        out.push(Setting::new(
            "WAL",
            "on",
            "evendb logs every put too; benchmark.sh keeps it on except in bulk loads",
        ));
        out.push(Setting::new(
            "WriteOptions::sync",
            self.sync,
            if self.sync {
                "--sync (benchmark.sh's default for its write tests, DB_BENCH_NO_SYNC unset)"
            } else {
                "default pairing with evendb's buffered durability (benchmark.sh with DB_BENCH_NO_SYNC=1)"
            },
        ));
        out
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        let what = match self.profile {
            RocksProfile::Leveled => "RocksDB, benchmark.sh leveled configuration",
            RocksProfile::Universal => "RocksDB, benchmark.sh universal configuration",
            RocksProfile::Default => "RocksDB default options",
        };
        let cache = self
            .block_cache_bytes
            .map_or("default block cache".to_string(), |b| {
                format!("block cache {}", crate::format::bytes(b))
            });
        let memtables = self
            .memtable_bytes()
            .map(|m| format!(", memtables ≤ {}", crate::format::bytes(m)))
            .unwrap_or_default();
        format!(
            "{what}, {cache}{memtables}, compression {}, WAL on, sync {}",
            self.compression.name(),
            self.sync
        )
    }
}

impl Tuned {
    /// benchmark.sh's options for `profile`, scaled to `budget`.
    fn new(profile: RocksProfile, budget: u64, cores: usize) -> Tuned {
        let max_write_buffer_number = 8;
        let write_buffer_size = (budget / max_write_buffer_number as u64).max(MIN_WRITE_BUFFER);
        let universal = profile == RocksProfile::Universal;
        Tuned {
            cache_num_shard_bits: 6,
            block_size: 8192,
            bloom_bits_per_key: 10.0,
            cache_index_and_filter_blocks: true,
            pin_l0_filter_and_index_blocks_in_cache: true,
            bytes_per_sync: 1 << 20,
            write_buffer_size,
            max_write_buffer_number,
            target_file_size_base: write_buffer_size,
            max_bytes_for_level_base: 8 * write_buffer_size,
            max_bytes_for_level_multiplier: 8.0,
            level0_file_num_compaction_trigger: if universal { 8 } else { 4 },
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 30,
            max_background_jobs: cores.max(2) as i32,
            max_subcompactions: 1,
            max_open_files: -1,
            delete_obsolete_files_period_micros: 60 << 20,
            style: if universal {
                Style::Universal {
                    num_levels: 40,
                    size_ratio: 1,
                    min_merge_width: 2,
                    max_merge_width: 20,
                    max_size_amplification_percent: 200,
                    compression_size_percent: -1,
                    allow_trivial_move: false,
                }
            } else {
                Style::Leveled {
                    num_levels: 8,
                    level_compaction_dynamic_level_bytes: true,
                }
            },
        }
    }

    fn settings(&self, out: &mut Vec<Setting>) {
        let size = |b: u64| crate::format::bytes(b);
        let mut set = |option: &str, value: String, source: String| {
            out.push(Setting::new(option, value, &source));
        };
        let b = |flag: &str| format!("{BENCH} {flag}");
        set(
            "cache_numshardbits",
            self.cache_num_shard_bits.to_string(),
            b("--cache_numshardbits=6"),
        );
        set(
            "cache_high_pri_pool_ratio",
            "0.5".into(),
            b("with CACHE_INDEX_AND_FILTER_BLOCKS=1; also RocksDB's LRU default (not settable through the rocksdb crate)"),
        );
        set(
            "block_size",
            self.block_size.to_string(),
            b("--block_size (BLOCK_SIZE, default 8192)"),
        );
        set(
            "filter_policy",
            format!("Bloom, {} bits/key", self.bloom_bits_per_key),
            b("--bloom_bits=10"),
        );
        set(
            "cache_index_and_filter_blocks",
            self.cache_index_and_filter_blocks.to_string(),
            b("CACHE_INDEX_AND_FILTER_BLOCKS=1 (its default is 0): filters and indexes count against the memory budget"),
        );
        set(
            "cache_index_and_filter_blocks_with_high_priority",
            "true".into(),
            "RocksDB default".into(),
        );
        set(
            "pin_l0_filter_and_index_blocks_in_cache",
            self.pin_l0_filter_and_index_blocks_in_cache.to_string(),
            b("--pin_l0_filter_and_index_blocks_in_cache=1"),
        );
        set(
            "bytes_per_sync",
            size(self.bytes_per_sync),
            b("--bytes_per_sync (BYTES_PER_SYNC, default 1 MiB)"),
        );
        set(
            "write_buffer_size",
            size(self.write_buffer_size),
            "B / max_write_buffer_number, so that all memtables fit in B (benchmark.sh WRITE_BUFFER_SIZE_MB=128, scaled)".into(),
        );
        set(
            "max_write_buffer_number",
            self.max_write_buffer_number.to_string(),
            b("--max_write_buffer_number=8 (params_w)"),
        );
        set(
            "target_file_size_base",
            size(self.target_file_size_base),
            "= write_buffer_size (benchmark.sh TARGET_FILE_SIZE_BASE_MB=128 = WRITE_BUFFER_SIZE_MB, scaled)".into(),
        );
        set(
            "max_bytes_for_level_base",
            size(self.max_bytes_for_level_base),
            "8 × write_buffer_size (benchmark.sh MAX_BYTES_FOR_LEVEL_BASE_MB=1024 = 8 × 128, scaled)".into(),
        );
        set(
            "max_bytes_for_level_multiplier",
            self.max_bytes_for_level_multiplier.to_string(),
            b("PER_LEVEL_FANOUT=8"),
        );
        let l0 = match self.style {
            Style::Leveled { .. } => "leveled LEVEL0_* defaults 4 / 20 / 30",
            Style::Universal { .. } => "universal LEVEL0_* defaults 8 / 20 / 30 (sorted runs)",
        };
        set(
            "level0_file_num_compaction_trigger",
            self.level0_file_num_compaction_trigger.to_string(),
            b(l0),
        );
        set(
            "level0_slowdown_writes_trigger",
            self.level0_slowdown_writes_trigger.to_string(),
            b(l0),
        );
        set(
            "level0_stop_writes_trigger",
            self.level0_stop_writes_trigger.to_string(),
            b(l0),
        );
        set(
            "max_background_jobs",
            self.max_background_jobs.to_string(),
            "the machine's cores, at least 2 (benchmark.sh MAX_BACKGROUND_JOBS=16 on its servers; RocksDB tuning guide: about the number of cores)".into(),
        );
        set(
            "max_subcompactions",
            self.max_subcompactions.to_string(),
            b("SUBCOMPACTIONS=1"),
        );
        set(
            "max_open_files",
            self.max_open_files.to_string(),
            b("--open_files=-1"),
        );
        set(
            "delete_obsolete_files_period_micros",
            self.delete_obsolete_files_period_micros.to_string(),
            b("--delete_obsolete_files_period_micros=$((60 * M))"),
        );
        match &self.style {
            Style::Leveled {
                num_levels,
                level_compaction_dynamic_level_bytes,
            } => {
                set(
                    "compaction_style",
                    "level".into(),
                    b("--compaction_style=0 (COMPACTION_STYLE=leveled)"),
                );
                set(
                    "num_levels",
                    num_levels.to_string(),
                    b("level_const_params --num_levels=8"),
                );
                set(
                    "level_compaction_dynamic_level_bytes",
                    level_compaction_dynamic_level_bytes.to_string(),
                    b("level_const_params"),
                );
            }
            Style::Universal {
                num_levels,
                size_ratio,
                min_merge_width,
                max_merge_width,
                max_size_amplification_percent,
                compression_size_percent,
                allow_trivial_move,
            } => {
                set(
                    "compaction_style",
                    "universal".into(),
                    b("--compaction_style=1 (COMPACTION_STYLE=universal)"),
                );
                set(
                    "num_levels",
                    num_levels.to_string(),
                    b("univ_const_params --num_levels=40"),
                );
                set(
                    "compaction_options_universal.size_ratio",
                    size_ratio.to_string(),
                    b("UNIVERSAL_SIZE_RATIO=1"),
                );
                set(
                    "compaction_options_universal.min_merge_width",
                    min_merge_width.to_string(),
                    b("UNIVERSAL_MIN_MERGE_WIDTH=2"),
                );
                set(
                    "compaction_options_universal.max_merge_width",
                    max_merge_width.to_string(),
                    b("UNIVERSAL_MAX_MERGE_WIDTH=20"),
                );
                set(
                    "compaction_options_universal.max_size_amplification_percent",
                    max_size_amplification_percent.to_string(),
                    b("UNIVERSAL_MAX_SIZE_AMP=200"),
                );
                set(
                    "compaction_options_universal.compression_size_percent",
                    compression_size_percent.to_string(),
                    b("COMPRESSION_SIZE_PERCENT=-1"),
                );
                set(
                    "compaction_options_universal.allow_trivial_move",
                    allow_trivial_move.to_string(),
                    b("UNIVERSAL_ALLOW_TRIVIAL_MOVE unset; RocksDB's default, not settable through the rocksdb crate"),
                );
            }
        }
    }
}
