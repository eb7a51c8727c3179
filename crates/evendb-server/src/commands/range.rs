//! Ordered reads and range deletes, which Redis lacks:
//!
//! - `RANGE start end [LIMIT n] [REV]`
//! - `PREFIX p [LIMIT n] [REV] [CURSOR c]`
//! - `DELRANGE start end`, `DELPREFIX p`
//!
//! Bounds are written as in Redis's `ZRANGEBYLEX`: `[key` includes the key,
//! `(key` excludes it, `-` and `+` are the ends of the key space.
//!
//! A read answers a two-element array: a cursor, then the pairs found as a
//! flat array `key, value, key, value, ...` (newest-first with `REV`). The
//! cursor is empty when the range is exhausted; otherwise it is a bound
//! (`(lastkey`) that continues the read: the next `start` of a forward
//! `RANGE`, the next `end` of a reverse one, or `CURSOR` of a `PREFIX`. A
//! read stops at `LIMIT` pairs (default [`DEFAULT_LIMIT`], at most
//! [`MAX_LIMIT`]) or once its reply passes [`RANGE_REPLY_BYTES`], whichever
//! comes first; each read is one snapshot of the store.

use super::{count, syntax, wrong_args, After, Failed, Reply};
use crate::resp::Out;
use crate::state::Shared;
use std::ops::Bound;

/// Pairs a read returns without `LIMIT`.
pub const DEFAULT_LIMIT: u64 = 1000;
/// The largest `LIMIT`.
pub const MAX_LIMIT: u64 = 100_000;
/// Reply bytes after which a read stops early (its cursor goes on).
pub const RANGE_REPLY_BYTES: usize = 4 << 20;

/// A `ZRANGEBYLEX`-style bound; `None` for `-` (low end) or `+` (high end)
/// where `low` says which end is meant. `+` as a low bound or `-` as a high
/// one make the range empty (`Some(Excluded(max))` / an empty marker).
fn bound(arg: &[u8], low: bool) -> Result<Option<Bound<Vec<u8>>>, Failed> {
    match arg.first() {
        Some(b'[') => Ok(Some(Bound::Included(arg[1..].to_vec()))),
        Some(b'(') => Ok(Some(Bound::Excluded(arg[1..].to_vec()))),
        Some(b'-') if arg.len() == 1 => Ok(if low { Some(Bound::Unbounded) } else { None }),
        Some(b'+') if arg.len() == 1 => Ok(if low { None } else { Some(Bound::Unbounded) }),
        _ => Err(Failed(
            "ERR min or max not valid string range item (use [key, (key, - or +)".into(),
        )),
    }
}

/// `LIMIT n`, `REV` and (for `PREFIX`) `CURSOR c`.
struct ReadOptions {
    limit: u64,
    rev: bool,
    cursor: Option<Vec<u8>>,
}

fn options(mut args: &[Vec<u8>], cursor_allowed: bool) -> Result<ReadOptions, Failed> {
    let mut o = ReadOptions {
        limit: DEFAULT_LIMIT,
        rev: false,
        cursor: None,
    };
    while let Some(a) = args.first() {
        let a = a.to_ascii_lowercase();
        if a == b"rev" {
            o.rev = true;
            args = &args[1..];
        } else if a == b"limit" && args.len() >= 2 {
            o.limit = count(&args[1])?;
            if o.limit == 0 || o.limit > MAX_LIMIT {
                return Err(Failed(format!("ERR LIMIT must be from 1 to {MAX_LIMIT}")));
            }
            args = &args[2..];
        } else if a == b"cursor" && cursor_allowed && args.len() >= 2 {
            o.cursor = Some(args[1].clone());
            args = &args[2..];
        } else {
            return Err(syntax());
        }
    }
    Ok(o)
}

type Pair = (Vec<u8>, Vec<u8>);

/// True if no key lies between `lo` and `hi`.
fn is_empty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    }
}

/// Writes the reply of a read of `(lo, hi)`.
fn read(
    shared: &Shared,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    o: &ReadOptions,
    out: &mut Out,
) -> Reply {
    let hi = match (&shared.cluster, hi) {
        (Some(_), hi) => tighter_hi(
            hi,
            Bound::Excluded(crate::cluster::RESERVED_PREFIX.to_vec()),
        ),
        (None, hi) => hi,
    };
    let empty = is_empty(&lo, &hi);
    let mut pairs: Vec<Pair> = Vec::new();
    let mut more = false;
    if !empty {
        let scan = shared.db().scan((lo, hi));
        let mut iter: Box<dyn Iterator<Item = evendb::Result<Pair>>> = if o.rev {
            Box::new(scan.rev())
        } else {
            Box::new(scan)
        };
        let mut bytes = 0;
        for pair in iter.by_ref() {
            let (k, v) = pair?;
            bytes += k.len() + v.len() + 32;
            pairs.push((k, v));
            if pairs.len() as u64 >= o.limit || bytes >= RANGE_REPLY_BYTES {
                break;
            }
        }
        let full = pairs.len() as u64 >= o.limit || bytes >= RANGE_REPLY_BYTES;
        more = full && iter.next().transpose()?.is_some();
    }
    out.array(2);
    match pairs.last().filter(|_| more) {
        Some((k, _)) => {
            let mut c = Vec::with_capacity(k.len() + 1);
            c.push(b'(');
            c.extend_from_slice(k);
            out.bulk(&c);
        }
        None => out.bulk(b""),
    }
    out.array(pairs.len() * 2);
    for (k, v) in &pairs {
        out.bulk(k);
        out.bulk(v);
    }
    Ok(After::Continue)
}

/// An empty read's reply.
fn nothing(out: &mut Out) -> Reply {
    out.array(2);
    out.bulk(b"");
    out.array(0);
    Ok(After::Continue)
}

pub(super) fn range(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [start, end, rest @ ..] = args else {
        return Err(wrong_args("range"));
    };
    let o = options(rest, false)?;
    match (bound(start, true)?, bound(end, false)?) {
        (Some(lo), Some(hi)) => read(shared, lo, hi, &o, out),
        _ => nothing(out),
    }
}

pub(super) fn prefix(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [p, rest @ ..] = args else {
        return Err(wrong_args("prefix"));
    };
    let o = options(rest, true)?;
    let mut lo = Bound::Included(p.clone());
    let mut hi = evendb::prefix_end(p).map_or(Bound::Unbounded, Bound::Excluded);
    if let Some(c) = &o.cursor {
        // The cursor narrows the prefix's range from the side read so far.
        match bound(c, !o.rev)? {
            Some(b) if o.rev => hi = tighter_hi(hi, b),
            Some(b) => lo = tighter_lo(lo, b),
            None => return nothing(out),
        }
    }
    read(shared, lo, hi, &o, out)
}

fn key_of(b: &Bound<Vec<u8>>) -> Option<&Vec<u8>> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    }
}

fn tighter_lo(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (key_of(&a), key_of(&b)) {
        (_, None) => a,
        (None, _) => b,
        (Some(x), Some(y)) if y > x || (y == x && matches!(b, Bound::Excluded(_))) => b,
        _ => a,
    }
}

fn tighter_hi(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (key_of(&a), key_of(&b)) {
        (_, None) => a,
        (None, _) => b,
        (Some(x), Some(y)) if y < x || (y == x && matches!(b, Bound::Excluded(_))) => b,
        _ => a,
    }
}

/// `DELRANGE start end`: every key in the range, atomically.
pub(super) fn delrange(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [start, end] = args else {
        return Err(wrong_args("delrange"));
    };
    if let (Some(lo), Some(hi)) = (bound(start, true)?, bound(end, false)?) {
        if is_empty(&lo, &hi) {
            out.simple("OK");
            return Ok(After::Continue);
        }
        delete(shared, lo, hi)?;
    }
    out.simple("OK");
    Ok(After::Continue)
}

/// Deletes `(lo, hi)`: through the leader in a cluster, else here.
fn delete(shared: &Shared, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Result<(), Failed> {
    if let Some(c) = &shared.cluster {
        let (lo, lo_excluded) = match lo {
            Bound::Included(k) => (k, false),
            Bound::Excluded(k) => (k, true),
            Bound::Unbounded => (Vec::new(), false),
        };
        let (hi, hi_included) = match hi {
            Bound::Included(k) => (Some(k), true),
            Bound::Excluded(k) => (Some(k), false),
            Bound::Unbounded => (None, false),
        };
        let req = crate::cluster::Request::DelRange {
            lo,
            lo_excluded,
            hi,
            hi_included,
        };
        return super::block_on(c.write(req))
            .map(drop)
            .map_err(|e| Failed(e.reply()));
    }
    let _all = shared.locks.everything();
    shared.db().delete_range((lo, hi))?;
    Ok(())
}

/// `DELPREFIX p`: every key starting with `p`, atomically.
pub(super) fn delprefix(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [p] = args else {
        return Err(wrong_args("delprefix"));
    };
    let hi = evendb::prefix_end(p).map_or(Bound::Unbounded, Bound::Excluded);
    delete(shared, Bound::Included(p.clone()), hi)?;
    out.simple("OK");
    Ok(After::Continue)
}
