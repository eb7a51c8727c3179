//! Read buffers that scans of runs and banded logs hand back when they are
//! done with them, for the next reads of any thread.
//!
//! A reverse scan reads a chunk in several windows, each a new scan of
//! each segment, and a scan reads up to 128 KiB of blocks at a time: a new
//! zeroed buffer for each read (past the allocator's small sizes) cost
//! fresh pages and their return to the system, about a ninth of the
//! stream's newest-first query time at 1 GiB. A window's scan holds a few
//! buffers for each run and banded log of its chunk, so a pool too small
//! for the scans in flight gives little: with four buffers, the stream's
//! queries at 1 GiB ran 1,081-1,255 a second against 1,185-1,422 with
//! buffers kept per thread. The pool is bounded whatever the number of
//! threads: buffers of at most [`MAX_KEPT_BYTES`], [`KEPT_BYTES`] (2 MiB)
//! of them in all, outside the memory budget as fixed overhead
//! (docs/design.md §9).

use parking_lot::Mutex;

/// Bytes of buffers (their capacities) a pool keeps at most.
pub(crate) const KEPT_BYTES: usize = 2 << 20;
/// The largest buffer a pool keeps (a larger one is freed).
pub(crate) const MAX_KEPT_BYTES: usize = 256 << 10;

/// A bounded stack of spare buffers.
#[derive(Debug)]
pub(crate) struct BufferPool {
    /// The buffers, and the sum of their capacities.
    kept: Mutex<(Vec<Vec<u8>>, usize)>,
}

/// The pool of the engine's reads of blocks and banded pieces.
pub(crate) static READS: BufferPool = BufferPool::new();

impl BufferPool {
    pub const fn new() -> Self {
        BufferPool {
            kept: parking_lot::const_mutex((Vec::new(), 0)),
        }
    }

    /// A kept buffer (empty, with its capacity), else a new one.
    pub fn take(&self) -> Vec<u8> {
        let mut buf = self.pop();
        buf.clear();
        buf
    }

    /// A buffer of `len` bytes to read into, whatever they hold: a kept
    /// one keeps the bytes it had, so only growth past them is zeroed (a
    /// read of up to 128 KiB of blocks would otherwise zero all of it).
    pub fn take_len(&self, len: usize) -> Vec<u8> {
        let mut buf = self.pop();
        buf.resize(len, 0);
        buf
    }

    fn pop(&self) -> Vec<u8> {
        let mut kept = self.kept.lock();
        let buf = kept.0.pop().unwrap_or_default();
        kept.1 -= buf.capacity();
        buf
    }

    /// Keeps `buf` (its bytes as they are) for a later
    /// [`take`](Self::take) if it is not too large and the pool has room;
    /// frees it otherwise.
    pub fn give(&self, buf: Vec<u8>) {
        if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock();
        if kept.1 + buf.capacity() <= KEPT_BYTES {
            kept.1 += buf.capacity();
            kept.0.push(buf);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.kept.lock().0.len()
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.kept.lock().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_keeps_a_bounded_number_of_bounded_buffers() {
        let pool = BufferPool::new();
        assert!(
            pool.take().capacity() == 0,
            "an empty pool gives new buffers"
        );
        let mut b = Vec::with_capacity(1000);
        b.extend_from_slice(&[7; 10]);
        let at = b.as_ptr();
        pool.give(b);
        let again = pool.take();
        assert_eq!(again.as_ptr(), at, "the kept buffer comes back");
        assert!(again.is_empty() && again.capacity() >= 1000);
        assert_eq!(pool.bytes(), 0);
        let each = MAX_KEPT_BYTES;
        for _ in 0..KEPT_BYTES / each + 3 {
            pool.give(Vec::with_capacity(each));
        }
        assert!(pool.bytes() <= KEPT_BYTES, "never more than the bound");
        assert!(pool.bytes() + each > KEPT_BYTES, "kept up to the bound");
        let n = pool.len();
        drop(pool.take());
        assert_eq!(pool.len(), n - 1);
        assert!(
            pool.bytes() + 2 * each > KEPT_BYTES,
            "a taken buffer's bytes leave the count"
        );
        pool.give(Vec::with_capacity(each));
        assert_eq!(pool.len(), n, "and make room for another");
        // A buffer to read into comes at the length asked, a kept one
        // reused.
        let pool = BufferPool::new();
        let b = vec![1u8; 100];
        let at = b.as_ptr();
        pool.give(b);
        let read = pool.take_len(40);
        assert_eq!((read.len(), read.as_ptr()), (40, at));
        pool.give(read);
        assert_eq!(pool.take_len(300).len(), 300);
        pool.give(Vec::with_capacity(MAX_KEPT_BYTES + 1));
        pool.give(Vec::new());
        assert_eq!(pool.len(), 0, "too large or empty buffers are not kept");
    }
}
