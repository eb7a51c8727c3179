//! The synchronization primitives of the concurrency kernels: the
//! pending-operations array with the global version (`version`), and the
//! replacement of chunks in the index (`chunk::lineage`).
//!
//! A normal build re-exports `std` atomics, `parking_lot` locks, `OnceLock`
//! and `ArcSwap` unchanged: the kernels cost exactly what they would with
//! direct imports. Built with `--cfg loom`, the same names are the `loom`
//! model checker's instrumented types, so its tests
//! (`RUSTFLAGS="--cfg loom" cargo test -p evendb --release --lib loom_`)
//! run the production code of the kernels under the interleavings and
//! weak-memory reorderings loom explores. Only the names the kernels use are
//! here; `Arc` stays `std` (reference counts are not part of any protocol
//! checked).
//!
//! Two stand-ins under loom, which has no model of them:
//! - [`OnceLock`]: the value sits in a `std` cell; `get` returns it only
//!   after an `Acquire` load of a ready flag that `set` stores with
//!   `Release` after writing it, which is the publication `std`'s
//!   `OnceLock` guarantees, so a reader that misses the flag sees `None`.
//! - [`ArcSwap`]: an `Arc` behind a loom mutex. `ArcSwap` loads and stores
//!   are linearizable with acquire/release; the mutex gives that, plus a
//!   happens-before edge from a reader to the next writer that the kernels'
//!   readers never rely on (they write nothing shared).

#[cfg(not(loom))]
mod imp {
    pub(crate) use arc_swap::ArcSwap;
    pub(crate) use parking_lot::{Mutex, RwLock};
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    pub(crate) use std::sync::OnceLock;
    pub(crate) use std::thread::yield_now;
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    use loom::sync::MutexGuard;
    use loom::sync::{RwLockReadGuard, RwLockWriteGuard};
    pub(crate) use loom::thread::yield_now;
    use std::sync::Arc;

    /// `parking_lot::Mutex`'s interface over loom's mutex.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("a model thread panicked")
        }
    }

    /// `parking_lot::RwLock`'s interface over loom's lock.
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            RwLock(loom::sync::RwLock::new(value))
        }

        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().expect("a model thread panicked")
        }

        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().expect("a model thread panicked")
        }
    }

    /// `std::sync::OnceLock` as its publication (see the module doc).
    #[derive(Debug)]
    pub(crate) struct OnceLock<T> {
        value: std::sync::OnceLock<T>,
        ready: AtomicBool,
    }

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            OnceLock {
                value: std::sync::OnceLock::new(),
                ready: AtomicBool::new(false),
            }
        }

        pub(crate) fn get(&self) -> Option<&T> {
            if self.ready.load(Ordering::Acquire) {
                self.value.get()
            } else {
                None
            }
        }

        pub(crate) fn set(&self, value: T) -> Result<(), T> {
            self.value.set(value)?;
            self.ready.store(true, Ordering::Release);
            Ok(())
        }
    }

    /// `arc_swap::ArcSwap`'s interface over a loom mutex (see the module
    /// doc). `load` hands out the `Arc` itself where `ArcSwap` hands out a
    /// guard that dereferences to it.
    #[derive(Debug)]
    pub(crate) struct ArcSwap<T>(Mutex<Arc<T>>);

    impl<T> ArcSwap<T> {
        pub(crate) fn from_pointee(value: T) -> Self {
            ArcSwap(Mutex::new(Arc::new(value)))
        }

        pub(crate) fn load(&self) -> Arc<T> {
            self.load_full()
        }

        pub(crate) fn load_full(&self) -> Arc<T> {
            self.0.lock().clone()
        }

        pub(crate) fn store(&self, value: Arc<T>) {
            *self.0.lock() = value;
        }
    }
}

pub(crate) use imp::*;

/// The preemption bound of the larger models (three threads, or one
/// thread doing two operations). Each step up multiplies their executions
/// by about eight: 4 runs them in seconds, 5 in about a minute (a million
/// executions each). Exhaustively, two puts in a row against a scan take
/// 0.93 million executions, two splits and a scan 0.85 million, and two
/// puts and a scan did not end in twenty minutes. The smallest models run
/// unbounded (exhaustive).
#[cfg(all(test, loom))]
pub(crate) const PREEMPTION_BOUND: Option<usize> = Some(4);

/// Runs `f` under the model checker in every execution it explores
/// (with at most `preemptions` preemptions per execution unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise), and prints how many there were.
#[cfg(all(test, loom))]
pub(crate) fn model(name: &str, preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemptions;
    }
    let bound = builder.preemption_bound;
    let started = std::time::Instant::now();
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "{name}: {} executions (preemption bound {bound:?}) in {:.1?}",
        runs.load(Ordering::Relaxed),
        started.elapsed()
    );
}
