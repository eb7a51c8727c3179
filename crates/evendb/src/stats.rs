//! Counters the engine keeps, and the public [`Stats`] view of them.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub gets: AtomicU64,
    pub scans: AtomicU64,
    pub user_bytes_written: AtomicU64,
    pub log_bytes_written: AtomicU64,
    pub table_bytes_written: AtomicU64,
    pub log_bytes_copied: AtomicU64,
    pub rebalances: AtomicU64,
    pub splits: AtomicU64,
    pub merges: AtomicU64,
    pub rebuild_micros: AtomicU64,
    pub torn_tail_bytes: AtomicU64,
    pub funks_opened: AtomicU64,
    pub log_syncs: AtomicU64,
}

pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A point-in-time view of the store's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Puts completed (deletes not included).
    pub puts: u64,
    /// Deletes completed.
    pub deletes: u64,
    /// Gets served.
    pub gets: u64,
    /// Scans started.
    pub scans: u64,
    /// Key and value bytes of puts and deletes.
    pub user_bytes_written: u64,
    /// Bytes appended to logs by puts and deletes (headers included).
    pub log_bytes_written: u64,
    /// Bytes of tables written by rebalances, splits and merges.
    pub table_bytes_written: u64,
    /// Bytes of log records carried into new logs by splits and merges.
    pub log_bytes_copied: u64,
    /// Funk rebalances (a chunk's table and log merged into a new table).
    pub rebalances: u64,
    /// Chunk splits.
    pub splits: u64,
    /// Chunk merges.
    pub merges: u64,
    /// Time spent in rebuilds (rebalance, split, merge), in microseconds.
    pub rebuild_micros: u64,
    /// Bytes cut off torn log tails when funks were opened.
    pub torn_tail_bytes: u64,
    /// Funks opened (they open lazily, on first use).
    pub funks_opened: u64,
    /// fsyncs of log segments.
    pub log_syncs: u64,
    /// Chunks in the store.
    pub chunks: u64,
    /// Snapshots and scans holding old versions.
    pub active_snapshots: u64,
}

impl Stats {
    /// Engine write amplification so far: bytes the engine wrote (logs and
    /// tables) per user byte. Zero before the first put.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.log_bytes_written + self.table_bytes_written + self.log_bytes_copied) as f64
            / self.user_bytes_written as f64
    }

    /// Every counter by name, for reports and exporters.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("puts", self.puts),
            ("deletes", self.deletes),
            ("gets", self.gets),
            ("scans", self.scans),
            ("user_bytes_written", self.user_bytes_written),
            ("log_bytes_written", self.log_bytes_written),
            ("table_bytes_written", self.table_bytes_written),
            ("log_bytes_copied", self.log_bytes_copied),
            ("rebalances", self.rebalances),
            ("splits", self.splits),
            ("merges", self.merges),
            ("rebuild_micros", self.rebuild_micros),
            ("torn_tail_bytes", self.torn_tail_bytes),
            ("funks_opened", self.funks_opened),
            ("log_syncs", self.log_syncs),
            ("chunks", self.chunks),
            ("active_snapshots", self.active_snapshots),
        ]
    }
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            puts: g(&self.puts),
            deletes: g(&self.deletes),
            gets: g(&self.gets),
            scans: g(&self.scans),
            user_bytes_written: g(&self.user_bytes_written),
            log_bytes_written: g(&self.log_bytes_written),
            table_bytes_written: g(&self.table_bytes_written),
            log_bytes_copied: g(&self.log_bytes_copied),
            rebalances: g(&self.rebalances),
            splits: g(&self.splits),
            merges: g(&self.merges),
            rebuild_micros: g(&self.rebuild_micros),
            torn_tail_bytes: g(&self.torn_tail_bytes),
            funks_opened: g(&self.funks_opened),
            log_syncs: g(&self.log_syncs),
            chunks: 0,
            active_snapshots: 0,
        }
    }
}
