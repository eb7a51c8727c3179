//! Counters the engine keeps, and the public [`Stats`] view of them in three
//! forms: a human table (`Display`), JSON ([`Stats::to_json`]) and the
//! Prometheus text exposition format ([`Stats::to_prometheus`]).
//!
//! Invariants:
//! - Counters are striped (see [`Counters`]): each thread adds to its own
//!   stripe with Relaxed atomics; a [`Stats`] sums the stripes (maxima take
//!   the largest). The figures are for people and dashboards, never used to
//!   publish data, so Relaxed is enough; a `Stats` taken while the store is
//!   busy may show one counter updated and a related one not yet.
//! - Every figure is declared once, in the `stats!` invocation below, which
//!   generates the stripe, the public struct, the by-name list and the help
//!   texts, so the forms never drift apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How a figure behaves over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Only grows while the store is open (reset at open).
    Counter,
    /// Goes up and down (a level, or a maximum so far).
    Gauge,
}

mod export;

/// One figure's name, kind and help text.
struct Field {
    name: &'static str,
    kind: Kind,
    help: &'static str,
}

/// Declares every figure once: striped counters (summed), striped maxima,
/// and counters and gauges filled in when a [`Stats`] is taken.
macro_rules! stats {
    (
        counters { $( $(#[doc = $cdoc:literal])* $counter:ident, )* }
        maxima { $( $(#[doc = $mdoc:literal])* $max:ident, )* }
        totals { $( $(#[doc = $tdoc:literal])* $total:ident, )* }
        gauges { $( $(#[doc = $gdoc:literal])* $gauge:ident, )* }
    ) => {
        /// One thread's share of the counters (see [`Counters`]).
        #[derive(Debug, Default)]
        pub(crate) struct Stripe {
            $( pub $counter: AtomicU64, )*
            $( pub $max: AtomicU64, )*
        }

        impl Stripe {
            fn add_to(&self, s: &mut Stats) {
                $( s.$counter += self.$counter.load(Ordering::Relaxed); )*
                $( s.$max = s.$max.max(self.$max.load(Ordering::Relaxed)); )*
            }
        }

        /// A point-in-time view of the store's counters, memory and state,
        /// from [`Db::stats`](crate::Db::stats).
        ///
        /// Counters start at zero when the store is opened. Durations are in
        /// microseconds, sizes in bytes. The derived figures (hit rates,
        /// write amplification) are methods. `Display` prints a compact
        /// table; [`Stats::to_json`] and [`Stats::to_prometheus`] give the
        /// machine forms.
        ///
        /// ```
        /// # let dir = tempfile::tempdir().unwrap();
        /// let db = evendb::Db::open(dir.path())?;
        /// db.put("k", "v")?;
        /// let s = db.stats();
        /// assert_eq!(s.puts, 1);
        /// assert!(s.write_amplification() > 1.0);
        /// println!("{s}");
        /// # Ok::<(), evendb::Error>(())
        /// ```
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct Stats {
            $( $(#[doc = $cdoc])* pub $counter: u64, )*
            $( $(#[doc = $mdoc])* pub $max: u64, )*
            $( $(#[doc = $tdoc])* pub $total: u64, )*
            $( $(#[doc = $gdoc])* pub $gauge: u64, )*
        }

        /// Every figure's name, kind and help, in declaration order.
        const FIELDS: &[Field] = &[
            $( Field { name: stringify!($counter), kind: Kind::Counter, help: concat!($($cdoc),*) }, )*
            $( Field { name: stringify!($max), kind: Kind::Gauge, help: concat!($($mdoc),*) }, )*
            $( Field { name: stringify!($total), kind: Kind::Counter, help: concat!($($tdoc),*) }, )*
            $( Field { name: stringify!($gauge), kind: Kind::Gauge, help: concat!($($gdoc),*) }, )*
        ];

        impl Stats {
            /// Every figure by name, in a fixed order, for reports and
            /// exporters. The derived figures are not included.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![
                    $( (stringify!($counter), self.$counter), )*
                    $( (stringify!($max), self.$max), )*
                    $( (stringify!($total), self.$total), )*
                    $( (stringify!($gauge), self.$gauge), )*
                ]
            }
        }
    };
}

stats! {
    counters {
        /// Puts completed (deletes not included).
        puts,
        /// Deletes completed.
        deletes,
        /// Write batches committed (their puts and deletes are counted in
        /// `puts` and `deletes` too).
        batches,
        /// Range and prefix deletes.
        range_deletes,
        /// Chunks wholly inside a range delete dropped without reading them
        /// (their files replaced by one empty chunk's).
        chunks_dropped,
        /// Range deletes removed from the manifest once no chunk held a
        /// record they delete.
        range_deletes_retired,
        /// Fsyncs of the `Sync` commit journal (each covers every write
        /// journaled before it).
        journal_syncs,
        /// Journal records (`Sync` puts, deletes and batches) replayed at
        /// open: into the chunk logs, or, by a read-only open, into memory.
        journal_replayed,
        /// `Sync` puts to chunks with munks whose log record was deferred:
        /// journaled, and written to the chunk's log only by the next
        /// checkpoint round (or the munk's eviction or split).
        puts_deferred,
        /// Deferred records written to chunk logs; below `puts_deferred`
        /// when a later put of the key superseded a record first.
        deferred_logged,
        /// Gets that found a batch in progress over their key and read from
        /// a snapshot, waiting for it.
        gets_behind_batch,
        /// Gets served (snapshot gets included).
        gets,
        /// Gets answered from a munk.
        gets_munk,
        /// Gets answered from the row cache.
        gets_row_cache,
        /// Gets answered from a log record on disk.
        gets_log,
        /// Gets answered from a table on disk.
        gets_table,
        /// Gets of munk-less chunks that found nothing.
        gets_absent,
        /// Scans started (snapshot scans included).
        scans,
        /// Chunks scans read from a munk.
        scan_chunks_munk,
        /// Chunks scans read from disk (table and logs).
        scan_chunks_funk,
        /// Key and value bytes of puts and deletes.
        user_bytes_written,
        /// Bytes appended to logs by puts and deletes (headers included).
        log_bytes_written,
        /// Bytes of tables written, by every kind of rebuild.
        table_bytes_written,
        /// Funk rebalances: a chunk's data written as a new table.
        rebalances,
        /// Time spent in funk rebalances, in microseconds.
        rebalance_micros,
        /// Bytes of tables written by funk rebalances.
        rebalance_table_bytes,
        /// Chunk splits (of a chunk with a munk, or of a rebuilt one).
        splits,
        /// Time spent in splits, in microseconds.
        split_micros,
        /// Bytes of tables written by splits.
        split_table_bytes,
        /// Chunk merges.
        merges,
        /// Time spent in merges, in microseconds.
        merge_micros,
        /// Bytes of tables written by merges.
        merge_table_bytes,
        /// Funk rebalances that kept banded logs as they are: the chunk's
        /// puts were diverted to a new segment and no table was written.
        log_adoptions,
        /// Funk rebalances that wrote a munk-less chunk's unsorted log
        /// again in key order (a run, kept like an adopted log) instead of
        /// rewriting the chunk's table.
        log_runs,
        /// Chunks rebuilt into tables because the store had stopped taking
        /// writes and their data lay in several log segments (counted in
        /// `rebalances` too).
        idle_compactions,
        /// Bytes of log files written by those runs: their blocks as
        /// stored, LZ4-compressed where that saved an eighth or more
        /// (`Options::compression`).
        run_bytes_written,
        /// Bytes of log records those runs hold (headers included), before
        /// compression.
        run_record_bytes,
        /// Time spent in all rebuilds that write tables (rebalances, splits, merges), in microseconds.
        rebuild_micros,
        /// Munks loaded from disk.
        munk_loads,
        /// Munks evicted to stay within the memory budget.
        munk_evictions,
        /// Of those, evictions by maintenance that first rebuilt the
        /// chunk's table from the munk, its log being too large to scan.
        munk_evictions_flushed,
        /// Times the row cache gave up its oldest entries for a munk,
        /// being worth much less per byte (recent hits) than the munk.
        row_cache_shrinks,
        /// Munk rebalances (in-memory compactions).
        munk_rebalances,
        /// Time spent in munk rebalances, in microseconds.
        munk_rebalance_micros,
        /// Of that time, the part that held the chunk's `rebalance` lock
        /// (puts to the chunk wait for it), in microseconds.
        munk_rebalance_locked_micros,
        /// Munk rebalances that had to rebuild again under the lock, puts
        /// having added more keys meanwhile than the new munk had room for.
        munk_rebalance_retries,
        /// Log lookups that read records: a segment's directory of sealed
        /// parts with a matching fingerprint, or its open part whose Bloom
        /// filter said maybe.
        log_parts_searched,
        /// Log lookups that ruled the key out without reading: no matching
        /// fingerprint in a directory, or a "no" from an open part's filter.
        log_parts_skipped,
        /// Searched lookups that found no record of the key.
        log_filter_false_positives,
        /// Log segments a get did not look at: every record in them is
        /// older than the version it had already found in a newer one
        /// (empty segments are not counted).
        log_segments_older_skipped,
        /// Puts that waited for a chunk's rebalance lock (held by a munk rebalance, split, divert, eviction or munk load).
        put_lock_waits,
        /// Time puts waited for chunks' rebalance locks, in microseconds.
        put_lock_wait_micros,
        /// Puts that found their chunk's munk full and compacted it themselves.
        put_munk_full_waits,
        /// Time puts spent compacting full munks, in microseconds.
        put_munk_full_wait_micros,
        /// Puts that found the memory budget full and evicted munks to go on.
        put_memory_waits,
        /// Time puts spent making room in the memory budget, in microseconds.
        put_memory_wait_micros,
        /// Puts that waited for their log record to be synced (durability Sync).
        put_sync_waits,
        /// Time puts waited for log syncs, in microseconds.
        put_sync_wait_micros,
        /// Puts slowed down because their chunk's log was far past its limit (maintenance behind).
        put_pace_waits,
        /// Time puts slept while slowed down, in microseconds.
        put_pace_wait_micros,
        /// Times maintenance handed freed memory back to the system.
        memory_trims,
        /// Time those hand-backs took, in microseconds.
        memory_trim_micros,
        /// Maintenance tasks run by the put or get that needed them, because the store has no maintenance threads.
        inline_tasks,
        /// Time spent in maintenance tasks run in line, in microseconds.
        inline_task_micros,
        /// Queued maintenance tasks the urgent thread took besides its
        /// own, the store serving mostly reads (§8).
        helper_tasks,
        /// Time spent in those tasks, in microseconds.
        helper_task_micros,
        /// Bytes cut off torn log tails when funks were opened.
        torn_tail_bytes,
        /// Funks opened (they open lazily, on first use).
        funks_opened,
        /// fsyncs of log segments.
        log_syncs,
        /// Checkpoints recorded (`Buffered` durability).
        checkpoints,
        /// Checkpoint slots found invalid at open (torn at a crash, or
        /// damaged; the other copy was used).
        checkpoint_slots_invalid,
    }
    maxima {
        /// Longest funk rebalance, in microseconds.
        rebalance_max_micros,
        /// Longest split, in microseconds.
        split_max_micros,
        /// Longest merge, in microseconds.
        merge_max_micros,
        /// Longest munk rebalance, in microseconds.
        munk_rebalance_max_micros,
        /// Longest single wait of one put (any cause), in microseconds.
        put_wait_max_micros,
    }
    totals {
        /// Row-cache lookups that found the key.
        row_cache_hits,
        /// Row-cache lookups that missed.
        row_cache_misses,
        /// Bytes written to the `Sync` commit journal (blocks rewritten
        /// and padding included); counted in `write_amplification`.
        journal_bytes_written,
    }
    gauges {
        /// Chunks in the store.
        chunks,
        /// Chunks that have a munk (are held in memory).
        munks,
        /// Range deletes the store keeps (every read checks them): those
        /// not yet reclaimed and retired.
        range_tombstones,
        /// Snapshots and scans holding old versions.
        active_snapshots,
        /// Snapshots and scans held longer than 10 seconds.
        long_lived_snapshots,
        /// Age of the oldest snapshot or scan, in microseconds (0: none).
        oldest_snapshot_age_micros,
        /// The global version minus the oldest held snapshot's version: one more than the snapshots and scans taken since it (0: none).
        oldest_snapshot_lag,
        /// The memory budget (Options::memory_budget).
        memory_budget,
        /// Memory charged to the budget now.
        memory_used,
        /// The most memory charged to the budget at any time.
        memory_peak,
        /// Memory of munks.
        memory_munks,
        /// Memory of the row cache.
        memory_row_cache,
        /// Memory of log directories and open parts' Bloom filters.
        memory_filters,
        /// Memory of table block indexes and sorted log indexes.
        memory_indexes,
        /// Memory of log segments' write buffers (appends not yet written),
        /// and of the journaled writes a read-only open holds in memory.
        memory_write_buffers,
        /// Working memory of background work running now (the logs a rebuild merges).
        memory_background,
        /// Memory of munks when `memory_peak` was reached (likewise the
        /// five below: what took the budget at its peak).
        memory_peak_munks,
        /// Memory of the row cache when `memory_peak` was reached.
        memory_peak_row_cache,
        /// Memory of log directories and filters when `memory_peak` was reached.
        memory_peak_filters,
        /// Memory of indexes when `memory_peak` was reached.
        memory_peak_indexes,
        /// Memory of write buffers when `memory_peak` was reached.
        memory_peak_write_buffers,
        /// Working memory of background work when `memory_peak` was reached.
        memory_peak_background,
        /// Memory of the store's own structures outside the budget's categories, estimated from their sizes when the stats are taken: per chunk its state, key bounds and file list (in the chunk index and the manifest's copy), per open table and log segment its handle. Not charged to the budget; allocator retention is not in it.
        memory_other,
    }
}

/// Snapshots and scans held longer than this count as long-lived.
pub(crate) const LONG_LIVED_SNAPSHOT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// Microseconds since `since`, saturating.
pub(crate) fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Counts one wait of a put: `count` and `total` grow, and the longest put
/// wait is updated.
pub(crate) fn put_waited(c: &Stripe, count: &AtomicU64, total: &AtomicU64, since: Instant) {
    let us = micros(since);
    add(count, 1);
    add(total, us);
    c.put_wait_max_micros.fetch_max(us, Ordering::Relaxed);
}

/// The kinds of work that write tables, for [`rebuilt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebuild {
    Rebalance,
    Split,
    Merge,
}

/// Counts a finished rebuild of `kind` that started at `since` and wrote
/// `table_bytes` of tables.
pub(crate) fn rebuilt(c: &Stripe, kind: Rebuild, since: Instant, table_bytes: u64) {
    let us = micros(since);
    let (count, total, max, bytes) = match kind {
        Rebuild::Rebalance => (
            &c.rebalances,
            &c.rebalance_micros,
            &c.rebalance_max_micros,
            &c.rebalance_table_bytes,
        ),
        Rebuild::Split => (
            &c.splits,
            &c.split_micros,
            &c.split_max_micros,
            &c.split_table_bytes,
        ),
        Rebuild::Merge => (
            &c.merges,
            &c.merge_micros,
            &c.merge_max_micros,
            &c.merge_table_bytes,
        ),
    };
    add(count, 1);
    add(total, us);
    add(bytes, table_bytes);
    max.fetch_max(us, Ordering::Relaxed);
    add(&c.rebuild_micros, us);
}

/// What the Bloom filters of one get's log lookups did; added to the
/// counters once per get.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FilterProbe {
    pub searched: u64,
    pub skipped: u64,
    pub false_positives: u64,
    pub older_skipped: u64,
}

impl FilterProbe {
    pub fn add_to(&self, c: &Stripe) {
        if self.searched != 0 {
            add(&c.log_parts_searched, self.searched);
        }
        if self.skipped != 0 {
            add(&c.log_parts_skipped, self.skipped);
        }
        if self.false_positives != 0 {
            add(&c.log_filter_false_positives, self.false_positives);
        }
        if self.older_skipped != 0 {
            add(&c.log_segments_older_skipped, self.older_skipped);
        }
    }
}

/// Stripes of counters: threads add to their own stripe (each on its own
/// cache lines), so counting never makes two cores fight over a line;
/// reading sums the stripes.
#[derive(Debug)]
pub(crate) struct Counters {
    stripes: Box<[Padded]>,
}

/// A stripe aligned to its own cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(Stripe);

const STRIPES: usize = 16;

impl Default for Counters {
    fn default() -> Self {
        Counters {
            stripes: (0..STRIPES).map(|_| Padded::default()).collect(),
        }
    }
}

thread_local! {
    static STRIPE: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES
    };
}

impl Counters {
    /// The calling thread's stripe.
    pub fn local(&self) -> &Stripe {
        let i = STRIPE.with(|s| *s);
        &self.stripes[i % self.stripes.len()].0
    }

    /// Writes so far (puts, deletes, range deletes), summed over the
    /// stripes: how maintenance tells that the store stopped taking them.
    pub fn writes(&self) -> u64 {
        self.stripes
            .iter()
            .map(|p| {
                let s = &p.0;
                s.puts.load(Ordering::Relaxed)
                    + s.deletes.load(Ordering::Relaxed)
                    + s.range_deletes.load(Ordering::Relaxed)
            })
            .sum()
    }

    /// Reads so far (gets and scans), summed over the stripes: with
    /// [`Counters::writes`], how maintenance tells a store serving mostly
    /// reads.
    pub fn reads(&self) -> u64 {
        self.stripes
            .iter()
            .map(|p| p.0.gets.load(Ordering::Relaxed) + p.0.scans.load(Ordering::Relaxed))
            .sum()
    }

    pub fn snapshot(&self) -> Stats {
        let mut s = Stats::default();
        for p in self.stripes.iter() {
            p.0.add_to(&mut s);
        }
        s
    }
}

/// `part / whole`, or 0 when `whole` is 0.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl Stats {
    /// Engine write amplification so far: bytes the engine wrote (logs,
    /// tables and the `Sync` journal) per user byte. Zero before the first
    /// put.
    pub fn write_amplification(&self) -> f64 {
        ratio(
            self.log_bytes_written + self.table_bytes_written + self.journal_bytes_written,
            self.user_bytes_written,
        )
    }

    /// Table bytes written per user byte: the part of
    /// [`Stats::write_amplification`] due to rebuilds (rebalances, splits,
    /// merges, rebuilds after munk loads).
    pub fn table_write_amplification(&self) -> f64 {
        ratio(self.table_bytes_written, self.user_bytes_written)
    }

    /// Fraction of gets answered from a munk (0 to 1).
    pub fn munk_hit_rate(&self) -> f64 {
        ratio(self.gets_munk, self.gets)
    }

    /// Fraction of row-cache lookups that found the key (0 to 1). Only gets
    /// of chunks without a munk look in the row cache.
    pub fn row_cache_hit_rate(&self) -> f64 {
        ratio(
            self.row_cache_hits,
            self.row_cache_hits + self.row_cache_misses,
        )
    }

    /// Fraction of gets answered from memory, by a munk or the row cache
    /// (0 to 1).
    pub fn memory_hit_rate(&self) -> f64 {
        ratio(self.gets_munk + self.gets_row_cache, self.gets)
    }

    /// Fraction of the chunks scans visited that they read from a munk
    /// (0 to 1).
    pub fn scan_munk_hit_rate(&self) -> f64 {
        ratio(
            self.scan_chunks_munk,
            self.scan_chunks_munk + self.scan_chunks_funk,
        )
    }

    /// Fraction of log parts the Bloom filters let gets skip (0 to 1).
    pub fn log_filter_skip_rate(&self) -> f64 {
        ratio(
            self.log_parts_skipped,
            self.log_parts_skipped + self.log_parts_searched,
        )
    }

    /// False-positive rate of the log parts' Bloom filters: of the parts
    /// that did not hold the key, the fraction whose filter said maybe
    /// (0 to 1).
    pub fn log_filter_false_positive_rate(&self) -> f64 {
        ratio(
            self.log_filter_false_positives,
            self.log_filter_false_positives + self.log_parts_skipped,
        )
    }

    /// Total time puts spent waiting (for locks, full munks, memory, syncs
    /// and pacing), in microseconds.
    pub fn put_wait_micros(&self) -> u64 {
        self.put_lock_wait_micros
            + self.put_munk_full_wait_micros
            + self.put_memory_wait_micros
            + self.put_sync_wait_micros
            + self.put_pace_wait_micros
    }

    /// The derived figures by name, in a fixed order.
    pub fn derived(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("write_amplification", self.write_amplification()),
            (
                "table_write_amplification",
                self.table_write_amplification(),
            ),
            ("munk_hit_rate", self.munk_hit_rate()),
            ("row_cache_hit_rate", self.row_cache_hit_rate()),
            ("memory_hit_rate", self.memory_hit_rate()),
            ("scan_munk_hit_rate", self.scan_munk_hit_rate()),
            ("log_filter_skip_rate", self.log_filter_skip_rate()),
            (
                "log_filter_false_positive_rate",
                self.log_filter_false_positive_rate(),
            ),
        ]
    }
}

/// Help texts of the derived figures, for exporters.
const DERIVED_HELP: &[(&str, &str)] = &[
    (
        "write_amplification",
        "Bytes the engine wrote (logs and tables) per user byte.",
    ),
    (
        "table_write_amplification",
        "Table bytes written by rebuilds per user byte.",
    ),
    ("munk_hit_rate", "Fraction of gets answered from a munk."),
    (
        "row_cache_hit_rate",
        "Fraction of row-cache lookups that found the key.",
    ),
    (
        "memory_hit_rate",
        "Fraction of gets answered from memory (munk or row cache).",
    ),
    (
        "scan_munk_hit_rate",
        "Fraction of the chunks scans visited that they read from a munk.",
    ),
    (
        "log_filter_skip_rate",
        "Fraction of log lookups (directories, open parts) that ruled the key out without reading.",
    ),
    (
        "log_filter_false_positive_rate",
        "Fraction of log lookups without the key that still read records.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_sum_counters_and_take_the_largest_maximum() {
        let c = Counters::default();
        std::thread::scope(|s| {
            for i in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    let l = c.local();
                    add(&l.puts, 10);
                    l.split_max_micros.fetch_max(i * 100, Ordering::Relaxed);
                });
            }
        });
        let s = c.snapshot();
        assert_eq!(s.puts, 40);
        assert_eq!(s.split_max_micros, 300);
    }

    #[test]
    fn rebuilt_counts_time_and_bytes_by_kind() {
        let c = Counters::default();
        let since = Instant::now() - std::time::Duration::from_millis(5);
        rebuilt(c.local(), Rebuild::Merge, since, 4096);
        rebuilt(c.local(), Rebuild::Split, since, 100);
        let s = c.snapshot();
        assert_eq!((s.merges, s.merge_table_bytes), (1, 4096));
        assert_eq!((s.splits, s.split_table_bytes), (1, 100));
        assert!(s.merge_micros >= 5000 && s.merge_max_micros == s.merge_micros);
        assert_eq!(s.rebuild_micros, s.merge_micros + s.split_micros);
        assert_eq!(s.rebalances, 0);
    }

    #[test]
    fn derived_figures_are_zero_without_data_and_ratios_with_it() {
        let s = Stats::default();
        assert!(s.derived().iter().all(|(_, v)| *v == 0.0));
        let s = Stats {
            gets: 10,
            gets_munk: 6,
            gets_row_cache: 2,
            row_cache_hits: 2,
            row_cache_misses: 2,
            log_parts_skipped: 90,
            log_parts_searched: 10,
            log_filter_false_positives: 10,
            user_bytes_written: 100,
            log_bytes_written: 150,
            table_bytes_written: 250,
            ..Stats::default()
        };
        assert_eq!(s.munk_hit_rate(), 0.6);
        assert_eq!(s.memory_hit_rate(), 0.8);
        assert_eq!(s.row_cache_hit_rate(), 0.5);
        assert_eq!(s.log_filter_skip_rate(), 0.9);
        assert_eq!(s.log_filter_false_positive_rate(), 0.1);
        assert_eq!(s.write_amplification(), 4.0);
        assert_eq!(s.table_write_amplification(), 2.5);
    }

    #[test]
    fn every_field_has_help_and_a_unique_name() {
        let s = Stats::default();
        assert_eq!(FIELDS.len(), s.fields().len());
        let mut names = std::collections::HashSet::new();
        for (f, (name, _)) in FIELDS.iter().zip(s.fields()) {
            assert_eq!(f.name, name);
            assert!(!f.help.trim().is_empty(), "{name} has no help");
            assert!(names.insert(name), "{name} twice");
        }
        for (name, _) in s.derived() {
            assert!(DERIVED_HELP.iter().any(|(n, _)| *n == name), "{name}");
        }
    }
}
