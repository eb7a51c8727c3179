//! `dump`: export as JSON lines (see `format`), from one snapshot.

use super::{stdout_failed, Context, KeyBounds};
use crate::failure::{exit, Failure, Outcome};
use crate::format;
use crate::store::{self, Create};
use crate::Range;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub fn dump(ctx: &Context, file: Option<&Path>, range: &Range, force: bool) -> Outcome<u8> {
    let bounds = ctx.bounds(range)?;
    if let Some(f) = file {
        if !force && f.exists() {
            return Err(
                Failure::new(format!("cannot dump to {}: it exists", f.display()))
                    .hint("pass --force to overwrite it, or choose another file"),
            );
        }
    }
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    let bar = ctx
        .progress
        .counter(format!("dumping {}", ctx.db.display()));
    let Some(file) = file else {
        let mut out = BufWriter::new(io::stdout().lock());
        let written = write_pairs(ctx, &db, bounds, &mut out, &bar);
        bar.finish_and_clear();
        return match written {
            Ok(_) => out.flush().map_or_else(stdout_failed, |()| Ok(exit::OK)),
            Err(Stop::Write(e)) => stdout_failed(e),
            Err(Stop::Engine(f)) => Err(f),
        };
    };
    // Write beside the destination and rename at the end, so a failed dump
    // never leaves a truncated file under the requested name.
    let partial = partial_name(file);
    let result = (|| -> Outcome<u64> {
        let create =
            File::create(&partial).map_err(|e| Failure::io("cannot create", &partial, &e))?;
        let mut out = BufWriter::with_capacity(1 << 16, create);
        let n = write_pairs(ctx, &db, bounds, &mut out, &bar).map_err(|s| match s {
            Stop::Write(e) => Failure::io("cannot write", &partial, &e),
            Stop::Engine(f) => f,
        })?;
        let f = out
            .into_inner()
            .map_err(|e| Failure::io("cannot write", &partial, e.error()))?;
        f.sync_all()
            .map_err(|e| Failure::io("cannot sync", &partial, &e))?;
        std::fs::rename(&partial, file)
            .map_err(|e| Failure::io("cannot rename the finished dump to", file, &e))?;
        Ok(n)
    })();
    bar.finish_and_clear();
    match result {
        Ok(n) => {
            outln!(
                "dumped {n} pairs from {} to {}",
                ctx.db.display(),
                file.display()
            );
            Ok(exit::OK)
        }
        Err(f) => {
            let _ = std::fs::remove_file(&partial);
            Err(f)
        }
    }
}

/// Why writing pairs stopped.
enum Stop {
    Write(io::Error),
    Engine(Failure),
}

fn write_pairs(
    ctx: &Context,
    db: &evendb::Db,
    bounds: KeyBounds,
    out: &mut impl Write,
    bar: &indicatif::ProgressBar,
) -> Result<u64, Stop> {
    let mut n = 0u64;
    for pair in db.scan(bounds) {
        let (key, value) = pair.map_err(|e| {
            Stop::Engine(Failure::engine(
                format_args!("dump stopped after {n} pairs"),
                &ctx.db,
                e,
            ))
        })?;
        format::write_json_line(out, &key, &value, ctx.hex).map_err(Stop::Write)?;
        n += 1;
        if n.is_multiple_of(1024) {
            bar.set_position(n);
        }
    }
    Ok(n)
}

fn partial_name(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    file.with_file_name(name)
}
