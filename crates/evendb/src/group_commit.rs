//! Group commit, shared by chunk logs and the `Sync` commit journal: the
//! mark a file is known durable up to, and the protocol that makes many
//! writers share one fsync.
//!
//! One thread syncs at a time, with no lock held; the others wait, each
//! parked on its own, in arrival order. When a sync ends, the thread that
//! made it wakes exactly the waiters it covered, which return, and the
//! first waiter it did not cover, which syncs everything written
//! meanwhile for all the rest. (Waiters handed a mutex one at a time, each
//! woken in turn, let a sync cover 1.8 puts of eight writers; all waiters
//! woken together on a condition variable, those not covered going back
//! to sleep, spent 28% of the CPU time of 32 writers switching threads.)
//! A failed sync is sticky: a failed fsync may have dropped the dirty
//! pages it reported, so a later one succeeding would prove nothing.

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::Thread;

/// A durable mark and the syncs that advance it.
#[derive(Debug)]
pub(crate) struct GroupCommit<M> {
    state: Mutex<State<M>>,
}

#[derive(Debug)]
struct State<M> {
    mark: M,
    /// A thread is syncing.
    busy: bool,
    /// A sync failed: every later one fails too.
    failed: bool,
    /// Threads waiting for a sync, in arrival order, with the mark each
    /// needs.
    waiters: Vec<(M, Arc<Waiter>)>,
}

#[derive(Debug)]
struct Waiter {
    thread: Thread,
    woken: AtomicBool,
}

impl<M: Copy + Ord> GroupCommit<M> {
    pub fn new(mark: M) -> Self {
        GroupCommit {
            state: Mutex::new(State {
                mark,
                busy: false,
                failed: false,
                waiters: Vec::new(),
            }),
        }
    }

    /// The mark known durable.
    pub fn mark(&self) -> M {
        self.state.lock().mark
    }

    /// Sets the mark (a file opened, as its last checkpoint recorded it).
    pub fn set_mark(&self, mark: M) {
        self.state.lock().mark = mark;
    }

    /// Returns `None` at once if the mark is at least `want`; else waits
    /// for the thread syncing, if any, and either returns `None` (it
    /// covered this caller) or runs `sync` itself: `sync` writes and
    /// fsyncs what is pending and returns the mark it made durable, which
    /// is returned. After any failure every call fails with `failed()`.
    pub fn commit(
        &self,
        want: M,
        sync: impl FnOnce() -> Result<M>,
        failed: impl Fn() -> Error,
    ) -> Result<Option<M>> {
        let mut s = self.state.lock();
        loop {
            if s.mark >= want {
                return Ok(None);
            }
            if s.failed {
                return Err(failed());
            }
            if !s.busy {
                break;
            }
            let me = Arc::new(Waiter {
                thread: std::thread::current(),
                woken: AtomicBool::new(false),
            });
            s.waiters.push((want, me.clone()));
            drop(s);
            // An unpark before this park makes it return at once.
            while !me.woken.load(Ordering::Acquire) {
                std::thread::park();
            }
            s = self.state.lock();
        }
        s.busy = true;
        drop(s);
        // A panic in `sync` fails the mark too, so the waiters return
        // rather than wait for a sync that never ends.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(sync));
        let mut s = self.state.lock();
        s.busy = false;
        let synced = match outcome {
            Ok(synced) => synced,
            Err(panic) => {
                s.failed = true;
                self.wake(s);
                std::panic::resume_unwind(panic);
            }
        };
        match &synced {
            Ok(mark) => s.mark = s.mark.max(*mark),
            Err(_) => s.failed = true,
        }
        self.wake(s);
        synced.map(Some)
    }

    /// At the end of a sync: wakes the waiters it covered (all, after a
    /// failure) and the first one it did not, to sync next.
    fn wake(&self, mut s: parking_lot::MutexGuard<'_, State<M>>) {
        let (mark, failed_now) = (s.mark, s.failed);
        let mut next = false;
        let mut wake = Vec::new();
        s.waiters.retain(|(w, waiter)| {
            let covered = *w <= mark || failed_now;
            let go = covered || !next;
            next |= !covered;
            if go {
                wake.push(waiter.clone());
            }
            !go
        });
        drop(s);
        for w in wake {
            w.woken.store(true, Ordering::Release);
            w.thread.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn covered_callers_return_and_a_failure_is_sticky() {
        let g = GroupCommit::new(0u64);
        let err = || Error::InvalidArgument("failed before".into());
        assert_eq!(g.commit(5, || Ok(7), err).unwrap(), Some(7));
        assert_eq!(g.commit(6, || Ok(99), err).unwrap(), None);
        assert!(g
            .commit(8, || Err(Error::InvalidArgument("io".into())), err)
            .is_err());
        // Even a sync that would succeed now is refused.
        assert!(g.commit(8, || Ok(9), err).is_err());
        assert_eq!(g.mark(), 7);
    }

    #[test]
    fn a_panic_in_a_sync_fails_the_waiters_instead_of_leaving_them_parked() {
        let g = Arc::new(GroupCommit::new(0u64));
        let err = || Error::InvalidArgument("failed before".into());
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let syncer = {
            let g = g.clone();
            std::thread::spawn(move || {
                g.commit(
                    1,
                    || {
                        started_tx.send(()).unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        panic!("sync panicked");
                    },
                    err,
                )
            })
        };
        started_rx.recv().unwrap();
        // Waits behind the panicking sync, then fails.
        assert!(g.commit(2, || Ok(2), err).is_err());
        assert!(syncer.join().is_err(), "the panic reaches its caller");
    }

    #[test]
    fn concurrent_callers_share_syncs() {
        let g = Arc::new(GroupCommit::new(0u64));
        let written = Arc::new(AtomicU64::new(0));
        let syncs = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (g, written, syncs) = (&g, &written, &syncs);
                s.spawn(move || {
                    for _ in 0..50 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        let err = || Error::InvalidArgument("x".into());
                        g.commit(
                            mine,
                            || {
                                syncs.fetch_add(1, Ordering::SeqCst);
                                let upto = written.load(Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_millis(1));
                                Ok(upto)
                            },
                            err,
                        )
                        .unwrap();
                        assert!(g.mark() >= mine, "returned before its record was covered");
                    }
                });
            }
        });
        assert_eq!(g.mark(), 400);
        let n = syncs.load(Ordering::SeqCst);
        assert!(n * 2 <= 400, "{n} syncs for 400 commits");
    }
}
