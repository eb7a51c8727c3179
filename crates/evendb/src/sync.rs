//! The synchronization primitives of the concurrency kernels: the
//! pending-operations array with the global version (`version`).
//!
//! A normal build re-exports `std` atomics and `parking_lot` locks
//! unchanged: the kernels cost exactly what they would with direct
//! imports. Built with `--cfg loom`, the same names are the `loom`
//! model checker's instrumented types, so its tests
//! (`RUSTFLAGS="--cfg loom" cargo test -p evendb --release --lib loom_`)
//! run the production code of the kernels under the interleavings and
//! weak-memory reorderings loom explores. Only the names the kernels use are
//! here.

#[cfg(not(loom))]
mod imp {
    pub(crate) use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    pub(crate) use std::thread::yield_now;
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    use loom::sync::MutexGuard;
    pub(crate) use loom::sync::{RwLockReadGuard, RwLockWriteGuard};
    pub(crate) use loom::thread::yield_now;

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

        /// Loom's lock has no writer preference, so a recursive read is a
        /// plain read.
        pub(crate) fn read_recursive(&self) -> RwLockReadGuard<'_, T> {
            self.read()
        }

        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().expect("a model thread panicked")
        }
    }
}

pub(crate) use imp::*;

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
