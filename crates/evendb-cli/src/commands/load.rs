//! `load`: bulk import in two passes. The first pass reads and checks the
//! whole input without opening the store, so a malformed line changes
//! nothing; the second pass writes.

use super::Context;
use crate::failure::{exit, Failure, Outcome};
use crate::format::{self, Format, Records};
use crate::store::{self, Create};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Where the input comes from. Standard input is read whole into memory,
/// since it cannot be read twice.
enum Source<'p> {
    File(&'p Path),
    Stdin(Vec<u8>),
}

impl Source<'_> {
    fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Stdin(_) => "standard input".into(),
        }
    }

    fn len(&self) -> Outcome<u64> {
        match self {
            Source::File(p) => std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| Failure::io("cannot load", p, &e)),
            Source::Stdin(all) => Ok(all.len() as u64),
        }
    }

    fn reader(&self) -> Outcome<Box<dyn BufRead + '_>> {
        match self {
            Source::File(p) => File::open(p)
                .map(|f| Box::new(BufReader::with_capacity(1 << 16, f)) as Box<dyn BufRead>)
                .map_err(|e| Failure::io("cannot load", p, &e)),
            Source::Stdin(all) => Ok(Box::new(all.as_slice())),
        }
    }
}

/// Key and value bytes `load` writes between two flushes: what a failed
/// write can lose, and what it reports as durable.
const FLUSH_EVERY: u64 = 16 << 20;

pub fn load(ctx: &Context, file: &Path, format: Option<Format>, header: bool) -> Outcome<u8> {
    let stdin = file == Path::new("-");
    let Some(format) = format.or_else(|| Format::from_extension(file)) else {
        let why = if stdin {
            "standard input has no file extension".to_string()
        } else {
            format!(
                "cannot tell the format of {} from its extension",
                file.display()
            )
        };
        return Err(Failure::new(why)
            .hint("pass --format jsonl, --format csv or --format tsv")
            .code(exit::USAGE));
    };
    if format == Format::Jsonl && ctx.hex {
        return Err(Failure::new(
            "--hex applies to CSV and TSV input; JSON lines say hex per field",
        )
        .hint("use \"key_hex\" / \"value_hex\" fields in the JSON lines, and drop --hex")
        .code(exit::USAGE));
    }
    let source = if stdin {
        Source::Stdin(
            format::read_stdin()
                .map_err(|e| Failure::new(format!("cannot read standard input: {e}")))?,
        )
    } else {
        Source::File(file)
    };
    let total = source.len()?;

    // Pass 1: check every line; the store is not opened yet.
    let bar = ctx
        .progress
        .bytes(total, format!("checking {}", source.name()));
    let mut records = Records::new(source.reader()?, format, ctx.hex, header);
    let mut count = 0u64;
    while let Some(r) = records.next_record() {
        if let Err(bad) = r {
            bar.finish_and_clear();
            return Err(Failure::new(format!(
                "cannot load {}: line {}: {}",
                source.name(),
                bad.line,
                bad.message
            ))
            .hint(format!(
                "fix line {} and run the command again; nothing was written to {}",
                bad.line,
                ctx.db.display()
            )));
        }
        count += 1;
        if count.is_multiple_of(1024) {
            bar.set_position(records.position());
        }
    }
    bar.finish_and_clear();

    // Pass 2: write.
    let db = store::open(&ctx.db, Create::IfMissing)?;
    let bar = ctx
        .progress
        .bytes(total, format!("loading {}", source.name()));
    let mut records = Records::new(source.reader()?, format, ctx.hex, header);
    let mut loaded = 0u64;
    // What the last flush made durable: pairs, bytes since, and the line
    // to reload from if a later write fails.
    let mut durable = 0u64;
    let mut unflushed_bytes = 0u64;
    let mut resume_line = None;
    while let Some(r) = records.next_record() {
        let r = r.map_err(|bad| {
            Failure::new(format!(
                "{} changed while it was being loaded: line {} is now malformed ({}); \
                 {loaded} pairs were written",
                source.name(),
                bad.line,
                bad.message
            ))
        })?;
        let line = r.line;
        let resume = *resume_line.get_or_insert(line);
        db.put(&r.key, &r.value).map_err(|e| {
            Failure::engine(
                format_args!(
                    "cannot load line {line} of {}: at least {durable} pairs are durable (the last flush \
                     before the failure); of the {} accepted after them, those the background sync \
                     reached are kept and the rest lost: reload from line {resume} once the cause is fixed",
                    source.name(),
                    loaded - durable
                ),
                &ctx.db,
                e,
            )
        })?;
        loaded += 1;
        unflushed_bytes += (r.key.len() + r.value.len()) as u64;
        if unflushed_bytes >= FLUSH_EVERY {
            db.flush().map_err(|e| {
                Failure::engine(
                    format_args!(
                        "cannot sync after line {line} of {}: {durable} pairs are durable; \
                         reload from line {resume} once the cause is fixed",
                        source.name()
                    ),
                    &ctx.db,
                    e,
                )
            })?;
            durable = loaded;
            unflushed_bytes = 0;
            resume_line = None;
        }
        if loaded.is_multiple_of(1024) {
            bar.set_position(records.position());
        }
    }
    db.flush().map_err(|e| {
        Failure::engine(
            format_args!(
                "cannot sync the {loaded} pairs loaded: {durable} are durable{}",
                resume_line.map_or(String::new(), |l| format!(
                    "; reload from line {l} once the cause is fixed"
                ))
            ),
            &ctx.db,
            e,
        )
    })?;
    bar.finish_and_clear();
    outln!(
        "loaded {loaded} pairs from {} into {}",
        source.name(),
        ctx.db.display()
    );
    Ok(exit::OK)
}
