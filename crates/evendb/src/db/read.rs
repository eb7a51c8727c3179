//! Gets, and the lazy opening of funks.
//!
//! A get takes no lock and waits for nothing: it finds the chunk through the
//! lock-free index, then reads, in order, the journaled writes a read-only
//! open holds in memory (see `recovery::replayed`), the munk (if the chunk
//! has one: the munk holds the chunk's whole data), the row cache, and the
//! funk (log parts whose Bloom filter may hold the key, then the table). The only lock
//! on the way is the one-time opening of a funk never used before.

use super::DbInner;
use crate::cache::row::Tag;
use crate::chunk::{task, Chunk};
use crate::error::Result;
use crate::funk::{Funk, ReadView};
use crate::stats;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Accesses (since the last halving) after which a munk-less chunk asks for
/// a munk.
pub(crate) const LOAD_HEAT: u32 = 8;

impl DbInner {
    /// The chunk's funk, opening it on first use.
    pub(crate) fn open_funk(&self, chunk: &Chunk) -> Result<Arc<Funk>> {
        if let Some(f) = chunk.funk() {
            return Ok(f);
        }
        let _g = chunk.open_lock();
        if let Some(f) = chunk.funk() {
            return Ok(f);
        }
        let files = chunk.files.lock().clone();
        let src = crate::funk::FileSource {
            storage: self.storage.as_ref(),
            dir: &self.dir,
            log_config: &self.log_config,
            open_files: &self.open_files,
            budget: &self.budget,
        };
        let (funk, info) = Funk::open(&src, &files)?;
        stats::add(&self.counters.local().torn_tail_bytes, info.truncated);
        stats::add(&self.counters.local().funks_opened, 1);
        chunk
            .counter
            .fetch_max(info.max_counter.saturating_add(1), Ordering::AcqRel);
        let funk = Arc::new(funk);
        chunk.set_funk(funk.clone());
        Ok(funk)
    }

    /// The value of `key` at `version` (`None`: the latest).
    pub(crate) fn get_at(&self, key: &[u8], version: Option<u64>) -> Result<Option<Vec<u8>>> {
        if let Some(held) = self.replayed.get().and_then(|r| r.get(key)) {
            // A read-only open's journaled write: newer than every record
            // of the key in the chunks, and seen at every version this
            // handle reads at (see `recovery::replayed`).
            return Ok(held.map(<[u8]>::to_vec));
        }
        if version.is_none() && self.versions.batch_may_write(key) {
            // A batch in progress may have written this key but not yet
            // others: read from a snapshot, which waits for the batch, so
            // no get sees part of one (see `db/batch.rs`).
            let mut end = key.to_vec();
            end.push(0);
            let s = self.versions.acquire_snapshot(key, Some(&end));
            let got = self.with_chunk(key, |chunk| self.get_in(chunk, key, Some(s)));
            self.versions.release(s);
            stats::add(&self.counters.local().gets_behind_batch, 1);
            return got;
        }
        self.with_chunk(key, |chunk| self.get_in(chunk, key, version))
    }

    /// [`DbInner::get_at`] in the live chunk holding `key`.
    fn get_in(
        &self,
        chunk: &Arc<Chunk>,
        key: &[u8],
        version: Option<u64>,
    ) -> Result<Option<Vec<u8>>> {
        self.touch(chunk);
        let max_version = version.unwrap_or(u64::MAX);
        let c = self.counters.local();
        // The tag before the tombstones: a range delete publishes its
        // tombstone, then bumps the generation, so a get that sees the new
        // generation sees the tombstone (and one that does not cannot cache
        // what it read).
        let tag = Tag {
            chunk_id: chunk.id,
            generation: chunk.generation.load(Ordering::Acquire),
        };
        let tombstones = self.tombstones.load();
        let floor = if tombstones.is_empty() {
            0
        } else {
            tombstones.floor(key, max_version)
        };
        if let Some(m) = chunk.munk() {
            stats::add(&c.gets_munk, 1);
            return Ok(m.read_from(key, max_version, floor));
        }
        if version.is_none() {
            if let Some(v) = self.row_cache.get(key, tag) {
                stats::add(&c.gets_row_cache, 1);
                return Ok(v.map(|v| v.to_vec()));
            }
        }
        let funk = self.open_funk(chunk)?;
        let applied = chunk.applied.load(Ordering::Acquire);
        let view = ReadView {
            max_version,
            recovery: &self.recovery,
            floor,
        };
        let mut probe = stats::FilterProbe::default();
        let got = funk.get(key, view, &mut probe);
        probe.add_to(c);
        let (found, source) = got?;
        stats::add(
            match source {
                crate::funk::Source::Log => &c.gets_log,
                crate::funk::Source::Table => &c.gets_table,
                crate::funk::Source::Nowhere => &c.gets_absent,
            },
            1,
        );
        let stamp = found.as_ref().map_or((0, 0), crate::entry::Entry::stamp);
        let value = found.and_then(|e| e.value);
        if version.is_none() {
            let cached: Option<Arc<[u8]>> = value.as_deref().map(Arc::from);
            self.row_cache.insert(key, cached, stamp, tag, || {
                chunk.applied.load(Ordering::Acquire) == applied
                    && chunk.generation.load(Ordering::Acquire) == tag.generation
            });
        }
        self.wants_munk(chunk)?;
        Ok(value)
    }

    /// The version of the newest record of `key` (a tombstone too), 0 if
    /// it has none: for a read-only open (no munks) checking its journal.
    pub(crate) fn newest_version(&self, key: &[u8]) -> Result<u64> {
        self.with_chunk(key, |chunk| {
            let funk = self.open_funk(chunk)?;
            let view = ReadView {
                max_version: u64::MAX,
                recovery: &self.recovery,
                floor: 0,
            };
            let mut probe = stats::FilterProbe::default();
            let (found, _) = funk.get(key, view, &mut probe)?;
            Ok(found.map_or(0, |e| e.version))
        })
    }

    /// Asks for a munk for a munk-less chunk that has become hot.
    pub(crate) fn wants_munk(&self, chunk: &Arc<Chunk>) -> Result<()> {
        let heat = chunk.heat.load(Ordering::Relaxed);
        if heat >= LOAD_HEAT && !chunk.has_munk() && self.may_ask_again(chunk, heat) {
            self.schedule(chunk, task::MUNK_LOAD)?;
        }
        Ok(())
    }
}
