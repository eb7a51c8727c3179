//! fjall with its default options and the memory budget as its cache.

use std::path::Path;

use anyhow::{Context, Result};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::{Engine, EngineConfig, ScanSummary};

/// fjall, one keyspace.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
    describe: String,
}

impl Fjall {
    pub fn open(path: &Path, config: &EngineConfig) -> Result<Self> {
        let mut builder = Database::builder(path);
        let mut describe = String::from("fjall default options");
        if let Some(bytes) = config.cache_bytes {
            builder = builder.cache_size(bytes);
            describe.push_str(&format!(", cache {}", crate::format::bytes(bytes)));
        }
        let db = builder
            .open()
            .with_context(|| format!("opening fjall at {}", path.display()))?;
        let keyspace = db.keyspace("bench", KeyspaceCreateOptions::default)?;
        Ok(Fjall {
            db,
            keyspace,
            describe,
        })
    }
}

impl Engine for Fjall {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.keyspace.insert(key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.keyspace.get(key)?.map(|v| v.to_vec()))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.keyspace.remove(key)?)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, count: usize) -> Result<ScanSummary> {
        let mut summary = ScanSummary::default();
        let mut visit = |guard: fjall::Guard| -> Result<()> {
            let (k, v) = guard.into_inner()?;
            summary.records += 1;
            summary.bytes += k.len() + v.len();
            Ok(())
        };
        match end {
            Some(end) => {
                for guard in self.keyspace.range(start..end).take(count) {
                    visit(guard)?;
                }
            }
            None => {
                for guard in self.keyspace.range(start..).take(count) {
                    visit(guard)?;
                }
            }
        }
        Ok(summary)
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
        self.describe.clone()
    }
}
