//! RocksDB through the `rocksdb` crate, in one of three configurations
//! (see [`super::rocksdb_config`] for what each sets and why): this file
//! only applies a [`RocksPlan`].

use std::path::Path;

use anyhow::{Context, Result};
use rocksdb::{
    BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, DBRawIterator, Direction,
    IteratorMode, LruCacheOptions, Options, ReadOptions, UniversalCompactOptions, WriteBatch,
    WriteOptions, DB,
};

use super::rocksdb_config::{RocksPlan, RocksProfile, Style, Tuned};
use super::{Engine, EngineConfig, EngineKind, PutBatch, ScanSummary, Setting};

/// RocksDB through the `rocksdb` crate.
pub struct RocksDb {
    db: DB,
    /// Used by every put, write batch and delete (`sync` per the plan).
    write: WriteOptions,
    plan: RocksPlan,
}

impl RocksDb {
    pub fn open(kind: EngineKind, path: &Path, config: &EngineConfig) -> Result<Self> {
        let profile = RocksProfile::of(kind)
            .with_context(|| format!("`{}` is not a RocksDB engine", kind.name()))?;
        let plan = RocksPlan::new(profile, config, super::cores());
        let opts = options(&plan);
        let db = DB::open(&opts, path)
            .with_context(|| format!("opening RocksDB at {}", path.display()))?;
        let mut write = WriteOptions::default();
        write.set_sync(plan.sync);
        Ok(RocksDb { db, write, plan })
    }
}

/// The RocksDB options of `plan`.
fn options(plan: &RocksPlan) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let mut table = BlockBasedOptions::default();
    let mut custom_table = false;
    if let Some(bytes) = plan.block_cache_bytes {
        let cache = match &plan.tuned {
            Some(t) => {
                let mut lru = LruCacheOptions::default();
                lru.set_capacity(bytes as usize);
                lru.set_num_shard_bits(t.cache_num_shard_bits);
                Cache::new_lru_cache_opts(&lru)
            }
            None => Cache::new_lru_cache(bytes as usize),
        };
        table.set_block_cache(&cache);
        custom_table = true;
    }
    if let Some(t) = &plan.tuned {
        tuned(&mut opts, &mut table, t);
        custom_table = true;
    }
    if custom_table {
        opts.set_block_based_table_factory(&table);
    }
    match plan.compression {
        super::PeerCompression::None => {
            opts.set_compression_type(DBCompressionType::None);
            opts.set_bottommost_compression_type(DBCompressionType::None);
        }
        super::PeerCompression::Lz4 => {
            opts.set_compression_type(DBCompressionType::Lz4);
            opts.set_bottommost_compression_type(DBCompressionType::Lz4);
        }
        super::PeerCompression::Recommended => {
            opts.set_compression_type(DBCompressionType::Lz4);
            opts.set_bottommost_compression_type(DBCompressionType::Zstd);
        }
    }
    opts
}

fn tuned(opts: &mut Options, table: &mut BlockBasedOptions, t: &Tuned) {
    table.set_block_size(t.block_size);
    table.set_bloom_filter(t.bloom_bits_per_key, false);
    table.set_cache_index_and_filter_blocks(t.cache_index_and_filter_blocks);
    table.set_pin_l0_filter_and_index_blocks_in_cache(t.pin_l0_filter_and_index_blocks_in_cache);
    opts.set_bytes_per_sync(t.bytes_per_sync);
    opts.set_write_buffer_size(t.write_buffer_size as usize);
    opts.set_max_write_buffer_number(t.max_write_buffer_number);
    opts.set_target_file_size_base(t.target_file_size_base);
    opts.set_max_bytes_for_level_base(t.max_bytes_for_level_base);
    opts.set_max_bytes_for_level_multiplier(t.max_bytes_for_level_multiplier);
    opts.set_level_zero_file_num_compaction_trigger(t.level0_file_num_compaction_trigger);
    opts.set_level_zero_slowdown_writes_trigger(t.level0_slowdown_writes_trigger);
    opts.set_level_zero_stop_writes_trigger(t.level0_stop_writes_trigger);
    opts.set_max_background_jobs(t.max_background_jobs);
    opts.set_max_subcompactions(t.max_subcompactions);
    opts.set_max_open_files(t.max_open_files);
    opts.set_delete_obsolete_files_period_micros(t.delete_obsolete_files_period_micros);
    match &t.style {
        Style::Leveled {
            num_levels,
            level_compaction_dynamic_level_bytes,
        } => {
            opts.set_compaction_style(DBCompactionStyle::Level);
            opts.set_num_levels(*num_levels);
            opts.set_level_compaction_dynamic_level_bytes(*level_compaction_dynamic_level_bytes);
        }
        Style::Universal {
            num_levels,
            size_ratio,
            min_merge_width,
            max_merge_width,
            max_size_amplification_percent,
            compression_size_percent,
            // RocksDB's default, not settable through the crate.
            allow_trivial_move: _,
        } => {
            opts.set_compaction_style(DBCompactionStyle::Universal);
            opts.set_num_levels(*num_levels);
            let mut u = UniversalCompactOptions::default();
            u.set_size_ratio(*size_ratio);
            u.set_min_merge_width(*min_merge_width);
            u.set_max_merge_width(*max_merge_width);
            u.set_max_size_amplification_percent(*max_size_amplification_percent);
            u.set_compression_size_percent(*compression_size_percent);
            opts.set_universal_compaction_options(&u);
        }
    }
}

/// Visits up to `count` records from where `it` stands, stepping back with
/// `prev` (never past the last record wanted).
fn visit_back(mut it: DBRawIterator<'_>, count: usize) -> Result<ScanSummary> {
    let mut summary = ScanSummary::default();
    while summary.records < count {
        let Some((k, v)) = it.item() else { break };
        summary.records += 1;
        summary.bytes += k.len() + v.len();
        if summary.records < count {
            it.prev();
        }
    }
    it.status()?;
    Ok(summary)
}

impl Engine for RocksDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write)?)
    }

    fn put_batch(&self, batch: &PutBatch) -> Result<()> {
        let mut b = WriteBatch::with_capacity_bytes(batch.size_in_bytes() + 32 * batch.len());
        for (key, value) in batch.iter() {
            b.put(key, value);
        }
        Ok(self.db.write_opt(b, &self.write)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete_opt(key, &self.write)?)
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

    fn scan_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        // The forward scan's read options (RocksDB's defaults), with the
        // scan's bound as the iterator's lower bound.
        let mut read = ReadOptions::default();
        if let Some(floor) = floor {
            read.set_iterate_lower_bound(floor.to_vec());
        }
        let mut it = self.db.raw_iterator_opt(read);
        it.seek_for_prev(start);
        visit_back(it, count)
    }

    fn prefix_rev(&self, prefix: &[u8], count: usize) -> Result<ScanSummary> {
        let mut read = ReadOptions::default();
        read.set_iterate_lower_bound(prefix.to_vec());
        let end = super::prefix_end(prefix);
        if let Some(end) = &end {
            read.set_iterate_upper_bound(end.clone());
        }
        let mut it = self.db.raw_iterator_opt(read);
        match &end {
            // With the upper bound set, this is the last key below it.
            Some(end) => it.seek_for_prev(end),
            None => it.seek_to_last(),
        }
        visit_back(it, count)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush_wal(true)?;
        Ok(())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        // `WriteBatch::delete_range` is `DeleteRange` on the default column
        // family (the crate keeps no handle of it for `delete_range_cf`).
        let mut b = WriteBatch::default();
        b.delete_range(start, end);
        Ok(self.db.write_opt(b, &self.write)?)
    }

    fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.db.compact_range(start, end);
        Ok(())
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for name in [
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
            "rocksdb.num-running-compactions",
            "rocksdb.block-cache-capacity",
            "rocksdb.cur-size-all-mem-tables",
        ] {
            if let Ok(Some(v)) = self.db.property_int_value(name) {
                out.push((name.trim_start_matches("rocksdb.").replace('-', "_"), v));
            }
        }
        out
    }

    fn describe(&self) -> String {
        self.plan.summary()
    }

    fn settings(&self) -> Vec<Setting> {
        self.plan.settings()
    }
}
