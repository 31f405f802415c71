//! Names the commit a binary was built from, so an operator can tell which
//! binary runs (`mailproc --version`, the start log line, the dashboard's
//! footer, `mailproc_build_info`). Outside a git checkout (a tarball) the
//! commit is `unknown`. Only the commit: whether the tree had uncommitted
//! changes would need this script to run on every edit.

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MAILPROC_COMMIT={commit}");
    // Built again when HEAD moves: a commit, a checkout, a branch reset.
    let git = Path::new(".git");
    if git.is_dir() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        println!("cargo:rerun-if-changed=.git/packed-refs");
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
            // A fresh clone keeps its refs in packed-refs; a path that
            // does not exist would run this script on every build.
            match head.trim().strip_prefix("ref: ") {
                Some(r) if git.join(r).is_file() => println!("cargo:rerun-if-changed=.git/{r}"),
                _ => {}
            }
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
