//! `stats`, `verify`, `backup`, `chunks`, `compact`.

use super::{plural, resolved, Context};
use crate::failure::{exit, Failure, Outcome};
use crate::store::{self, Create};
use evendb::{ChunkInfo, Db, IntegrityReport};
use indicatif::HumanBytes;
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The subfolder where an open of the store moves files it will neither
/// use nor delete.
const LOST_FOUND: &str = "lost+found";

fn list_chunks(ctx: &Context, db: &Db) -> Outcome<Vec<ChunkInfo>> {
    db.chunks()
        .map_err(|e| Failure::engine("cannot list the store's chunks", &ctx.db, e))
}

/// Total table bytes, log bytes and log segments.
fn totals(chunks: &[ChunkInfo]) -> (u64, u64, usize) {
    chunks.iter().fold((0, 0, 0), |(t, l, s), c| {
        (t + c.table_bytes, l + c.log_bytes, s + c.log_segments)
    })
}

fn bytes(n: u64) -> String {
    format!("{} ({n} bytes)", HumanBytes(n))
}

/// How `stats` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// A table for people.
    Human,
    /// One JSON object.
    Json,
    /// Prometheus text exposition format.
    Prometheus,
}

pub fn stats(ctx: &Context, format: StatsFormat, open_all: bool) -> Outcome<u8> {
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    if open_all {
        open_chunks(ctx, &db)?;
    }
    let chunks = list_chunks(ctx, &db)?;
    let (table_bytes, log_bytes, segments) = totals(&chunks);
    let stats = db.stats();
    match format {
        StatsFormat::Json => {
            let engine: Value = serde_json::from_str(&stats.to_json()).map_err(|e| {
                Failure::new(format!("the engine's statistics are not valid JSON: {e}"))
                    .hint("report this as a bug in evendb")
            })?;
            let doc = json!({
                "path": ctx.db.display().to_string(),
                "chunks": chunks.len(),
                "table_bytes": table_bytes,
                "log_bytes": log_bytes,
                "log_segments": segments,
                "engine": engine,
            });
            outln!("{doc:#}");
        }
        StatsFormat::Prometheus => {
            let mut text = stats.to_prometheus("evendb");
            for (name, help, v) in [
                (
                    "store_table_bytes",
                    "Bytes of the store's table files.",
                    table_bytes,
                ),
                (
                    "store_log_bytes",
                    "Bytes of the store's log segments.",
                    log_bytes,
                ),
                (
                    "store_log_segments",
                    "Log segments of the store.",
                    segments as u64,
                ),
            ] {
                text.push_str(&format!(
                    "# HELP evendb_{name} {help}\n# TYPE evendb_{name} gauge\nevendb_{name} {v}\n"
                ));
            }
            outln!("{}", text.trim_end());
        }
        StatsFormat::Human => {
            outln!("store        {}", ctx.db.display());
            outln!(
                "size         {} chunks; tables {}, logs {} in {segments} segments",
                chunks.len(),
                bytes(table_bytes),
                bytes(log_bytes)
            );
            outln!("");
            outln!("Engine figures since this command opened the store (they are kept in");
            outln!("memory only; an application reads them with Db::stats):");
            outln!("{}", stats.to_string().trim_end());
        }
    }
    Ok(exit::OK)
}

/// Opens every chunk (a read of its smallest key opens its funk), so that
/// table entries, versions and filter memory are known.
fn open_chunks(ctx: &Context, db: &Db) -> Outcome {
    let chunks = list_chunks(ctx, db)?;
    let bar = ctx.progress.items(chunks.len() as u64, "opening chunks");
    for c in chunks {
        db.get(&c.min_key)
            .map_err(|e| Failure::engine(format_args!("cannot open chunk {}", c.id), &ctx.db, e))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

fn verify_store(ctx: &Context, db: &Db, path: &Path) -> Outcome<IntegrityReport> {
    // The bar is made at the first report, which knows the total.
    let mut bar = None;
    let report = db
        .verify_integrity_with_progress(|done, total| {
            bar.get_or_insert_with(|| {
                ctx.progress
                    .bytes(total, format!("verifying {}", path.display()))
            })
            .set_position(done);
        })
        .map_err(|e| Failure::engine(format_args!("cannot verify {}", path.display()), path, e));
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report
}

fn print_report(path: &Path, r: &IntegrityReport, as_json: bool) -> Outcome {
    if as_json {
        let torn: Vec<Value> = r
            .torn_tails
            .iter()
            .map(|(file, bytes)| json!({ "file": file, "bytes": bytes }))
            .collect();
        let doc = json!({
            "path": path.display().to_string(),
            "ok": r.is_ok(),
            "chunks": r.chunks,
            "tables": r.tables,
            "logs": r.logs,
            "entries": r.entries,
            "orphans": r.orphans,
            "torn_tails": torn,
            "lost_and_found": r.lost_and_found,
            "leftovers": r.leftovers,
            "problems": r.problems,
        });
        outln!("{doc:#}");
        return Ok(());
    }
    outln!(
        "checked {}: {} chunks, {} tables, {} log segments, {} entries",
        path.display(),
        r.chunks,
        r.tables,
        r.logs,
        r.entries
    );
    for p in &r.problems {
        outln!("problem: {p}");
    }
    for o in &r.orphans {
        outln!("orphan: {o} (an engine file the MANIFEST does not list)");
    }
    for (file, bytes) in &r.torn_tails {
        outln!(
            "torn tail: {file} ends in {} after its last whole record (a write cut short \
             by a crash, after the length the last checkpoint recorded durable); no damage: \
             the next replay of the log drops it",
            plural(*bytes, "byte")
        );
    }
    for f in &r.lost_and_found {
        outln!(
            "lost+found: {f} (moved aside by an open of the store: not listed in its \
             MANIFEST, and not known to be safe to delete)"
        );
    }
    for f in &r.leftovers {
        outln!(
            "leftover: {f} (not listed in the MANIFEST; the next command that writes \
             deletes it if a crash left it, or moves it to lost+found)"
        );
    }
    if !r.lost_and_found.is_empty() {
        let dir = path.join(LOST_FOUND);
        outln!(
            "  hint: the store does not use the files in {}; evendb keeps them rather than \
             delete data. Find out where they came from (a file of another store? a file left \
             by restoring a backup?), then move them away or delete them",
            dir.display()
        );
    }
    if r.is_ok() {
        outln!("ok");
    } else {
        outln!(
            "FAILED: {} problems, {} orphan files",
            r.problems.len(),
            r.orphans.len()
        );
    }
    Ok(())
}

pub fn verify(ctx: &Context, as_json: bool) -> Outcome<u8> {
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    let report = verify_store(ctx, &db, &ctx.db)?;
    print_report(&ctx.db, &report, as_json)?;
    Ok(if report.is_ok() {
        exit::OK
    } else {
        exit::DAMAGED
    })
}

pub fn backup(ctx: &Context, dest: &Path, verify: bool) -> Outcome<u8> {
    let cannot = format!("cannot back up {} to {}", ctx.db.display(), dest.display());
    if resolved(dest).starts_with(resolved(&ctx.db)) {
        return Err(Failure::new(format!("{cannot}: the destination is inside the store"))
            .hint("choose a directory outside the store (a foreign directory inside it stops the store from opening)")
            .code(exit::USAGE));
    }
    let db = store::open(&ctx.db, Create::Never)?;
    let bar = ctx
        .progress
        .spinner(format!("backing up to {}", dest.display()));
    let done = db.backup(dest);
    bar.finish_and_clear();
    done.map_err(|e| {
        let not_empty = matches!(e, evendb::Error::InvalidArgument(_));
        let f = Failure::engine(&cannot, &ctx.db, e);
        if not_empty {
            f.hint("back up into a new or empty directory")
        } else {
            f
        }
    })?;
    drop(db);
    // Tables are hard-linked where the file system allows (they never
    // change); a file with a second name costs no space.
    let (mut files, mut linked, mut copied) = (0u64, 0u64, 0u64);
    if let Ok(entries) = std::fs::read_dir(dest) {
        for m in entries.flatten().filter_map(|e| e.metadata().ok()) {
            files += 1;
            if m.nlink() > 1 {
                linked += 1;
            } else {
                copied += m.len();
            }
        }
    }
    outln!(
        "backed up {} to {}: {files} files, {linked} of them hard-linked tables; {} copied",
        ctx.db.display(),
        dest.display(),
        bytes(copied)
    );
    if !verify {
        return Ok(exit::OK);
    }
    let copy = store::open(dest, Create::ReadOnly)?;
    let report = verify_store(ctx, &copy, dest)?;
    print_report(dest, &report, false)?;
    Ok(if report.is_ok() {
        exit::OK
    } else {
        exit::DAMAGED
    })
}

pub fn chunks(ctx: &Context, as_json: bool, open_all: bool) -> Outcome<u8> {
    let db = store::open(&ctx.db, Create::ReadOnly)?;
    if open_all {
        open_chunks(ctx, &db)?;
    }
    let chunks = list_chunks(ctx, &db)?;
    if as_json {
        let doc: Vec<Value> = chunks
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "min_key": ctx.show(&c.min_key),
                    "end_key": c.end_key.as_deref().map(|k| ctx.show(k)),
                    "table_bytes": c.table_bytes,
                    "log_bytes": c.log_bytes,
                    "log_segments": c.log_segments,
                    "open": c.open,
                    "table_entries": c.table_entries,
                    "max_version": c.max_version,
                    "log_records": c.log_records,
                    "log_min_version": c.log_versions.map(|v| v.0),
                    "log_max_version": c.log_versions.map(|v| v.1),
                    "log_parts": c.log_parts,
                    "filter_bytes": c.filter_bytes,
                    "munk_bytes": c.munk_bytes,
                    "munk_keys": c.munk_keys,
                    "heat": c.heat,
                })
            })
            .collect();
        outln!("{:#}", Value::Array(doc));
        return Ok(exit::OK);
    }
    let unknown = || "-".to_string();
    let mut rows = vec![[
        "id", "min_key", "end_key", "table", "entries", "log", "records", "segs", "filters",
        "munk", "versions",
    ]
    .map(String::from)];
    for c in &chunks {
        let filters = match c.log_parts {
            Some(parts) => format!("{parts} ({})", HumanBytes(c.filter_bytes)),
            None => unknown(),
        };
        let munk = match (c.munk_bytes, c.munk_keys) {
            (Some(b), Some(k)) => format!("{k} keys ({})", HumanBytes(b)),
            _ if c.open => "no".into(),
            _ => unknown(),
        };
        rows.push([
            c.id.to_string(),
            if c.min_key.is_empty() {
                "(start)".into()
            } else {
                ctx.show(&c.min_key)
            },
            c.end_key
                .as_deref()
                .map_or_else(|| "(end)".into(), |k| ctx.show(k)),
            HumanBytes(c.table_bytes).to_string(),
            c.table_entries
                .or(c.open.then_some(0))
                .map_or_else(unknown, |n| n.to_string()),
            HumanBytes(c.log_bytes).to_string(),
            c.log_records.map_or_else(unknown, |n| n.to_string()),
            c.log_segments.to_string(),
            filters,
            munk,
            versions(c),
        ]);
    }
    let mut widths = [0usize; 11];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:w$}"))
            .collect();
        outln!("{}", line.join("  ").trim_end());
    }
    if !open_all && chunks.iter().any(|c| !c.open) {
        outln!(
            "(entries, records, filters and versions are known for open chunks only; pass --open)"
        );
    }
    Ok(exit::OK)
}

/// A version as `epoch.n`: the open of the store that wrote it, and the
/// snapshots taken in that open before it.
fn version(v: u64) -> String {
    format!("{}.{}", v >> 40, v & ((1 << 40) - 1))
}

/// The versions a chunk's files hold: `..T` for the table's (at most T),
/// `A..B` for the logs'.
fn versions(c: &ChunkInfo) -> String {
    if !c.open {
        return "-".into();
    }
    let table = c
        .max_version
        .filter(|_| c.table_entries.unwrap_or(0) > 0)
        .map(|t| format!("..{}", version(t)));
    let log = c
        .log_versions
        .map(|(lo, hi)| format!("{}..{}", version(lo), version(hi)));
    match (table, log) {
        (Some(t), Some(l)) => format!("{t}, {l}"),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => "(empty)".into(),
    }
}

pub fn compact(ctx: &Context) -> Outcome<u8> {
    let db = store::open(&ctx.db, Create::Never)?;
    let before = list_chunks(ctx, &db)?;
    let bar = ctx
        .progress
        .spinner(format!("compacting {}", ctx.db.display()));
    let done = db.compact();
    bar.finish_and_clear();
    done.map_err(|e| Failure::engine("compaction failed", &ctx.db, e))?;
    let after = list_chunks(ctx, &db)?;
    let size = |c: &[ChunkInfo]| {
        let (t, l, _) = totals(c);
        t + l
    };
    outln!(
        "compacted {}: {} chunks -> {}, {} -> {} (tables + logs)",
        ctx.db.display(),
        before.len(),
        after.len(),
        HumanBytes(size(&before)),
        HumanBytes(size(&after))
    );
    Ok(exit::OK)
}
