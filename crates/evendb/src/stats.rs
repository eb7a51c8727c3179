//! Counters the engine keeps, and the public [`Stats`] view of them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Declares the engine's counters once: the atomic set, the public view,
/// and the by-name list, so the three never drift apart.
macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// One thread's share of the counters (see [`Counters`]).
        #[derive(Debug, Default)]
        pub(crate) struct Stripe {
            $( pub $name: AtomicU64, )*
        }

        impl Stripe {
            fn add_to(&self, s: &mut Stats) {
                $( s.$name += self.$name.load(Ordering::Relaxed); )*
            }
        }

        /// A point-in-time view of the store's counters, memory and state.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct Stats {
            $( $(#[$doc])* pub $name: u64, )*
            /// Chunks in the store.
            pub chunks: u64,
            /// Chunks that have a munk (are held in memory).
            pub munks: u64,
            /// Snapshots and scans holding old versions.
            pub active_snapshots: u64,
            /// The memory budget ([`Options::memory_budget`](crate::Options::memory_budget)).
            pub memory_budget: u64,
            /// Memory charged to the budget now.
            pub memory_used: u64,
            /// The most memory charged to the budget at any time.
            pub memory_peak: u64,
            /// Memory of munks.
            pub memory_munks: u64,
            /// Memory of the row cache.
            pub memory_row_cache: u64,
            /// Memory of Bloom filters over log parts.
            pub memory_filters: u64,
            /// Memory of table block indexes.
            pub memory_indexes: u64,
            /// Gets answered by the row cache.
            pub row_cache_hits: u64,
            /// Row-cache lookups that missed.
            pub row_cache_misses: u64,
        }

        impl Stats {
            /// Every figure by name, for reports and exporters.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![
                    $( (stringify!($name), self.$name), )*
                    ("chunks", self.chunks),
                    ("munks", self.munks),
                    ("active_snapshots", self.active_snapshots),
                    ("memory_budget", self.memory_budget),
                    ("memory_used", self.memory_used),
                    ("memory_peak", self.memory_peak),
                    ("memory_munks", self.memory_munks),
                    ("memory_row_cache", self.memory_row_cache),
                    ("memory_filters", self.memory_filters),
                    ("memory_indexes", self.memory_indexes),
                    ("row_cache_hits", self.row_cache_hits),
                    ("row_cache_misses", self.row_cache_misses),
                ]
            }
        }
    };
}

counters! {
    /// Puts completed (deletes not included).
    puts,
    /// Deletes completed.
    deletes,
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
    /// Scans started.
    scans,
    /// Chunks scans read from a munk.
    scan_chunks_munk,
    /// Chunks scans read from disk (table and logs).
    scan_chunks_funk,
    /// Key and value bytes of puts and deletes.
    user_bytes_written,
    /// Bytes appended to logs by puts and deletes (headers included).
    log_bytes_written,
    /// Bytes of tables written by rebalances, splits and merges.
    table_bytes_written,
    /// Funk rebalances (a chunk's data written as a new table).
    rebalances,
    /// Chunk splits.
    splits,
    /// Chunk merges.
    merges,
    /// Time spent in funk rebalances, splits and merges, in microseconds.
    rebuild_micros,
    /// Munks loaded from disk.
    munk_loads,
    /// Munks evicted to stay within the memory budget.
    munk_evictions,
    /// Munk rebalances (in-memory compactions).
    munk_rebalances,
    /// Bytes cut off torn log tails when funks were opened.
    torn_tail_bytes,
    /// Funks opened (they open lazily, on first use).
    funks_opened,
    /// fsyncs of log segments.
    log_syncs,
    /// Checkpoints recorded (`Buffered` durability).
    checkpoints,
    /// Checkpoint slots found invalid at open (torn at a crash, or damaged;
    /// the other copy was used).
    checkpoint_slots_invalid,
}

pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
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
}

impl Stats {
    /// Engine write amplification so far: bytes the engine wrote (logs and
    /// tables) per user byte. Zero before the first put.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.log_bytes_written + self.table_bytes_written) as f64 / self.user_bytes_written as f64
    }
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let mut s = Stats::default();
        for p in self.stripes.iter() {
            p.0.add_to(&mut s);
        }
        s
    }
}
