//! evendb, with its default options: buffered durability unless `--sync`,
//! LZ4 table and run blocks unless `--evendb-compression none`. Its memory budget (munks, row cache, filters, indexes) is the budget the
//! peers get (`--cache-size`, or a quarter of `--memory-limit`), else
//! evendb's default.

use std::path::Path;

use anyhow::{Context, Result};
use evendb::Durability;

use super::{Engine, EngineConfig, EvendbCompression, PutBatch, ScanSummary, Setting};

/// The engine of this repository.
pub struct EvenDb {
    db: evendb::Db,
    durability: Durability,
    compression: EvendbCompression,
    /// Whether the budget came from the command line.
    budget_set: bool,
}

impl EvenDb {
    pub fn open(path: &Path, config: &EngineConfig) -> Result<Self> {
        let mut opts = evendb::Options::default();
        if let Some(budget) = Self::budget(config) {
            opts = opts.memory_budget(budget);
        }
        let durability = if config.sync {
            Durability::Sync
        } else {
            Durability::default()
        };
        opts = opts.durability(durability);
        opts = opts.compression(config.evendb_compression.to_evendb());
        // glibc's malloc_trim finds nothing to do under another allocator.
        opts = opts.trim_freed_memory(!cfg!(any(feature = "mimalloc", feature = "jemalloc")));
        let db = opts
            .open(path)
            .with_context(|| format!("opening evendb at {}", path.display()))?;
        Ok(EvenDb {
            db,
            durability,
            compression: config.evendb_compression,
            budget_set: config.cache_bytes.is_some(),
        })
    }

    fn durability_name(&self) -> String {
        match self.durability {
            Durability::Sync => "Sync".to_string(),
            Durability::Buffered { sync_interval } => {
                format!("Buffered, synced every {} ms", sync_interval.as_millis())
            }
            other => format!("{other:?}"),
        }
    }

    fn compression_name(&self) -> &'static str {
        match self.compression {
            EvendbCompression::Lz4 => "LZ4 table and run blocks",
            EvendbCompression::None => "none",
        }
    }

    /// The memory budget for `config`: the cache budget the peers get.
    fn budget(config: &EngineConfig) -> Option<u64> {
        config.cache_bytes
    }
}

/// Counts the records and bytes of `items`, stopping at the first error.
fn visit(items: impl Iterator<Item = evendb::Result<(Vec<u8>, Vec<u8>)>>) -> Result<ScanSummary> {
    let mut summary = ScanSummary::default();
    for item in items {
        let (k, v) = item?;
        summary.records += 1;
        summary.bytes += k.len() + v.len();
    }
    Ok(summary)
}

impl Engine for EvenDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn put_batch(&self, batch: &PutBatch) -> Result<()> {
        let mut b = evendb::WriteBatch::with_capacity(batch.len());
        for (key, value) in batch.iter() {
            b.put(key, value);
        }
        Ok(self.db.write(&b)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete(key)?)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        match end {
            Some(end) => visit(self.db.scan(start..end).take(count)),
            None => visit(self.db.scan(start..).take(count)),
        }
    }

    fn scan_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        match floor {
            Some(floor) => visit(self.db.scan(floor..=start).rev().take(count)),
            None => visit(self.db.scan(..=start).rev().take(count)),
        }
    }

    fn prefix_rev(&self, prefix: &[u8], count: usize) -> Result<ScanSummary> {
        visit(self.db.prefix(prefix).rev().take(count))
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        Ok(self.db.delete_range(start..end)?)
    }

    fn compact_range(&self, _start: Option<&[u8]>, _end: Option<&[u8]>) -> Result<()> {
        self.db.flush()?;
        Ok(self.db.compact()?)
    }

    fn stats(&self) -> Vec<(String, u64)> {
        self.db
            .stats()
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "evendb default options, durability {}, compression {}, memory budget {}",
            self.durability_name(),
            self.compression_name(),
            crate::format::bytes(self.db.stats().memory_budget)
        )
    }

    fn settings(&self) -> Vec<Setting> {
        vec![
            Setting::new(
                "memory_budget",
                crate::format::bytes(self.db.stats().memory_budget),
                if self.budget_set {
                    "memory budget B (--cache-size, or --memory-limit / 4)"
                } else {
                    "evendb default"
                },
            ),
            Setting::new(
                "durability",
                self.durability_name(),
                if self.durability == Durability::Sync {
                    "--sync"
                } else {
                    "evendb default"
                },
            ),
            Setting::new(
                "compression",
                format!(
                    "{} (logs appended by puts never compressed)",
                    self.compression_name()
                ),
                match self.compression {
                    EvendbCompression::Lz4 => "evendb default (Compression::Lz4)",
                    EvendbCompression::None => "--evendb-compression none",
                },
            ),
            Setting::new(
                "all other options",
                "evendb defaults",
                "evendb::Options::default()",
            ),
        ]
    }
}
