//! One function per command; `run` dispatches.

/// `println!` that makes the enclosing function return a [`Failure`]
/// instead of panicking when standard output is closed or fails.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::commands::write_line(format_args!($($arg)*))?
    };
}

mod admin;
mod data;
mod dump;
mod load;
mod repair;

pub use admin::StatsFormat;

use crate::bytes::{self, InputMode};
use crate::failure::{exit, Failure, Outcome};
use crate::progress::Progress;
use crate::{Command, Range};
use std::io::{self, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

/// Start and end of a key range, as `Db::scan` takes them.
pub type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// What every command needs besides its own arguments.
#[derive(Debug)]
pub struct Context {
    /// The store's directory.
    pub db: PathBuf,
    /// How key and value arguments are read.
    pub input: InputMode,
    /// Print all bytes as hex.
    pub hex: bool,
    pub progress: Progress,
}

impl Context {
    /// Decodes a key argument; a bad one is a usage error.
    fn key(&self, arg: &str) -> Outcome<Vec<u8>> {
        bytes::parse_key(arg, self.input)
            .map_err(|e| Failure::new(format!("invalid key argument: {e}")).code(exit::USAGE))
    }

    fn value(&self, arg: &str) -> Outcome<Vec<u8>> {
        bytes::parse_value(arg, self.input)
            .map_err(|e| Failure::new(format!("invalid value argument: {e}")).code(exit::USAGE))
    }

    fn show(&self, b: &[u8]) -> String {
        bytes::show(b, self.hex)
    }

    /// The key bounds `range` asks for: `--from` and `--to` intersected
    /// with the range of `--prefix`.
    fn bounds(&self, range: &Range) -> Outcome<KeyBounds> {
        let mut lo = match &range.from {
            Some(k) => Bound::Included(self.key(k)?),
            None => Bound::Unbounded,
        };
        let mut hi = match &range.to {
            Some(k) => Bound::Excluded(self.key(k)?),
            None => Bound::Unbounded,
        };
        if let Some(p) = &range.prefix {
            let p = self.key(p)?;
            if !matches!(&lo, Bound::Included(k) if *k > p) {
                lo = Bound::Included(p.clone());
            }
            if let Some(end) = evendb::prefix_end(&p) {
                if !matches!(&hi, Bound::Excluded(k) if *k < end) {
                    hi = Bound::Excluded(end);
                }
            }
        }
        Ok((lo, hi))
    }
}

/// Runs one command; returns the exit code of a command that did its job.
pub fn run(ctx: &Context, command: Command) -> Outcome<u8> {
    match command {
        Command::Get { key } => data::get(ctx, &key),
        Command::Put { key, value } => data::put(ctx, &key, &value),
        Command::Delete { key } => data::delete(ctx, &key),
        Command::DeleteRange { range, all } => data::delete_range(ctx, &range, all),
        Command::Scan {
            range,
            limit,
            keys_only,
            reverse,
        } => data::scan(ctx, &range, limit, keys_only, reverse),
        Command::Load {
            file,
            format,
            header,
        } => load::load(ctx, &file, format, header),
        Command::Dump { file, range, force } => dump::dump(ctx, file.as_deref(), &range, force),
        Command::Stats { json, format, open } => {
            let format = if json { StatsFormat::Json } else { format };
            admin::stats(ctx, format, open)
        }
        Command::Verify { json } => admin::verify(ctx, json),
        Command::Backup { dest, verify } => admin::backup(ctx, &dest, verify),
        Command::Chunks { json, open } => admin::chunks(ctx, json, open),
        Command::Compact => admin::compact(ctx),
        Command::Repair { out, json } => repair::repair(ctx, &out, json),
    }
}

/// Writes one line to standard output, whole (so it never interleaves
/// with a line on stderr).
pub fn write_line(args: std::fmt::Arguments<'_>) -> Outcome {
    let line = format!("{args}\n");
    io::stdout()
        .lock()
        .write_all(line.as_bytes())
        .map_err(|e| Failure::stdout(&e))
}

/// A failed write to standard output; see [`Failure::stdout`].
fn stdout_failed(e: io::Error) -> Outcome<u8> {
    Err(Failure::stdout(&e))
}

/// `path` made absolute with symlinks resolved as far as it exists (to
/// tell whether a destination lies inside the store).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => resolved(parent).join(name),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// `n` and a noun in the singular or plural: "1 byte", "20 bytes".
fn plural(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}
