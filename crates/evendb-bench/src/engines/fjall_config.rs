//! What the fjall engine sets, as plain data that every build can list and
//! test; the `fjall` engine applies a [`FjallPlan`].
//!
//! fjall 3's rustdoc gives the memory rules followed here:
//! - `DatabaseBuilder::cache_size`: "configure the block cache capacity to
//!   be ~20-25% of the available memory": the budget `B`, a quarter of the
//!   cap. (Earlier reports did this only with a budget on the command line
//!   and otherwise kept fjall's 32 MiB default; now `B` always applies.)
//! - `KeyspaceCreateOptions::max_memtable_size`: default 64 MiB,
//!   "recommended size 8 - 64 MiB, depending on how much memory is
//!   available": `B / 4` within 8..=64 MiB.
//! - `DatabaseBuilder::max_journaling_size`: default 512 MiB, at least
//!   64 MiB, "same as `max_total_wal_size` in RocksDB". Sealed memtables stay
//!   in memory until flushed and the journal limit is what forces the flush,
//!   so it bounds unflushed memtables: `B` (at least 64 MiB), the same
//!   memtable allowance the tuned RocksDB gets. (fjall's total write buffer
//!   cap, `max_write_buffer_size`, is hidden and deprecated in 3.x.)
//! - The journal is written to OS buffers on every write by default
//!   (`manual_journal_persist = false`, `PersistMode::Buffer`).

use super::{EngineConfig, PeerCompression, Setting};

/// Everything the fjall engine is opened with.
#[derive(Clone, Debug, PartialEq)]
pub struct FjallPlan {
    pub cache_bytes: u64,
    pub max_memtable_size: u64,
    pub max_journaling_size: u64,
    pub compression: PeerCompression,
    /// A write batch per write committed with `PersistMode::SyncData`.
    pub sync: bool,
}

const MIB: u64 = 1 << 20;

impl FjallPlan {
    /// The plan for `config`.
    pub fn new(config: &EngineConfig) -> FjallPlan {
        let budget = config.budget();
        FjallPlan {
            cache_bytes: budget,
            max_memtable_size: (budget / 4).clamp(8 * MIB, 64 * MIB),
            max_journaling_size: budget.max(64 * MIB),
            compression: config.peer_compression,
            sync: config.sync,
        }
    }

    /// Every option the plan sets, with its value and source.
    pub fn settings(&self) -> Vec<Setting> {
        let size = crate::format::bytes;
        let mut out = vec![
            Setting::new(
                "cache_size",
                size(self.cache_bytes),
                "memory budget B; fjall docs: ~20-25% of the available memory (default 32 MiB)",
            ),
            Setting::new(
                "max_memtable_size",
                size(self.max_memtable_size),
                "B / 4 within 8-64 MiB; fjall docs: 8 - 64 MiB depending on memory (default 64 MiB)",
            ),
            Setting::new(
                "max_journaling_size",
                size(self.max_journaling_size),
                "B, at least 64 MiB: bounds unflushed memtables like the tuned RocksDB's; fjall docs: default 512 MiB, minimum 64 MiB",
            ),
            Setting::new(
                "worker_threads",
                "min(cores, 4)",
                "fjall default",
            ),
        ];
        let (data, journal, source) = match self.compression {
            PeerCompression::None => (
                "none on every level",
                "none",
                "--peer-compression none: parity with evendb under --evendb-compression none",
            ),
            PeerCompression::Lz4 => (
                "LZ4 on every level",
                "none",
                "--peer-compression lz4: parity with evendb's default LZ4 table and run blocks and uncompressed logs",
            ),
            PeerCompression::Recommended => (
                "fjall default (none on L0 and L1, LZ4 below)",
                "fjall default (LZ4 above 4 KiB)",
                "--peer-compression recommended: fjall's own default",
            ),
        };
        out.push(Setting::new("data_block_compression_policy", data, source));
        out.push(Setting::new("journal_compression", journal, source));
        out.push(Setting::new(
            "write durability",
            if self.sync {
                "write batch per write, PersistMode::SyncData"
            } else {
                "PersistMode::Buffer (journal flushed to OS buffers per write)"
            },
            if self.sync {
                "--sync"
            } else {
                "fjall default (manual_journal_persist = false)"
            },
        ));
        out.push(Setting::new(
            "all other options",
            "fjall defaults",
            "fjall 3 DatabaseBuilder / KeyspaceCreateOptions",
        ));
        out
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        format!(
            "fjall, cache {}, memtable {}, journals ≤ {}, compression {}, {}",
            crate::format::bytes(self.cache_bytes),
            crate::format::bytes(self.max_memtable_size),
            crate::format::bytes(self.max_journaling_size),
            self.compression.name(),
            if self.sync {
                "SyncData per write"
            } else {
                "buffered journal"
            }
        )
    }
}
