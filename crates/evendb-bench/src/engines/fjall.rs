//! fjall, configured for the memory budget as its documentation advises
//! (see [`super::fjall_config`] for every option and its source): this file
//! only applies a [`FjallPlan`].

use std::path::Path;

use anyhow::{Context, Result};
use fjall::config::CompressionPolicy;
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::fjall_config::FjallPlan;
use super::{Engine, EngineConfig, PeerCompression, PutBatch, ScanSummary, Setting};

/// fjall, one keyspace.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
    plan: FjallPlan,
}

impl Fjall {
    pub fn open(path: &Path, config: &EngineConfig) -> Result<Self> {
        let plan = FjallPlan::new(config);
        let mut builder = Database::builder(path)
            .cache_size(plan.cache_bytes)
            .max_journaling_size(plan.max_journaling_size);
        if plan.compression != PeerCompression::Recommended {
            builder = builder.journal_compression(CompressionType::None);
        }
        let db = builder
            .open()
            .with_context(|| format!("opening fjall at {}", path.display()))?;
        let keyspace = db.keyspace("bench", || {
            let opts = KeyspaceCreateOptions::default().max_memtable_size(plan.max_memtable_size);
            match plan.compression {
                PeerCompression::None => opts
                    .data_block_compression_policy(CompressionPolicy::all(CompressionType::None)),
                PeerCompression::Lz4 => {
                    opts.data_block_compression_policy(CompressionPolicy::all(CompressionType::Lz4))
                }
                PeerCompression::Recommended => opts,
            }
        })?;
        Ok(Fjall { db, keyspace, plan })
    }

    /// Writes one change: through the keyspace (journal flushed to OS
    /// buffers, fjall's default) or, with `--sync`, as a write batch of one
    /// committed with `PersistMode::SyncData`.
    fn write(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if self.plan.sync {
            let mut batch = self.db.batch().durability(Some(PersistMode::SyncData));
            match value {
                Some(v) => batch.insert(&self.keyspace, key, v),
                None => batch.remove(&self.keyspace, key),
            }
            return Ok(batch.commit()?);
        }
        match value {
            Some(v) => Ok(self.keyspace.insert(key, v)?),
            None => Ok(self.keyspace.remove(key)?),
        }
    }

    /// The persist mode of every write: what `Keyspace::insert` uses
    /// (`PersistMode::Buffer`, as `manual_journal_persist` is off) or, with
    /// `--sync`, `PersistMode::SyncData`.
    fn persist_mode(&self) -> PersistMode {
        if self.plan.sync {
            PersistMode::SyncData
        } else {
            PersistMode::Buffer
        }
    }
}

/// Counts the records and bytes of `guards`, stopping at the first error.
fn visit(guards: impl Iterator<Item = fjall::Guard>) -> Result<ScanSummary> {
    let mut summary = ScanSummary::default();
    for guard in guards {
        let (k, v) = guard.into_inner()?;
        summary.records += 1;
        summary.bytes += k.len() + v.len();
    }
    Ok(summary)
}

impl Engine for Fjall {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(key, Some(value))
    }

    fn put_batch(&self, batch: &PutBatch) -> Result<()> {
        let mut b = fjall::OwnedWriteBatch::with_capacity(self.db.clone(), batch.len())
            .durability(Some(self.persist_mode()));
        for (key, value) in batch.iter() {
            b.insert(&self.keyspace, key, value);
        }
        Ok(b.commit()?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.keyspace.get(key)?.map(|v| v.to_vec()))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.write(key, None)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        match end {
            Some(end) => visit(self.keyspace.range(start..end).take(count)),
            None => visit(self.keyspace.range(start..).take(count)),
        }
    }

    fn scan_rev(&self, start: &[u8], floor: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        match floor {
            // An inverted range holds nothing.
            Some(floor) if floor > start => Ok(ScanSummary::default()),
            Some(floor) => visit(self.keyspace.range(floor..=start).rev().take(count)),
            None => visit(self.keyspace.range(..=start).rev().take(count)),
        }
    }

    fn prefix_rev(&self, prefix: &[u8], count: usize) -> Result<ScanSummary> {
        visit(self.keyspace.prefix(prefix).rev().take(count))
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.persist(PersistMode::SyncAll)?)
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![
            ("tables".to_string(), self.keyspace.table_count() as u64),
            (
                "l0_tables".to_string(),
                self.keyspace.l0_table_count() as u64,
            ),
            (
                "compactions_completed".to_string(),
                self.db.compactions_completed() as u64,
            ),
        ]
    }

    fn describe(&self) -> String {
        self.plan.summary()
    }

    fn settings(&self) -> Vec<Setting> {
        self.plan.settings()
    }
}
