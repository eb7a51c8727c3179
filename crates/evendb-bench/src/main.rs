//! `evendb-bench`: see `--help` and the crate's README.

use clap::Parser;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
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
