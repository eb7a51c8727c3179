//! `evendb`: the command-line tool of the evendb store.
//!
//! Every command names the store with `--db PATH`. See the crate's
//! README.md for each command, the key encoding rules and the exit codes.

#![deny(unsafe_code)]

mod bytes;
mod commands;
mod failure;
mod format;
mod progress;
mod store;

use clap::{CommandFactory, Parser, Subcommand};
use format::Format;
use std::path::PathBuf;
use std::process::ExitCode;

/// Inspect, query, load, dump, verify and back up an evendb store.
///
/// Keys on the command line: an argument starting with 0x is hex (0x00ff is
/// the bytes 00 FF); anything else is UTF-8 text. --hex makes every key and
/// value argument hex; --text makes every argument text. Output shows bytes
/// as text when they are printable UTF-8 not starting with 0x, else as 0x-hex,
/// so a key as printed can be passed back as an argument.
///
/// Exit codes: 0 ok; 1 error; 2 bad usage; 3 the store is damaged; 4 get
/// found no such key (`--help` shows the full table).
#[derive(Debug, Parser)]
#[command(
    name = "evendb",
    version,
    max_term_width = 100,
    after_long_help = failure::EXIT_CODES_HELP
)]
struct Cli {
    /// The store's directory. Only `put` and `load` create a store; every
    /// other command refuses a path that holds none.
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Hex everywhere: key and value arguments are read as hex, output
    /// shows all bytes as hex, `load` reads CSV/TSV fields as hex and `dump`
    /// writes key_hex/value_hex for every pair.
    #[arg(long, global = true, conflicts_with = "text")]
    hex: bool,

    /// Read every key argument as text, even one starting with 0x.
    #[arg(long, global = true)]
    text: bool,

    /// Draw no progress bars (they are drawn only on a terminal anyway).
    #[arg(long, short, global = true)]
    quiet: bool,

    /// When the command is done, print to stderr what the engine did for
    /// it: puts, bytes written, rebuilds, cache hits, memory (as `stats`
    /// shows them).
    #[arg(long, global = true)]
    stats: bool,

    /// Log what the engine does to stderr (-v info, -vv debug); RUST_LOG
    /// overrides.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

/// Which keys a scan or dump covers.
#[derive(Debug, Clone, clap::Args)]
pub struct Range {
    /// First key (inclusive).
    #[arg(long, value_name = "KEY")]
    from: Option<String>,
    /// Stop before this key (exclusive).
    #[arg(long, value_name = "KEY")]
    to: Option<String>,
    /// Only keys starting with this prefix (combines with --from/--to).
    #[arg(long, value_name = "KEY")]
    prefix: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the value of KEY (exit code 4 if it has none).
    Get { key: String },
    /// Set KEY to VALUE, creating the store if it does not exist.
    ///
    /// VALUE is text unless --hex is given. The write is synced before the
    /// command returns.
    Put { key: String, value: String },
    /// Remove KEY (succeeds if it was absent).
    Delete { key: String },
    /// Remove every key of a range or prefix at once (one manifest write,
    /// however many keys), e.g. an app's events, or all before a date.
    ///
    /// Needs --from, --to or --prefix; --all removes every key. Readers
    /// see all of it or none; the space comes back as chunks are rebuilt.
    DeleteRange {
        #[command(flatten)]
        range: Range,
        /// With no bounds: remove every key.
        #[arg(long)]
        all: bool,
    },
    /// Print key<TAB>value pairs in ascending key order (descending with
    /// --reverse).
    ///
    /// All pairs printed come from one point in time. `--prefix app7|
    /// --reverse --limit 10` prints an app's 10 latest events when keys end
    /// in a timestamp.
    Scan {
        #[command(flatten)]
        range: Range,
        /// Print at most N pairs.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Print keys only.
        #[arg(long)]
        keys_only: bool,
        /// Newest key first: descending key order.
        #[arg(long)]
        reverse: bool,
    },
    /// Import key-value pairs from FILE (or - for standard input).
    ///
    /// The whole input is checked before anything is written: a malformed
    /// line (named by its number) or an oversized key or value aborts the
    /// load with the store untouched. Later lines overwrite earlier ones
    /// with the same key. Creates the store if it does not exist.
    Load {
        /// Input file, or - for standard input (then --format is required).
        file: PathBuf,
        /// Input format; default from FILE's extension (.jsonl/.ndjson/.json,
        /// .csv, .tsv/.tab).
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Skip the first record of a CSV or TSV file (a header line).
        #[arg(long)]
        header: bool,
    },
    /// Export pairs as JSON lines that `load` reads back exactly.
    ///
    /// Each line is {"key": ..., "value": ...}; a key or value that is not
    /// valid UTF-8 is written as "key_hex" / "value_hex" (lowercase hex)
    /// instead, and --hex writes every key and value that way. Writes to
    /// FILE (refusing to overwrite one without --force) or to standard
    /// output.
    Dump {
        /// Output file; standard output if absent.
        file: Option<PathBuf>,
        #[command(flatten)]
        range: Range,
        /// Overwrite FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Print the store's size and the engine's statistics.
    ///
    /// The engine keeps its figures in memory from the moment a store is
    /// opened, so those printed here describe this command's own open of the
    /// store (an application reads its live figures with `Db::stats`).
    Stats {
        /// Print one JSON object (same as --format json).
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: commands::StatsFormat,
        /// Open every chunk first (reads each table's index and replays
        /// each log), so memory and torn-tail figures cover the whole store.
        #[arg(long)]
        open: bool,
    },
    /// Read and check every file of the store; exit code 3 if anything is
    /// wrong.
    ///
    /// Also shows what is no damage but worth knowing: logs that end in a
    /// torn tail (a write cut short by a crash, after the length the last
    /// checkpoint recorded durable; the next replay of the log drops it)
    /// and files that opening the store moved into lost+found/ (files the
    /// MANIFEST does not list that may hold data: kept, but not used).
    Verify {
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Copy a consistent image of the store into the new directory DEST.
    Backup {
        /// Must not exist, or be an empty directory.
        dest: PathBuf,
        /// Open the copy afterwards and verify every file of it.
        #[arg(long)]
        verify: bool,
    },
    /// One line per chunk: key range, table and log sizes, state.
    Chunks {
        /// Print one JSON array.
        #[arg(long)]
        json: bool,
        /// Open every chunk first (reads each table's index and replays each
        /// log) so that entries and max version are known.
        #[arg(long)]
        open: bool,
    },
    /// Rebuild every chunk now, merging each table with its log (reclaims
    /// the space of deleted and overwritten pairs).
    Compact,
    /// Salvage what checksums allow from a damaged store into a new store
    /// at NEW_DIR, and print what was lost.
    ///
    /// The store at --db is only read, never changed (it need not open:
    /// a store with a damaged or lost MANIFEST can be repaired). Every
    /// table block and log record that passes its checksums is read; a
    /// damaged block or record is skipped and reported with its file,
    /// offset and size. For each key the newest version read wins, and the
    /// surviving pairs are written into NEW_DIR. Keys held only in a
    /// damaged region are lost, and a key whose newest version was there
    /// comes back with an older value (or undeleted). Exit code 0 if
    /// nothing was lost, 3 if something was (NEW_DIR is written all the
    /// same), 1 if the repair could not run.
    Repair {
        /// Where to write the new store: must not exist, or be an empty
        /// directory, outside the store.
        #[arg(long, value_name = "NEW_DIR")]
        out: PathBuf,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// glibc's malloc with two arenas and a fixed mmap threshold: the store's
/// buffers move between threads and megabyte merge buffers otherwise stay
/// in the arenas (docs/design.md §9). Called before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets glibc's malloc parameters; no thread has
    // started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

fn main() -> ExitCode {
    tune_malloc();
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .init();
    let Some(db) = cli.db.clone() else {
        Cli::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--db PATH is required: the store's directory",
            )
            .exit();
    };
    store::PRINT_STATS.store(cli.stats, std::sync::atomic::Ordering::Relaxed);
    let ctx = commands::Context {
        db,
        input: if cli.hex {
            bytes::InputMode::Hex
        } else if cli.text {
            bytes::InputMode::Text
        } else {
            bytes::InputMode::Auto
        },
        hex: cli.hex,
        progress: progress::Progress::new(cli.quiet),
    };
    match commands::run(&ctx, cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if !f.is_silent() {
                eprintln!("{f}");
            }
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
        assert_eq!(crate::failure::exit::USAGE, 2);
    }

    #[test]
    fn long_help_shows_the_exit_code_table() {
        use clap::CommandFactory;
        let help = super::Cli::command().render_long_help().to_string();
        assert!(help.contains(crate::failure::EXIT_CODES_HELP), "{help}");
    }
}
