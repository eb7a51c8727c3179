//! `evendb-bench`: see `--help` and the crate's README.

use clap::Parser;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc reads its options from this C string before `main`: those of
/// `evendb_bench::results::JEMALLOC_OPTIONS`, as docs/design.md §9
/// measured them: two arenas (the store frees on one thread what another
/// allocated), freed pages returned to the system within 5 ms by the
/// freeing threads (no background thread: it wakes at most every 100 ms,
/// which let tens of MiB of freed pages stay resident), and no lazily
/// freed (`MADV_FREE`) pages, which count as resident until the kernel
/// takes them.
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[allow(unsafe_code, non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
static malloc_conf: &u8 = &evendb_bench::results::JEMALLOC_OPTIONS[0];

/// glibc's malloc, tuned as docs/design.md §9 measured: two arenas (a
/// store's buffers are allocated on one thread and freed on another, and
/// every arena keeps its own high-water mark) and a fixed mmap threshold
/// (glibc raises it after large frees, and the megabyte buffers of merges
/// then stay in the arenas). Peak RSS under a 64 MiB budget went from
/// 165-187 MiB to 150-158 MiB. Called before any thread starts.
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    not(feature = "mimalloc"),
    not(feature = "jemalloc")
))]
fn tune_malloc() {
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets glibc's malloc parameters; no thread has
    // started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(not(all(
    target_os = "linux",
    target_env = "gnu",
    not(feature = "mimalloc"),
    not(feature = "jemalloc")
)))]
fn tune_malloc() {}

fn main() {
    tune_malloc();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let outcome = if args
        .get(1)
        .is_some_and(|a| a == evendb_bench::orchestrate::CHILD_FLAG)
    {
        match (args.get(2), args.get(3)) {
            (Some(job), Some(out)) => {
                evendb_bench::orchestrate::child_main(job.as_ref(), out.as_ref())
            }
            _ => Err(anyhow::anyhow!(
                "usage: evendb-bench __run-job JOB.json OUT.json"
            )),
        }
    } else {
        let args = evendb_bench::cli::Args::parse();
        match args.suite.as_deref() {
            Some(name) => evendb_bench::suite::run(&args, name),
            None => evendb_bench::cli::single(&args),
        }
    };
    if let Err(e) = outcome {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
