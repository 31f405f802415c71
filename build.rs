//! Names the commit a binary was built from, so an operator can tell which
//! binary runs (`mailproc --version`, the start log line,
//! `mailproc_build_info`). Outside a git checkout of this tree (a tarball,
//! also one unpacked inside another repository) the commit is `unknown`.
//! Only the commit: whether the tree had uncommitted changes would need
//! this script to run on every edit.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let same = |p: &str| {
        let (a, b) = (Path::new(p).canonicalize(), here.canonicalize());
        matches!((a, b), (Ok(a), Ok(b)) if a == b)
    };
    // The repository this tree is the top of, not one it sits inside.
    let ours = git(&["rev-parse", "--show-toplevel"]).is_some_and(|top| same(&top));
    let commit = ours
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten()
        .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MAILPROC_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    if !ours {
        return;
    }
    // Built again when HEAD moves: a commit, a checkout, a reset, a `git
    // gc` that packs the refs. A worktree keeps HEAD in its own git
    // directory and the refs in the common one. A directory is watched
    // whole (any file in it changed).
    let dirs = git(&["rev-parse", "--git-dir", "--git-common-dir"]).unwrap_or_default();
    let mut dirs = dirs.lines().map(|d| here.join(d));
    let (Some(git_dir), Some(common)) = (dirs.next(), dirs.next()) else {
        return;
    };
    for p in [
        git_dir.join("HEAD"),
        common.join("packed-refs"),
        common.join("refs").join("heads"),
        // Repositories in the reftable format (git 2.45 on).
        common.join("reftable"),
    ] {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
