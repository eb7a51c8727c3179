//! Process-level resource counters: device I/O, CPU time, peak RSS, and the
//! size of a directory on disk.

use std::path::Path;

/// A snapshot of this process's resource use.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Bytes this process caused to be written to the block device.
    pub write_bytes: u64,
    /// Bytes this process caused to be read from the block device.
    pub read_bytes: u64,
    /// User plus system CPU seconds.
    pub cpu_seconds: f64,
    /// Peak resident set size so far, bytes.
    pub peak_rss_bytes: u64,
}

impl Usage {
    /// Reads `/proc/self/io` and `getrusage(RUSAGE_SELF)`.
    pub fn now() -> Usage {
        let mut usage = Usage::default();
        if let Ok(io) = std::fs::read_to_string("/proc/self/io") {
            for line in io.lines() {
                let mut parts = line.split(':');
                let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let value = value.trim().parse().unwrap_or(0);
                match name {
                    "write_bytes" => usage.write_bytes = value,
                    "read_bytes" => usage.read_bytes = value,
                    _ => {}
                }
            }
        }
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        #[allow(unsafe_code)]
        // SAFETY: `ru` points to writable memory of the right type and size;
        // getrusage only writes into it, and zeroed is a valid rusage.
        let ru = unsafe {
            libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
            ru.assume_init()
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        usage.cpu_seconds = secs(ru.ru_utime) + secs(ru.ru_stime);
        usage.peak_rss_bytes = ru.ru_maxrss as u64 * 1024;
        usage
    }

    /// Counters accumulated since `earlier` (the peak is kept as is).
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            cpu_seconds: self.cpu_seconds - earlier.cpu_seconds,
            peak_rss_bytes: self.peak_rss_bytes,
        }
    }
}

/// Bytes allocated on disk by the files under `path`.
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.blocks() * 512;
            }
        }
    }
    total
}
