//! Vault parity against real git repositories: a bare "remote", a clone as the vault, and a
//! second clone that pushes behind the vault's back. Git runs through `LocalRunner`, as the
//! local host source runs it.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use fleetdash::clock::Clocked;
use fleetdash::collect::systems::command::LocalRunner;
use fleetdash::collect::systems::vault::{Parity, parity};
use fleetdash::collect::systems::{HostFacts, Ram, judge};
use fleetdash::config::{HostConfig, HostSource, VaultParityConfig};
use fleetdash::net::ProbeFailure;
use fleetdash_model::{Asc, Band, Probe};
use support::git::{commit, git, vault_in_sync};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A bare remote and a vault cloned from it, in sync after one pushed commit.
struct Fixture {
    dir: tempfile::TempDir,
    vault: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let vault = vault_in_sync(dir.path());
        Fixture { dir, vault }
    }

    fn cfg(&self, branch: Option<&str>) -> VaultParityConfig {
        VaultParityConfig {
            path: self.vault.to_string_lossy().into_owned(),
            remote: Some("origin".into()),
            branch: branch.map(str::to_string),
        }
    }

    fn head(&self) -> String {
        git(&self.vault, &["rev-parse", "HEAD"])
    }

    async fn parity(&self) -> Result<Parity, ProbeFailure> {
        parity(&runner(), &self.cfg(None)).await
    }
}

fn runner() -> LocalRunner {
    LocalRunner { timeout: TIMEOUT }
}

fn short(hash: &str) -> &str {
    &hash[..7]
}

#[tokio::test]
async fn in_sync() {
    let f = Fixture::new();
    let p = f.parity().await.unwrap();
    assert!(p.in_sync(), "{p:?}");
    let compared = p.compared.as_ref().unwrap();
    assert_eq!(compared.branch, "main");
    assert_eq!(p.head, f.head());
    assert_eq!(compared.remote_head, p.head);
    assert_eq!(p.uncommitted, 0);
}

#[tokio::test]
async fn behind_names_both_heads() {
    let f = Fixture::new();
    let other = f.dir.path().join("other");
    git(f.dir.path(), &["clone", "-q", "remote.git", "other"]);
    let newer = commit(&other, "elsewhere.md", "from another host\n");
    git(&other, &["push", "-q", "origin", "main"]);

    let p = f.parity().await.unwrap();
    assert!(!p.in_sync());
    assert_eq!(p.compared.as_ref().unwrap().remote_head, newer);
    assert_eq!(
        p.describe(),
        format!(
            "HEAD {} differs from origin/main {}",
            short(&f.head()),
            short(&newer)
        )
    );
}

#[tokio::test]
async fn ahead_is_out_of_sync() {
    let f = Fixture::new();
    let pushed = f.head();
    let local = commit(&f.vault, "unpushed.md", "not yet pushed\n");
    let p = f.parity().await.unwrap();
    assert!(!p.in_sync());
    assert_eq!(
        (
            p.head.as_str(),
            p.compared.as_ref().unwrap().remote_head.as_str()
        ),
        (&*local, &*pushed)
    );
    assert_eq!(
        p.describe(),
        format!(
            "HEAD {} differs from origin/main {}",
            short(&local),
            short(&pushed)
        )
    );
}

#[tokio::test]
async fn dirty_counts_each_change() {
    let f = Fixture::new();
    std::fs::write(f.vault.join("draft.md"), "untracked\n").unwrap();
    let p = f.parity().await.unwrap();
    assert!(!p.in_sync());
    assert_eq!(p.describe(), "1 uncommitted change");

    std::fs::write(f.vault.join("note.md"), "edited\n").unwrap();
    let p = f.parity().await.unwrap();
    assert_eq!(p.describe(), "2 uncommitted changes");
}

#[tokio::test]
async fn remote_missing_is_an_error_with_gits_reason() {
    let f = Fixture::new();
    let gone = f.dir.path().join("gone.git");
    git(
        &f.vault,
        &["remote", "set-url", "origin", &gone.to_string_lossy()],
    );
    let err = f.parity().await.unwrap_err();
    assert_eq!(err.asc, Asc::DEPENDENCY_UNAVAILABLE, "{err:?}");
    assert_eq!(
        err.reason,
        format!(
            "fatal: '{}' does not appear to be a git repository",
            gone.display()
        )
    );

    // A remote name the checkout does not have at all: said as such, with both ways out
    // (issue 44: it was git's "does not appear to be a git repository", shown "out of sync").
    let mut cfg = f.cfg(None);
    cfg.remote = Some("upstream".into());
    let err = parity(&runner(), &cfg).await.unwrap_err();
    assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
    assert_eq!(
        err.reason,
        "no remote 'upstream' to compare with: add it (git remote add upstream URL in the \
         checkout), or remove vault.remote to watch the checkout alone"
    );
}

/// Issue 44: a vault with no remote (`git init`, never cloned) and none configured is watched
/// alone: green, "no remote to compare with"; uncommitted changes still count. With `remote`
/// given, its absence is a failure that names it, never "out of sync".
#[tokio::test]
async fn a_checkout_without_a_remote_is_watched_alone_unless_one_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    git(&vault, &["init", "-q"]);
    let head = commit(&vault, "note.md", "first\n");
    let mut cfg = VaultParityConfig {
        path: vault.to_string_lossy().into_owned(),
        remote: None,
        branch: None,
    };
    // A fixed moment: the verdict is the checkout's, not the date's.
    let now: chrono::DateTime<Utc> = "2026-03-29T01:30:00Z".parse().unwrap();
    let p = parity(&runner(), &cfg).await.unwrap();
    assert_eq!(p.compared, None);
    let row = judge(
        &host(cfg.clone()),
        facts(Ok(p)),
        now,
        &Clocked::wall_only(now),
    );
    assert_eq!(row.band, Band::Green, "{row:?}");
    assert_eq!(row.vault_parity, Probe::Value(true));
    assert_eq!(
        row.vault_reason,
        Some(format!("no remote to compare with (HEAD {})", short(&head)))
    );

    std::fs::write(vault.join("draft.md"), "untracked\n").unwrap();
    let p = parity(&runner(), &cfg).await.unwrap();
    assert_eq!(
        p.describe(),
        "1 uncommitted change; no remote to compare with"
    );

    cfg.remote = Some("origin".into());
    let row = judge(
        &host(cfg.clone()),
        facts(parity(&runner(), &cfg).await),
        now,
        &Clocked::wall_only(now),
    );
    assert_eq!(row.band, Band::Red);
    let reason = row.reason.unwrap();
    assert!(
        reason.starts_with("vault: no remote 'origin' to compare with") && !reason.contains("sync"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_remote_url_with_credentials_stays_out_of_the_reason() {
    let f = Fixture::new();
    // Port 1 on loopback: refused at once, so git fails fast with the URL in its message.
    let mut cfg = f.cfg(None);
    cfg.remote = Some("https://bob:s3cret@127.0.0.1:1/vault.git".into());
    let err = parity(&runner(), &cfg).await.unwrap_err();
    assert_eq!(err.asc, Asc::DEPENDENCY_UNAVAILABLE, "{err:?}");
    assert!(err.reason.starts_with("fatal: "), "{}", err.reason);
    assert!(
        !err.reason.contains("s3cret") && !err.reason.contains("bob"),
        "{}",
        err.reason
    );
}

#[tokio::test]
async fn not_a_repository_or_missing_is_a_failed_precondition() {
    let plain = tempfile::tempdir().unwrap();
    let cfg = |path: &Path| VaultParityConfig {
        path: path.to_string_lossy().into_owned(),
        remote: Some("origin".into()),
        branch: None,
    };
    let err = parity(&runner(), &cfg(plain.path())).await.unwrap_err();
    assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
    assert!(
        err.reason
            .starts_with("fatal: not a git repository (or any of the parent directories)"),
        "{}",
        err.reason
    );

    let missing = plain.path().join("no-such-vault");
    let err = parity(&runner(), &cfg(&missing)).await.unwrap_err();
    assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
    assert_eq!(
        err.reason,
        format!(
            "fatal: cannot change to '{}': No such file or directory",
            missing.display()
        )
    );
}

#[tokio::test]
async fn a_configured_branch_absent_on_the_remote_is_not_found() {
    let f = Fixture::new();
    let err = parity(&runner(), &f.cfg(Some("release")))
        .await
        .unwrap_err();
    assert_eq!(err.asc, Asc::NOT_FOUND);
    assert_eq!(err.reason, "branch release not on origin");
}

#[tokio::test]
async fn detached_head_needs_a_configured_branch() {
    let f = Fixture::new();
    git(&f.vault, &["checkout", "-q", "--detach"]);
    let err = f.parity().await.unwrap_err();
    assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
    assert_eq!(err.reason, "detached HEAD: set vault.branch");

    let p = parity(&runner(), &f.cfg(Some("main"))).await.unwrap();
    assert!(p.in_sync(), "{p:?}");
}

#[tokio::test]
async fn a_silent_remote_costs_the_runners_timeout() {
    let f = Fixture::new();
    // Accepts git:// connections and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut cfg = f.cfg(None);
    cfg.remote = Some(format!("git://127.0.0.1:{port}/vault.git"));
    let timeout = Duration::from_secs(1);
    // The probe's deadline ended it: git alone would wait on the silent daemon for minutes.
    let err = parity(&LocalRunner { timeout }, &cfg).await.unwrap_err();
    assert_eq!(err.asc, Asc::TIMEOUT, "{err:?}");
    assert!(err.reason.contains("no answer within 1s"), "{}", err.reason);
    drop(silent);
}

#[tokio::test]
async fn dubious_ownership_is_reported_not_worked_around() {
    // Only root can hand the checkout to another user (the canned-runner unit test in vault.rs
    // covers the wording alone).
    support::require_root("to chown the checkout to another user");
    let f = Fixture::new();
    let nobody = 65534;
    for entry in walk(&f.vault) {
        std::os::unix::fs::lchown(&entry, Some(nobody), Some(nobody)).unwrap();
    }
    let err = f.parity().await.unwrap_err();
    assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
    assert!(
        err.reason.starts_with(&format!(
            "fatal: detected dubious ownership in repository at '{}'",
            f.vault.display()
        )),
        "{}",
        err.reason
    );
    assert!(err.reason.contains("safe.directory"), "{}", err.reason);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

fn host(vault: VaultParityConfig) -> HostConfig {
    HostConfig {
        name: "laptop".into(),
        source: HostSource::Local,
        disk_path: "/".into(),
        services: Vec::new(),
        tunnels: Vec::new(),
        crons: Vec::new(),
        cron_dir: None,
        vault: Some(vault),
    }
}

fn facts(vault: Result<Parity, ProbeFailure>) -> HostFacts {
    HostFacts {
        ram: Ok(Ram {
            used_bytes: 4_000_000_000,
            total_bytes: 16_000_000_000,
        }),
        disk_free_bytes: Ok(100_000_000_000),
        services: Vec::new(),
        crons: Vec::new(),
        vault: Some(vault),
    }
}

#[tokio::test]
async fn judged_rows_are_green_in_sync_and_red_with_the_vaults_reason_when_dirty() {
    let f = Fixture::new();
    let now = Utc::now();

    let row = judge(
        &host(f.cfg(None)),
        facts(f.parity().await),
        now,
        &Clocked::wall_only(now),
    );
    assert_eq!(row.band, Band::Green, "{row:?}");
    assert_eq!(row.vault_parity, Probe::Value(true));
    assert_eq!(row.reason, None);

    std::fs::write(f.vault.join("draft.md"), "untracked\n").unwrap();
    let row = judge(
        &host(f.cfg(None)),
        facts(f.parity().await),
        now,
        &Clocked::wall_only(now),
    );
    assert_eq!(row.band, Band::Red, "{row:?}");
    assert_eq!(row.vault_parity, Probe::Value(false));
    assert_eq!(row.vault_reason.as_deref(), Some("1 uncommitted change"));
    assert_eq!(row.reason.as_deref(), Some("vault: 1 uncommitted change"));
    assert_eq!(row.status, Asc::INTEGRITY_CHECK_FAILED);
}

#[tokio::test]
async fn the_probe_never_writes_the_checkout() {
    let f = Fixture::new();
    // A tracked file whose stat data no longer matches the index, content unchanged: a plain
    // `git status` refreshes the index and rewrites .git/index (taking index.lock to do so).
    let touched = std::time::SystemTime::now() + Duration::from_secs(10);
    std::fs::File::options()
        .append(true)
        .open(f.vault.join("note.md"))
        .unwrap()
        .set_modified(touched)
        .unwrap();
    let index = f.vault.join(".git/index");
    let bytes = std::fs::read(&index).unwrap();
    let mtime = std::fs::metadata(&index).unwrap().modified().unwrap();

    let p = f.parity().await.unwrap();
    assert!(p.in_sync(), "{p:?}");
    assert_eq!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        mtime,
        ".git/index was rewritten"
    );
    assert!(
        std::fs::read(&index).unwrap() == bytes,
        ".git/index changed"
    );
    assert!(!f.vault.join(".git/index.lock").exists());
}
