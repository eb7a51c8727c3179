//! RocksDB with its default options, its write-ahead log on (evendb logs
//! every put too), and the memory budget given to the block cache.

use std::path::Path;

use anyhow::{Context, Result};
use rocksdb::{BlockBasedOptions, Cache, Direction, IteratorMode, Options, ReadOptions, DB};

use super::{Engine, EngineConfig, ScanSummary};

/// RocksDB through the `rocksdb` crate.
pub struct RocksDb {
    db: DB,
    describe: String,
}

impl RocksDb {
    pub fn open(path: &Path, config: &EngineConfig) -> Result<Self> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        let mut describe = String::from("RocksDB default options, WAL on");
        if let Some(bytes) = config.cache_bytes {
            let mut table = BlockBasedOptions::default();
            table.set_block_cache(&Cache::new_lru_cache(bytes as usize));
            opts.set_block_based_table_factory(&table);
            describe.push_str(&format!(", block cache {}", crate::format::bytes(bytes)));
        }
        let db = DB::open(&opts, path)
            .with_context(|| format!("opening RocksDB at {}", path.display()))?;
        Ok(RocksDb { db, describe })
    }
}

impl Engine for RocksDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete(key)?)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        let mut read = ReadOptions::default();
        if let Some(end) = end {
            read.set_iterate_upper_bound(end.to_vec());
        }
        let mut summary = ScanSummary::default();
        for item in self
            .db
            .iterator_opt(IteratorMode::From(start, Direction::Forward), read)
            .take(count)
        {
            let (k, v) = item?;
            summary.records += 1;
            summary.bytes += k.len() + v.len();
        }
        Ok(summary)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush_wal(true)?;
        Ok(())
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for name in [
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
            "rocksdb.num-running-compactions",
        ] {
            if let Ok(Some(v)) = self.db.property_int_value(name) {
                out.push((name.trim_start_matches("rocksdb.").replace('-', "_"), v));
            }
        }
        out
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}
