//! Real git repositories for the vault-parity probes: git run as a fresh machine would, and a
//! bare remote with a vault cloned from it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs git in `dir` as a fresh machine would: no global or system config, a fixed identity.
/// Returns its trimmed standard output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Fleet Test",
            "-c",
            "user.email=fleet@test.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Writes `file` in `repo` with `text` and commits it: the new HEAD.
pub fn commit(repo: &Path, file: &str, text: &str) -> String {
    std::fs::write(repo.join(file), text).unwrap();
    git(repo, &["add", "--", file]);
    git(repo, &["commit", "-q", "-m", file]);
    git(repo, &["rev-parse", "HEAD"])
}

/// A bare remote (`remote.git` in `dir`) and a vault cloned from it (`vault`), in sync after one
/// pushed commit: the vault's path.
pub fn vault_in_sync(dir: &Path) -> PathBuf {
    git(dir, &["init", "-q", "--bare", "remote.git"]);
    git(dir, &["clone", "-q", "remote.git", "vault"]);
    let vault = dir.join("vault");
    commit(&vault, "note.md", "first\n");
    git(&vault, &["push", "-q", "origin", "main"]);
    vault
}
