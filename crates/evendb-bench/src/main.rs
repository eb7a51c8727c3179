//! `evendb-bench`: see `--help` and the crate's README.

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
        evendb_bench::cli::main()
    };
    if let Err(e) = outcome {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
