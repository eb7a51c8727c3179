//! Runs each engine's job in a child process of its own (so `/proc/self/io`,
//! CPU time and peak RSS are per engine), inside a memory cgroup when asked.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cgroup::MemoryCgroup;
use crate::results::RunResult;
use crate::runner::Job;

/// The argument that turns the binary into a job runner.
pub const CHILD_FLAG: &str = "__run-job";

/// Entry point of a child: `evendb-bench __run-job JOB.json OUT.json`.
pub fn child_main(job_path: &Path, out_path: &Path) -> Result<()> {
    let job: Job = serde_json::from_slice(&std::fs::read(job_path)?).context("decoding the job")?;
    if let Some(dir) = &job.cgroup {
        crate::cgroup::join(dir)?;
    }
    let mut results = crate::runner::run_job(&job)?;
    let linked = crate::engines::EngineKind::all_available()
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join(",");
    for r in &mut results {
        r.linked_engines = linked.clone();
    }
    std::fs::write(out_path, serde_json::to_vec(&results)?)?;
    Ok(())
}

/// How a memory limit ended up being applied.
#[derive(Clone, Debug)]
pub struct LimitNote(pub String);

/// Runs `job` in a child process of `exe` (this binary if `None`), under
/// `memory_limit` if given; the data directory is removed afterwards
/// unless `keep_data`.
pub fn run_in_child(
    mut job: Job,
    memory_limit: Option<u64>,
    keep_data: bool,
    exe: Option<&Path>,
    note: &mut LimitNote,
) -> Result<Vec<RunResult>> {
    let scratch = std::env::temp_dir().join(format!(
        "evendb-bench-{}-{}",
        std::process::id(),
        job.engine.name()
    ));
    std::fs::create_dir_all(&scratch)?;
    let job_path = scratch.join("job.json");
    let out_path = scratch.join("results.json");
    let _ = std::fs::remove_file(&out_path);

    let cgroup = match memory_limit {
        Some(limit) => {
            let name = format!("evendb-bench-{}-{}", std::process::id(), job.engine.name());
            match MemoryCgroup::create(&name, limit) {
                Ok(cg) => {
                    note.0 = format!(
                        "each engine ran in its own memory cgroup ({}) limited to {} (process memory and page cache)",
                        cg.version(),
                        crate::format::bytes(limit)
                    );
                    Some(cg)
                }
                Err(e) => {
                    let msg = format!(
                        "--memory-limit NOT applied: could not create a memory cgroup ({e:#}); running without a memory cap"
                    );
                    eprintln!("warning: {msg}");
                    note.0 = msg;
                    None
                }
            }
        }
        None => None,
    };
    job.cgroup = cgroup.as_ref().map(|c| c.dir().to_path_buf());
    job.cgroup_peak_file = cgroup.as_ref().map(|c| {
        c.dir().join(if c.version() == "v2" {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        })
    });
    job.memory_limit_bytes = cgroup.as_ref().and(memory_limit);
    std::fs::write(&job_path, serde_json::to_vec(&job)?)?;

    let exe = match exe {
        Some(exe) => exe.to_path_buf(),
        None => std::env::current_exe().context("locating this executable")?,
    };
    // EVENDB_BENCH_WRAP="heaptrack -o /tmp/h" runs the child under a
    // profiler (words split on spaces).
    let wrap = std::env::var("EVENDB_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut c = Command::new(program);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let status = command
        .arg(CHILD_FLAG)
        .arg(&job_path)
        .arg(&out_path)
        .status();
    let data_dir: PathBuf = job.dir.clone();
    if !keep_data {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    drop(cgroup);
    let status = status.context("starting the child process")?;
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        let _ = std::fs::remove_dir_all(&scratch);
        match status.signal() {
            Some(9) if memory_limit.is_some() => bail!(
                "{} was killed (SIGKILL), most likely by the memory cgroup's OOM killer: it needs more than the memory limit",
                job.engine.name()
            ),
            Some(sig) => bail!("{} child died from signal {sig}", job.engine.name()),
            None => bail!("{} child failed with {status}", job.engine.name()),
        }
    }
    let results: Vec<RunResult> = serde_json::from_slice(&std::fs::read(&out_path)?)?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(results)
}
