//! `get`, `put`, `delete`, `delete-range`, `scan`.

use super::{stdout_failed, Context};
use crate::failure::{exit, Failure, Outcome};
use crate::store::{self, Create};
use crate::Range;
use std::io::{BufWriter, Write};
use std::ops::Bound;

pub fn get(ctx: &Context, key: &str) -> Outcome<u8> {
    let key = ctx.key(key)?;
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    match db.get(&key) {
        Ok(Some(value)) => match writeln!(std::io::stdout(), "{}", ctx.show(&value)) {
            Ok(()) => Ok(exit::OK),
            Err(e) => stdout_failed(e),
        },
        Ok(None) => {
            eprintln!(
                "evendb: no value for key {} in {}",
                ctx.show(&key),
                ctx.db.display()
            );
            Ok(exit::NOT_FOUND)
        }
        Err(e) => Err(Failure::engine(
            format_args!("cannot read key {}", ctx.show(&key)),
            &ctx.db,
            e,
        )),
    }
}

pub fn put(ctx: &Context, key: &str, value: &str) -> Outcome<u8> {
    let (key, value) = (ctx.key(key)?, ctx.value(value)?);
    let db = store::open(&ctx.db, Create::IfMissing)?;
    let failed = |e| {
        Failure::engine(
            format_args!("cannot put key {}", ctx.show(&key)),
            &ctx.db,
            e,
        )
    };
    db.put(&key, &value).map_err(failed)?;
    db.flush().map_err(failed)?;
    Ok(exit::OK)
}

pub fn delete(ctx: &Context, key: &str) -> Outcome<u8> {
    let key = ctx.key(key)?;
    let db = store::open(&ctx.db, Create::Never)?;
    let failed = |e| {
        Failure::engine(
            format_args!("cannot delete key {}", ctx.show(&key)),
            &ctx.db,
            e,
        )
    };
    db.delete(&key).map_err(failed)?;
    db.flush().map_err(failed)?;
    Ok(exit::OK)
}

pub fn delete_range(ctx: &Context, range: &Range, all: bool) -> Outcome<u8> {
    let bounds = ctx.bounds(range)?;
    let unbounded = matches!(bounds, (Bound::Unbounded, Bound::Unbounded));
    if unbounded && !all {
        return Err(Failure::new("delete-range needs --from, --to or --prefix")
            .hint("to remove every key, pass --all")
            .code(exit::USAGE));
    }
    let db = store::open(&ctx.db, Create::Never)?;
    let failed = |e| Failure::engine("cannot delete the range", &ctx.db, e);
    db.delete_range(bounds).map_err(failed)?;
    db.flush().map_err(failed)?;
    Ok(exit::OK)
}

/// A scan's pairs, in either direction.
type Pairs = Box<dyn Iterator<Item = evendb::Result<(Vec<u8>, Vec<u8>)>>>;

pub fn scan(
    ctx: &Context,
    range: &Range,
    limit: Option<u64>,
    keys_only: bool,
    reverse: bool,
) -> Outcome<u8> {
    let bounds = ctx.bounds(range)?;
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let scan = db.scan(bounds);
    let pairs: Pairs = if reverse {
        Box::new(scan.rev())
    } else {
        Box::new(scan)
    };
    let pairs = pairs.take(limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)));
    for (printed, pair) in pairs.enumerate() {
        let (key, value) = pair.map_err(|e| {
            let _ = out.flush();
            Failure::engine(
                format_args!("scan stopped after {printed} pairs"),
                &ctx.db,
                e,
            )
        })?;
        let line = if keys_only {
            writeln!(out, "{}", ctx.show(&key))
        } else {
            writeln!(out, "{}\t{}", ctx.show(&key), ctx.show(&value))
        };
        if let Err(e) = line {
            return stdout_failed(e);
        }
    }
    match out.flush() {
        Ok(()) => Ok(exit::OK),
        Err(e) => stdout_failed(e),
    }
}
