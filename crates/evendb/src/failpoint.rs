//! Named fail points: places in split, merge, rebalance, checkpoint and
//! recovery where a test can make the step fail as if the disk had, to
//! check what a crash at exactly that point leaves behind. Compiled only
//! with the `test-hooks` feature; without it `failpoint!` expands to
//! nothing.

#[cfg(feature = "test-hooks")]
use std::sync::Arc;

/// The test's hook: gets each fail point's name, returns true to fail there.
#[cfg(feature = "test-hooks")]
#[derive(Clone)]
pub(crate) struct Hook(pub Arc<dyn Fn(&str) -> bool + Send + Sync>);

#[cfg(feature = "test-hooks")]
impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

/// True if the test's hook asks to fail at `name`.
#[cfg(feature = "test-hooks")]
pub(crate) fn hit(hook: Option<&Hook>, name: &str) -> bool {
    hook.is_some_and(|h| (h.0)(name))
}

/// The error a fail point returns.
#[cfg(feature = "test-hooks")]
pub(crate) fn injected(dir: &std::path::Path, name: &str) -> crate::error::Error {
    crate::error::Error::io(
        dir,
        std::io::Error::other(format!("injected failure at fail point {name}")),
    )
}

/// `failpoint!(inner, "name")`: in a function returning `Result`, fails the
/// step (poisoning the store) when the test's hook asks for it.
/// `failpoint!(opts options, dir, "name")` does the same before the store
/// is open.
macro_rules! failpoint {
    (opts $opts:expr, $dir:expr, $name:literal) => {
        #[cfg(feature = "test-hooks")]
        {
            if $crate::failpoint::hit($opts.fail_points.as_ref(), $name) {
                return Err($crate::failpoint::injected($dir, $name));
            }
        }
    };
    ($inner:expr, $name:literal) => {
        #[cfg(feature = "test-hooks")]
        {
            let inner = &$inner;
            if $crate::failpoint::hit(inner.opts.fail_points.as_ref(), $name) {
                return inner.poison($crate::failpoint::injected(&inner.dir, $name));
            }
        }
    };
}
pub(crate) use failpoint;
