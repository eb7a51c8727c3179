//! A linearizability checker for registers (one per key), in the manner of
//! Wing and Gong with Lowe's memoization: search for an order of the
//! operations that respects real time (an operation that completed before
//! another was invoked comes first) and the register's semantics (a read
//! returns the last value written; a conditional write writes only if its
//! condition holds then, and its reply says whether it did). Operations whose outcome is unknown
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

/// An operation on a register and, where the reply tells it, what it saw.
/// In the conditional ones, `None` is an outcome not known (no reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `SET` (or a delete, with `None`, whose count is not looked at).
    Write(Option<u64>),
    /// A read and the value it returned.
    Read(Option<u64>),
    /// `SET k v NX`: whether it wrote (the register was absent).
    SetIfAbsent(u64, Option<bool>),
    /// `SET k v XX`: whether it wrote (the register was present).
    SetIfPresent(u64, Option<bool>),
    /// `SET k v GET`: writes `v` and returns the value before.
    Swap(u64, Option<Option<u64>>),
    /// `DEL k`: whether the register was present.
    Delete(Option<bool>),
}

impl Kind {
    /// The register after this operation, if it can take effect on
    /// `value` and answer what it answered; `None` if it cannot.
    fn step(&self, value: Option<u64>) -> Option<Option<u64>> {
        let present = value.is_some();
        // A conditional write that wrote when `cond` held, else left it.
        let cond = |cond: bool, wrote: Option<bool>, v: u64| match wrote {
            Some(w) if w != cond => None,
            _ if cond => Some(Some(v)),
            _ => Some(value),
        };
        match *self {
            Kind::Write(v) => Some(v),
            Kind::Read(v) => (v == value).then_some(value),
            Kind::SetIfAbsent(v, wrote) => cond(!present, wrote, v),
            Kind::SetIfPresent(v, wrote) => cond(present, wrote, v),
            Kind::Swap(v, old) => old.is_none_or(|o| o == value).then_some(Some(v)),
            Kind::Delete(existed) => existed.is_none_or(|e| e == present).then_some(None),
        }
    }

    /// True if the operation cannot change the register (a read).
    fn reads_only(&self) -> bool {
        matches!(self, Kind::Read(_))
    }
}

/// True if `ops` (all on one register that starts absent) are
/// linearizable. Reads without a reply are dropped (they change nothing).
pub fn check(ops: &[Op]) -> bool {
    let mut ops: Vec<&Op> = ops
        .iter()
        .filter(|o| o.completed.is_some() || !o.kind.reads_only())
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
        let Some(next) = ops[i].kind.step(value) else {
            continue;
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

    // Compare-and-set: SET NX, SET XX, SET ... GET and DEL.
    let op = |kind: Kind, a: u64, b: u64| Op {
        kind,
        invoked: a,
        completed: Some(b),
    };
    let nx = |v: u64, wrote: bool, a: u64, b: u64| op(Kind::SetIfAbsent(v, Some(wrote)), a, b);
    let xx = |v: u64, wrote: bool, a: u64, b: u64| op(Kind::SetIfPresent(v, Some(wrote)), a, b);
    let swap = |v: u64, old: Option<u64>, a: u64, b: u64| op(Kind::Swap(v, Some(old)), a, b);
    let del = |existed: bool, a: u64, b: u64| op(Kind::Delete(Some(existed)), a, b);
    // Right, in sequence.
    assert!(check(&[
        nx(1, true, 0, 1),
        nx(2, false, 2, 3),
        xx(3, true, 4, 5),
        swap(4, Some(3), 6, 7),
        del(true, 8, 9),
        xx(5, false, 10, 11),
        swap(6, None, 12, 13),
        r(Some(6), 14, 15),
    ]));
    // Two concurrent NX on an absent register: one wins, either one.
    assert!(check(&[
        nx(1, true, 0, 10),
        nx(2, false, 1, 9),
        r(Some(1), 11, 12)
    ]));
    assert!(check(&[
        nx(1, false, 0, 10),
        nx(2, true, 1, 9),
        r(Some(2), 11, 12)
    ]));
    // Both winning is not linearizable...
    assert!(!check(&[nx(1, true, 0, 10), nx(2, true, 1, 9)]));
    // ...nor an NX that wrote over a completed write...
    assert!(!check(&[w(1, 0, 1), nx(2, true, 2, 3)]));
    // ...nor one that failed on a register never written...
    assert!(!check(&[nx(2, false, 0, 1)]));
    // ...nor a write that NX made and a read did not see.
    assert!(!check(&[nx(2, true, 0, 1), r(None, 2, 3)]));
    // XX that wrote an absent register, or failed on a present one.
    assert!(!check(&[xx(1, true, 0, 1)]));
    assert!(!check(&[w(1, 0, 1), xx(2, false, 2, 3)]));
    // A lost update: two swaps cannot both replace the same value.
    assert!(check(&[
        w(1, 0, 1),
        swap(2, Some(1), 2, 10),
        swap(3, Some(2), 3, 9)
    ]));
    assert!(!check(&[
        w(1, 0, 1),
        swap(2, Some(1), 2, 10),
        swap(3, Some(1), 3, 9)
    ]));
    // A swap that returns a value already overwritten.
    assert!(!check(&[w(1, 0, 1), w(2, 2, 3), swap(3, Some(1), 4, 5)]));
    // DEL that found a register never written, or missed one written.
    assert!(!check(&[del(true, 0, 1)]));
    assert!(!check(&[w(1, 0, 1), del(false, 2, 3)]));
    // After a DEL, NX writes again; a read of the old value is stale.
    assert!(check(&[w(1, 0, 1), del(true, 2, 3), nx(2, true, 4, 5)]));
    assert!(!check(&[w(1, 0, 1), del(true, 2, 3), r(Some(1), 4, 5)]));
    // An NX without a reply may have written, if the register was absent
    // when it took effect...
    let lost_nx = |invoked: u64| Op {
        kind: Kind::SetIfAbsent(7, None),
        invoked,
        completed: None,
    };
    assert!(check(&[lost_nx(0), r(Some(7), 10, 11)]));
    // ...but not over a value written before it was sent.
    assert!(!check(&[w(1, 0, 1), lost_nx(2), r(Some(7), 10, 11)]));
}
