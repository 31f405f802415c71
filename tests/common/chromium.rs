//! Headless Chromium for the tests, run alone (`run`) or through
//! chromedriver (`webdriver`), always with [`ARGS`].

use std::path::{Path, PathBuf};

/// Headless, no sandbox (the tests run as root), and no network beyond
/// loopback: every host name but `localhost` fails to resolve (`MAP *
/// ~NOTFOUND`; pages are opened by address or as localhost), so Chromium sends no DNS query for its own
/// services (the machine's resolver is outside loopback; without the rule
/// one run of `tests/browser.rs` sent 272 queries), and its background
/// services are off.
pub const ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--no-pings",
    "--disable-dev-shm-usage",
    RESOLVER_RULES,
];

/// The resolver rule of [`ARGS`]; a test that maps a name of its own puts
/// its rule first: `--host-resolver-rules=MAP name 127.0.0.1, MAP * ~NOTFOUND,
/// EXCLUDE localhost`
/// (the last `--host-resolver-rules` given wins).
pub const RESOLVER_RULES: &str =
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1";

/// The Chromium binary; a missing one fails the test and names its package.
pub fn binary() -> PathBuf {
    which(&["chromium", "chromium-browser"])
        .unwrap_or_else(|| panic!("chromium not found: apt-get install chromium"))
}

pub fn which(names: &[&str]) -> Option<PathBuf> {
    for n in names {
        for dir in ["/usr/bin", "/usr/local/bin", "/usr/lib/chromium"] {
            let p = Path::new(dir).join(n);
            if p.exists() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs Chromium with [`ARGS`], a fresh profile and `args` to its end.
pub fn run(args: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    std::process::Command::new(binary())
        .args(ARGS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("chromium not runnable ({e}): apt-get install chromium"))
}
