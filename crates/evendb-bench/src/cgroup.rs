//! Memory cgroups, so that an engine and its page cache together stay within
//! `--memory-limit`. Uses cgroup v2 when a v2 hierarchy offers the memory
//! controller, else v1's memory hierarchy.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// A memory cgroup created for one child process; removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: u8,
}

impl MemoryCgroup {
    /// Creates a cgroup named `name` limited to `limit` bytes.
    pub fn create(name: &str, limit: u64) -> Result<MemoryCgroup> {
        let mounts = std::fs::read_to_string("/proc/mounts").context("reading /proc/mounts")?;
        let mut v2 = None;
        let mut v1 = None;
        for line in mounts.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 4 {
                continue;
            }
            let (mount, fstype, opts) = (fields[1], fields[2], fields[3]);
            if fstype == "cgroup2" {
                let controllers =
                    std::fs::read_to_string(Path::new(mount).join("cgroup.controllers"))
                        .unwrap_or_default();
                if controllers.split_whitespace().any(|c| c == "memory") {
                    v2 = Some(PathBuf::from(mount));
                }
            } else if fstype == "cgroup" && opts.split(',').any(|o| o == "memory") {
                v1 = Some(PathBuf::from(mount));
            }
        }
        if let Some(root) = v2 {
            // Children of the root only get the memory controller if the
            // root delegates it.
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+memory");
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let cg = MemoryCgroup { dir, version: 2 };
            std::fs::write(cg.dir.join("memory.max"), limit.to_string())
                .context("setting memory.max")?;
            let _ = std::fs::write(cg.dir.join("memory.swap.max"), "0");
            return Ok(cg);
        }
        if let Some(root) = v1 {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let cg = MemoryCgroup { dir, version: 1 };
            std::fs::write(cg.dir.join("memory.limit_in_bytes"), limit.to_string())
                .context("setting memory.limit_in_bytes")?;
            return Ok(cg);
        }
        bail!("no cgroup hierarchy with the memory controller is mounted")
    }

    /// Path of the cgroup directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// "v1" or "v2".
    pub fn version(&self) -> &'static str {
        if self.version == 2 {
            "v2"
        } else {
            "v1"
        }
    }

    /// Peak memory charged to the group (including page cache), if known.
    pub fn peak_bytes(&self) -> Option<u64> {
        let file = if self.version == 2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

/// Moves the calling process into the cgroup at `dir`.
pub fn join(dir: &Path) -> Result<()> {
    std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
        .with_context(|| format!("joining cgroup {}", dir.display()))
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Fails harmlessly if a process is still inside.
        let _ = std::fs::remove_dir(&self.dir);
    }
}
