//! A linearizability checker for registers (one per key), in the manner of
//! Wing and Gong with Lowe's memoization: search for an order of the
//! operations that respects real time (an operation that completed before
//! another was invoked comes first) and the register's semantics (a read
//! returns the last value written). Operations whose outcome is unknown
//! (the client timed out or the connection broke) may take effect at any
//! time after their invocation, or never.

use std::collections::HashSet;

/// One operation on one key, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub kind: Kind,
    /// When the client sent it and when it saw the reply (`None`: no
    /// reply, the outcome unknown). Any monotonic clock.
    pub invoked: u64,
    pub completed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Write(Option<u64>),
    /// A read and the value it returned.
    Read(Option<u64>),
}

/// True if `ops` (all on one register that starts absent) are
/// linearizable. Reads without a reply are dropped (they change nothing).
pub fn check(ops: &[Op]) -> bool {
    let mut ops: Vec<&Op> = ops
        .iter()
        .filter(|o| o.completed.is_some() || matches!(o.kind, Kind::Write(_)))
        .collect();
    ops.sort_by_key(|o| o.invoked);
    let mut done = vec![0u64; ops.len().div_ceil(64)];
    let mut seen = HashSet::new();
    search(&ops, &mut done, None, &mut seen)
}

fn is_done(done: &[u64], i: usize) -> bool {
    done[i / 64] & (1 << (i % 64)) != 0
}

fn search(
    ops: &[&Op],
    done: &mut Vec<u64>,
    value: Option<u64>,
    seen: &mut HashSet<(Vec<u64>, Option<u64>)>,
) -> bool {
    // Finished when every operation with a reply is placed (those without
    // one may never have happened).
    let open: Vec<usize> = (0..ops.len()).filter(|&i| !is_done(done, i)).collect();
    if open.iter().all(|&i| ops[i].completed.is_none()) {
        return true;
    }
    if !seen.insert((done.clone(), value)) {
        return false;
    }
    // An operation may go next if no open operation completed before it
    // was invoked.
    let deadline = open
        .iter()
        .filter_map(|&i| ops[i].completed)
        .min()
        .unwrap_or(u64::MAX);
    for &i in open.iter().take_while(|&&i| ops[i].invoked <= deadline) {
        let next = match &ops[i].kind {
            Kind::Write(v) => *v,
            Kind::Read(v) if *v == value => value,
            Kind::Read(_) => continue,
        };
        done[i / 64] |= 1 << (i % 64);
        let ok = search(ops, done, next, seen);
        done[i / 64] &= !(1 << (i % 64));
        if ok {
            return true;
        }
    }
    false
}

/// Hand-made histories the checker must judge right (run by the cluster
/// test before it trusts the checker).
pub fn self_test() {
    let w = |v: u64, a: u64, b: u64| Op {
        kind: Kind::Write(Some(v)),
        invoked: a,
        completed: Some(b),
    };
    let r = |v: Option<u64>, a: u64, b: u64| Op {
        kind: Kind::Read(v),
        invoked: a,
        completed: Some(b),
    };
    // Sequential and right.
    assert!(check(&[
        w(1, 0, 1),
        r(Some(1), 2, 3),
        w(2, 4, 5),
        r(Some(2), 6, 7)
    ]));
    // A stale read: 2 was written (and acknowledged) before the read began.
    assert!(!check(&[w(1, 0, 1), w(2, 2, 3), r(Some(1), 4, 5)]));
    // A read of a value never written.
    assert!(!check(&[w(1, 0, 1), r(Some(9), 2, 3)]));
    // Reading absent after a completed write.
    assert!(!check(&[w(1, 0, 1), r(None, 2, 3)]));
    // Concurrent write and reads: either order is fine for each read...
    assert!(check(&[w(1, 0, 10), r(None, 1, 2), r(Some(1), 3, 4)]));
    // ...but not going back: once a read saw 1, a later read cannot see
    // absent.
    assert!(!check(&[w(1, 0, 10), r(Some(1), 1, 2), r(None, 3, 4)]));
    // A write without a reply may have happened...
    let lost = Op {
        kind: Kind::Write(Some(5)),
        invoked: 0,
        completed: None,
    };
    assert!(check(&[lost.clone(), r(Some(5), 10, 11)]));
    // ...or not.
    assert!(check(&[lost.clone(), r(None, 10, 11)]));
    // But it cannot be seen and then unseen.
    assert!(!check(&[lost, r(Some(5), 10, 11), r(None, 12, 13)]));
}
