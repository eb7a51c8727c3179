//! Chunks: contiguous key ranges that partition the key space, and the
//! sorted list that indexes them.
//!
//! Invariants:
//! - The list (`ChunkList`) is immutable once built; a split or merge builds
//!   a new one and swaps it in under the db's list lock. The first chunk's
//!   `min_key` is empty, so every key has a chunk.
//! - A chunk's `state` is locked exclusively by puts (one append at a time)
//!   and by a rebuild's short swap; shared by gets and scans.
//! - `retired` is set, under `state`'s write lock, when a split or merge has
//!   replaced the chunk. Whoever locks a retired chunk drops it and looks the
//!   key up again; its data is still intact for readers that got in first.
//! - `rebuilding` is held by the one thread rebuilding the chunk's funk;
//!   others `try_lock` it and leave the work to that thread.

use crate::funk::{Funk, FunkFiles};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct ChunkState {
    /// The files as last published in the manifest.
    pub files: FunkFiles,
    /// The open funk; `None` until first used (opening is lazy).
    pub funk: Option<Funk>,
    /// Counter for the next put; valid once the funk is open.
    pub next_counter: u64,
    /// While a rebuild runs: log segments before this index are frozen.
    pub frozen: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct Chunk {
    pub id: u64,
    pub min_key: Vec<u8>,
    pub state: RwLock<ChunkState>,
    pub rebuilding: Arc<Mutex<()>>,
    pub retired: AtomicBool,
    /// Set while the chunk waits in the maintenance queue.
    pub queued: AtomicBool,
}

impl Chunk {
    pub fn new(
        id: u64,
        min_key: Vec<u8>,
        files: FunkFiles,
        funk: Option<Funk>,
        next_counter: u64,
    ) -> Self {
        Chunk {
            id,
            min_key,
            state: RwLock::new(ChunkState {
                files,
                funk,
                next_counter,
                frozen: None,
            }),
            rebuilding: Arc::new(Mutex::new(())),
            retired: AtomicBool::new(false),
            queued: AtomicBool::new(false),
        }
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }
}

/// The chunks in key order.
#[derive(Debug, Default)]
pub(crate) struct ChunkList {
    pub chunks: Vec<Arc<Chunk>>,
}

impl ChunkList {
    /// Position of the chunk whose range holds `key`.
    pub fn position(&self, key: &[u8]) -> usize {
        self.chunks
            .partition_point(|c| c.min_key.as_slice() <= key)
            .saturating_sub(1)
    }

    /// The chunk holding `key` and the exclusive upper bound of its range.
    pub fn find(&self, key: &[u8]) -> Option<(Arc<Chunk>, Option<Vec<u8>>)> {
        let i = self.position(key);
        let chunk = self.chunks.get(i)?.clone();
        let upper = self.chunks.get(i + 1).map(|c| c.min_key.clone());
        Some((chunk, upper))
    }
}
