//! Progress bars and spinners on stderr, drawn only when stderr is a
//! terminal (and `--quiet` is not given), so pipes and logs stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Makes progress bars for one run of the tool.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    visible: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress {
            visible: !quiet && std::io::stderr().is_terminal(),
        }
    }

    fn target(&self) -> ProgressDrawTarget {
        if self.visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        }
    }

    /// A bar over `total` bytes.
    pub fn bytes(&self, total: u64, message: impl Into<String>) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(total), self.target());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
            )
            .expect("constant template")
            .progress_chars("=> "),
        );
        bar.set_message(message.into());
        bar
    }

    /// A bar over `total` items.
    pub fn items(&self, total: u64, message: impl Into<String>) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(total), self.target());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {human_pos}/{human_len} ({eta} left)")
                .expect("constant template")
                .progress_chars("=> "),
        );
        bar.set_message(message.into());
        bar
    }

    /// A spinner for work of unknown length; it ticks by itself.
    pub fn spinner(&self, message: impl Into<String>) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(None, self.target());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("constant template"),
        );
        bar.set_message(message.into());
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    }

    /// A spinner that counts items (`{pos}`) as they are done.
    pub fn counter(&self, message: impl Into<String>) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(None, self.target());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}: {human_pos} pairs, {elapsed}")
                .expect("constant template"),
        );
        bar.set_message(message.into());
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    }
}
