//! Which binary this is: its version and the commit it was built from
//! (`build.rs`), for `mailproc --version`, the start log line and
//! `mailproc_build_info`.

/// The commit this binary was built from (12 hex digits), or `unknown`
/// outside a git checkout of this tree.
pub const COMMIT: &str = env!("MAILPROC_COMMIT");

/// The version and commit, as `mailproc --version` prints them:
/// `0.1.0 (commit 0123456789ab)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MAILPROC_COMMIT"),
    ")"
);
