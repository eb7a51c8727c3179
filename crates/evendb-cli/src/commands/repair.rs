//! `repair`: salvage what checksums allow from a (possibly damaged) store
//! into a new store, leaving the old one as it was, and say what was lost.
//!
//! The engine's `evendb::repair` does the work; this command checks the
//! paths first, holds the store's LOCK while it reads, and prints the
//! report. The exit code says whether anything was lost.

use super::{plural, resolved, Context};
use crate::failure::{exit, Failure, Outcome};
use crate::store;
use evendb::RepairReport;
use serde_json::json;
use std::path::Path;

pub fn repair(ctx: &Context, out: &Path, as_json: bool) -> Outcome<u8> {
    let cannot = format!("cannot repair {} into {}", ctx.db.display(), out.display());
    if resolved(out).starts_with(resolved(&ctx.db)) {
        return Err(Failure::new(format!(
            "{cannot}: the new store would be inside the old one"
        ))
        .hint("choose a directory outside the store: repair never writes into the store it reads")
        .code(exit::USAGE));
    }
    // Checked here too (the engine checks again) so that a busy
    // destination is refused before the store is read at all.
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(
            Failure::new(format!("{cannot}: {} is not empty", out.display()))
                .hint("repair writes a new store: give --out a new or empty directory"),
        );
    }
    // The engine's repair holds the store's lock while it reads.
    store::check_is_store(&ctx.db)?;
    let bar = ctx.progress.spinner(format!(
        "salvaging {} into {}",
        ctx.db.display(),
        out.display()
    ));
    let done = evendb::repair(&ctx.db, out);
    bar.finish_and_clear();
    let report = done.map_err(|e| {
        let not_empty = matches!(e, evendb::Error::InvalidArgument(_));
        let f = Failure::engine(&cannot, &ctx.db, e);
        if not_empty {
            f.hint("repair writes a new store: give --out a new or empty directory")
        } else {
            f
        }
    })?;
    print_report(ctx, out, &report, as_json)?;
    Ok(if report.is_lossless() {
        exit::OK
    } else {
        exit::DAMAGED
    })
}

fn print_report(ctx: &Context, out: &Path, r: &RepairReport, as_json: bool) -> Outcome {
    if as_json {
        let doc = json!({
            "path": ctx.db.display().to_string(),
            "out": out.display().to_string(),
            "lossless": r.is_lossless(),
            "files_read": r.files_read,
            "records_salvaged": r.records_salvaged,
            "keys_written": r.keys_written,
            "tombstones": r.tombstones,
            "damaged": r.damaged,
            "skipped_files": r.skipped_files,
            "warnings": r.warnings,
        });
        outln!("{doc:#}");
        return Ok(());
    }
    outln!(
        "repaired {} into {}: read {}, {} passed their checksums; wrote {}, left out {}",
        ctx.db.display(),
        out.display(),
        plural(r.files_read, "file"),
        plural(r.records_salvaged, "record"),
        plural(r.keys_written, "key"),
        plural(r.tombstones, "deleted key")
    );
    for d in &r.damaged {
        outln!("damaged: {d}");
    }
    for f in &r.skipped_files {
        outln!("unreadable: {f}");
    }
    for w in &r.warnings {
        outln!("warning: {w}");
    }
    if r.is_lossless() {
        outln!("lossless: every file was read whole");
    } else {
        outln!(
            "LOSSY: skipped {} and {}",
            plural(r.damaged.len() as u64, "damaged region"),
            plural(r.skipped_files.len() as u64, "unreadable file")
        );
        outln!(
            "  lost: keys held only there; a key whose newest version was there has an \
             older value in {} (or is back from deletion)",
            out.display()
        );
    }
    outln!(
        "  hint: {} is left as it was; check the new store with `evendb --db {} verify` and \
         `evendb --db {} scan`, then put it in the old one's place",
        ctx.db.display(),
        out.display(),
        out.display()
    );
    Ok(())
}
