//! Vault parity: the vault is a git checkout synced between hosts. It is in parity when its
//! HEAD equals the configured remote's head of the same branch (`git ls-remote`) and nothing is
//! uncommitted. Any git failure is an error with git's own reason, never a quiet "false".
//!
//! Git runs only through a [`Runner`], so the same code checks a vault here or over SSH.

use std::sync::LazyLock;

use fleetdash_model::Asc;
use regex::Regex;

use crate::config::VaultParityConfig;
use crate::config::defaults::VAULT_REMOTE;
use crate::net::ProbeFailure;

use super::command::{CommandOutput, ReadOnlyCommand, Runner};

/// Hashes are shown this short, as `git log --oneline` does.
const SHORT_HASH: usize = 7;

/// What git said about the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parity {
    pub head: String,
    /// Lines of `git status --porcelain`.
    pub uncommitted: usize,
    /// The remote's side; `None`: the checkout is watched alone (no remote configured, and no
    /// `origin` in the checkout).
    pub compared: Option<Compared>,
}

/// The remote a vault is compared with, and its head of the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// As configured (credentials stripped), or `origin` by default.
    pub remote: String,
    pub branch: String,
    pub remote_head: String,
}

impl Parity {
    pub fn in_sync(&self) -> bool {
        self.uncommitted == 0
            && self
                .compared
                .as_ref()
                .is_none_or(|c| c.remote_head == self.head)
    }

    /// Why it is out of sync, in words ("in sync" when it is not); a vault watched alone says
    /// it has no remote to compare with.
    pub fn describe(&self) -> String {
        let mut why = Vec::new();
        match self.uncommitted {
            0 => {}
            1 => why.push("1 uncommitted change".to_string()),
            n => why.push(format!("{n} uncommitted changes")),
        }
        match &self.compared {
            Some(c) if c.remote_head != self.head => why.push(format!(
                "HEAD {} differs from {}/{} {}",
                short(&self.head),
                c.remote,
                c.branch,
                short(&c.remote_head)
            )),
            Some(_) => {}
            None if why.is_empty() => why.push(format!(
                "no remote to compare with (HEAD {})",
                short(&self.head)
            )),
            None => why.push("no remote to compare with".into()),
        }
        if why.is_empty() {
            "in sync".into()
        } else {
            why.join("; ")
        }
    }

    /// What the snapshot's `vault_reason` says: why it is out of sync, or that it is watched
    /// alone; nothing for a vault in sync with its remote.
    pub fn reason(&self) -> Option<String> {
        (!self.in_sync() || self.compared.is_none()).then(|| self.describe())
    }
}

fn short(hash: &str) -> &str {
    hash.get(..SHORT_HASH).unwrap_or(hash)
}

/// Removes the user-info part (`user:pass@`, or a bare token `TOKEN@`) of every URL in `text`,
/// so a remote configured with credentials never reaches a reason.
pub fn strip_credentials(text: &str) -> String {
    // A scheme, then user-info up to the first `@` before the host; `/`, `@` and whitespace
    // cannot be inside user-info unescaped, so the match never runs into the path.
    static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s'\x22]+@").expect("valid regex")
    });
    USERINFO.replace_all(text, "$scheme").into_owned()
}

/// Git's own reason: its first `fatal:`/`error:` line (warnings such as "redirecting to" come
/// first sometimes), else its first line; credentials stripped, then redacted and only then cut
/// (a cut could leave half a secret no shape matches; issue 21). The refusal of the askpass
/// program the probe sets (`/bin/false`) is noise: the line after it says what git wanted.
fn git_reason(out: &CommandOutput) -> String {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| !l.starts_with("error: unable to read askpass response from"))
        .collect();
    let fatal = lines
        .iter()
        .position(|l| l.starts_with("fatal:") || l.starts_with("error:"));
    let line: String = match fatal {
        // Over an ssh remote git only says it could not read; ssh's own line before it says
        // why ("Host key verification failed.", "Permission denied (publickey).").
        Some(i) if i > 0 && lines[i].starts_with("fatal: Could not read from remote") => {
            format!("{}; {}", lines[i - 1], lines[i])
        }
        Some(i) => lines[i].to_string(),
        None => out.first_error_line(),
    };
    crate::text::clean(&strip_credentials(&line), 300)
}

/// A failure that happened before or around git (timeout, SSH down): its own code, a clean
/// reason naming the step.
fn runner_failure(step: &str, f: ProbeFailure) -> ProbeFailure {
    ProbeFailure {
        reason: strip_credentials(&f.reason),
        ..f
    }
    .context(step)
}

/// Why a local git command failed, for the checkout itself (not the remote).
fn checkout_failure(out: &CommandOutput) -> ProbeFailure {
    let reason = git_reason(out);
    if reason.contains("dubious ownership") {
        // Git's safe.directory check: the checkout belongs to another user. Said plainly, never
        // worked around here: trusting the directory is the operator's decision.
        return ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            format!(
                "{reason} (the checkout belongs to another user: add it to safe.directory in \
                 the probing user's git config, or probe as its owner)"
            ),
        );
    }
    ProbeFailure::new(Asc::FAILED_PRECONDITION, reason)
}

/// Why `git ls-remote` failed: the remote is missing or unreachable, or refused us.
fn remote_failure(out: &CommandOutput) -> ProbeFailure {
    let reason = git_reason(out);
    let lower = reason.to_ascii_lowercase();
    let refused = [
        "authentication failed",
        "permission denied",
        "could not read username",
    ]
    .iter()
    .any(|p| lower.contains(p));
    let asc = if lower.contains("host key verification failed") {
        Asc::INTEGRITY_CHECK_FAILED
    } else if refused {
        Asc::PERMISSION_DENIED
    } else {
        Asc::DEPENDENCY_UNAVAILABLE
    };
    ProbeFailure::new(asc, reason)
}

fn is_hash(s: &str) -> bool {
    s.len() >= SHORT_HASH && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The parity of the host's vault when it has one configured; `None` when it has none.
pub async fn configured_parity(
    runner: &dyn Runner,
    cfg: Option<&VaultParityConfig>,
) -> Option<Result<Parity, ProbeFailure>> {
    match cfg {
        Some(cfg) => Some(parity(runner, cfg).await),
        None => None,
    }
}

/// Whether `remote` is a remote's name (not a URL or a path, which git takes as they are).
fn is_name(remote: &str) -> bool {
    !remote.contains([':', '/', '\\']) && !remote.starts_with('.')
}

/// The configured remote missing from the checkout: said as such, with both ways out, never
/// git's "does not appear to be a git repository" (shown as "out of sync" before issue 44).
pub fn missing_remote(name: &str) -> String {
    format!(
        "no remote '{name}' to compare with: add it (git remote add {name} URL in the \
         checkout), or remove vault.remote to watch the checkout alone"
    )
}

/// Asks git, through `runner`, about the checkout at `cfg.path`.
pub async fn parity(runner: &dyn Runner, cfg: &VaultParityConfig) -> Result<Parity, ProbeFailure> {
    let path = cfg.path.as_str();

    let out = runner
        .run(&ReadOnlyCommand::GitHead(path))
        .await
        .map_err(|f| runner_failure("git rev-parse", f))?;
    if !out.success() {
        return Err(checkout_failure(&out));
    }
    let head = out.stdout.trim().to_string();
    if !is_hash(&head) {
        return Err(ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!(
                "git rev-parse HEAD printed no commit hash: {:?}",
                crate::text::clean(&head, 60)
            ),
        ));
    }

    let out = runner
        .run(&ReadOnlyCommand::GitStatus(path))
        .await
        .map_err(|f| runner_failure("git status", f))?;
    if !out.success() {
        return Err(checkout_failure(&out));
    }
    let uncommitted = out.stdout.lines().filter(|l| !l.trim().is_empty()).count();

    let Some(remote) = remote_of(runner, cfg).await? else {
        return Ok(Parity {
            head,
            uncommitted,
            compared: None,
        });
    };
    let shown = strip_credentials(&remote);

    let branch = match &cfg.branch {
        Some(b) => b.clone(),
        None => {
            let out = runner
                .run(&ReadOnlyCommand::GitBranch(path))
                .await
                .map_err(|f| runner_failure("git symbolic-ref", f))?;
            if !out.success() {
                let reason = git_reason(&out);
                if reason.contains("not a symbolic ref") {
                    return Err(ProbeFailure::new(
                        Asc::FAILED_PRECONDITION,
                        "detached HEAD: set vault.branch",
                    ));
                }
                return Err(checkout_failure(&out));
            }
            out.stdout.trim().to_string()
        }
    };

    let reference = format!("refs/heads/{branch}");
    let out = runner
        .run(&ReadOnlyCommand::GitLsRemote {
            path,
            remote: &remote,
            reference: &reference,
        })
        .await
        .map_err(|f| runner_failure(&format!("git ls-remote {shown}"), f))?;
    if !out.success() {
        return Err(remote_failure(&out));
    }
    // ls-remote matches patterns by their tail (`refs/heads/x/refs/heads/main` too): only the
    // exact ref counts.
    let remote_head = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(_, r)| r.trim() == reference)
        .map(|(hash, _)| hash.trim().to_string())
        .ok_or_else(|| {
            ProbeFailure::new(Asc::NOT_FOUND, format!("branch {branch} not on {shown}"))
        })?;

    Ok(Parity {
        head,
        uncommitted,
        compared: Some(Compared {
            remote: shown,
            branch,
            remote_head,
        }),
    })
}

/// The remote to compare with: the configured one (a name the checkout must have, or a URL),
/// else `origin` when the checkout has it; `None`: watched alone.
async fn remote_of(
    runner: &dyn Runner,
    cfg: &VaultParityConfig,
) -> Result<Option<String>, ProbeFailure> {
    if let Some(remote) = cfg.remote.as_deref().filter(|r| !is_name(r)) {
        return Ok(Some(remote.to_string()));
    }
    let out = runner
        .run(&ReadOnlyCommand::GitRemotes(&cfg.path))
        .await
        .map_err(|f| runner_failure("git remote", f))?;
    if !out.success() {
        return Err(checkout_failure(&out));
    }
    let has = |name: &str| out.stdout.lines().any(|l| l.trim() == name);
    match cfg.remote.as_deref() {
        Some(name) if has(name) => Ok(Some(name.to_string())),
        Some(name) => Err(ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            missing_remote(name),
        )),
        None if has(VAULT_REMOTE) => Ok(Some(VAULT_REMOTE.to_string())),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashMap;
    use std::sync::Mutex;

    use async_trait::async_trait;

    fn parity(head: &str, remote_head: &str, uncommitted: usize) -> Parity {
        Parity {
            head: head.into(),
            uncommitted,
            compared: Some(Compared {
                remote: "origin".into(),
                branch: "main".into(),
                remote_head: remote_head.into(),
            }),
        }
    }

    const A: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
    const B: &str = "5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80";

    #[test]
    fn describe_names_what_is_out_of_sync() {
        assert!(parity(A, A, 0).in_sync());
        assert_eq!(parity(A, A, 0).describe(), "in sync");
        assert_eq!(parity(A, A, 1).describe(), "1 uncommitted change");
        assert_eq!(parity(A, A, 3).describe(), "3 uncommitted changes");
        assert_eq!(
            parity(A, B, 0).describe(),
            "HEAD 1a2b3c4 differs from origin/main 5d6e7f8"
        );
        assert_eq!(
            parity(A, B, 2).describe(),
            "2 uncommitted changes; HEAD 1a2b3c4 differs from origin/main 5d6e7f8"
        );
        assert!(!parity(A, B, 0).in_sync());
        assert!(!parity(A, A, 1).in_sync());
        assert_eq!(parity(A, A, 0).reason(), None);
        // Watched alone: in sync when clean, and it says it has no remote to compare with.
        let alone = |uncommitted| Parity {
            head: A.into(),
            uncommitted,
            compared: None,
        };
        assert!(alone(0).in_sync());
        assert_eq!(
            alone(0).reason().as_deref(),
            Some("no remote to compare with (HEAD 1a2b3c4)")
        );
        assert!(!alone(2).in_sync());
        assert_eq!(
            alone(2).describe(),
            "2 uncommitted changes; no remote to compare with"
        );
    }

    /// Was: git's line was cut to 300 characters before anything redacted it, so a key a
    /// remote put in its error message across the cut left a piece no secret shape matches,
    /// and that piece reached the snapshot (issue 21).
    #[test]
    fn a_key_straddling_the_reasons_bound_is_redacted_before_the_cut() {
        let key = "7AKIAPLANTED7G1UQ4XZ2";
        // "fatal: remote error: " is 21 characters; the key starts at character 284: 16 of it
        // fit before the cut.
        let stderr = format!("fatal: remote error: {} {key}\n", "e".repeat(262));
        let out = CommandOutput {
            exit_code: Some(128),
            stdout: String::new(),
            stderr,
        };
        let reason = remote_failure(&out).reason;
        assert!(
            !reason.contains("PLANTED") && !reason.contains("AKIA"),
            "{reason}"
        );
        assert!(reason.contains(crate::redact::REDACTED), "{reason}");
    }

    #[test]
    fn credentials_never_survive_in_a_url() {
        assert_eq!(
            strip_credentials("fatal: unable to access 'https://bob:s3cret@git.example/v.git/': x"),
            "fatal: unable to access 'https://git.example/v.git/': x"
        );
        assert_eq!(
            strip_credentials("https://ghp_TOKEN@github.com/a/b and ssh://git:pw@h:22/r"),
            "https://github.com/a/b and ssh://h:22/r"
        );
        // Nothing to strip: left as is (an scp-like remote has no password).
        for plain in [
            "fatal: 'origin' does not appear to be a git repository",
            "git@github.com:a/b.git",
            "https://github.com/a/b@v1",
        ] {
            assert_eq!(strip_credentials(plain), plain);
        }
    }

    /// Answers each git subcommand with a canned output, as a host over SSH would.
    struct Canned(Mutex<HashMap<&'static str, Result<CommandOutput, ProbeFailure>>>);

    impl Canned {
        fn new(answers: &[(&'static str, Result<CommandOutput, ProbeFailure>)]) -> Canned {
            Canned(Mutex::new(answers.iter().cloned().collect()))
        }
    }

    fn out(code: i32, stdout: &str, stderr: &str) -> Result<CommandOutput, ProbeFailure> {
        Ok(CommandOutput::exited(code, stdout, stderr))
    }

    #[async_trait]
    impl Runner for Canned {
        async fn run(&self, c: &ReadOnlyCommand<'_>) -> Result<CommandOutput, ProbeFailure> {
            let key = match c {
                ReadOnlyCommand::GitHead(_) => "head",
                ReadOnlyCommand::GitBranch(_) => "branch",
                ReadOnlyCommand::GitStatus(_) => "status",
                ReadOnlyCommand::GitLsRemote { .. } => "ls-remote",
                ReadOnlyCommand::GitRemotes(_) => "remotes",
                other => panic!("vault parity ran {other:?}"),
            };
            self.0.lock().unwrap()[key].clone()
        }
    }

    fn cfg(remote: &str, branch: Option<&str>) -> VaultParityConfig {
        VaultParityConfig {
            path: "/srv/vault".into(),
            remote: Some(remote.into()),
            branch: branch.map(str::to_string),
        }
    }

    fn ok_head() -> (&'static str, Result<CommandOutput, ProbeFailure>) {
        ("head", out(0, &format!("{A}\n"), ""))
    }

    fn origin() -> (&'static str, Result<CommandOutput, ProbeFailure>) {
        ("remotes", out(0, "origin\n", ""))
    }

    /// Issue 44: a configured remote the checkout lacks is said as such (never "out of sync");
    /// none configured and no `origin`: the checkout is watched alone.
    #[tokio::test]
    async fn a_missing_remote_is_said_and_none_configured_is_watched_alone() {
        let clean = ("status", out(0, "", ""));
        let none = ("remotes", out(0, "", ""));
        let runner = Canned::new(&[ok_head(), clean.clone(), none.clone()]);
        let err = super::parity(&runner, &cfg("origin", None))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
        assert!(
            err.reason
                .starts_with("no remote 'origin' to compare with: add it"),
            "{}",
            err.reason
        );
        let mut alone = cfg("origin", None);
        alone.remote = None;
        let p = super::parity(&runner, &alone).await.unwrap();
        assert_eq!(p.compared, None);
        assert!(p.in_sync());
        // With `origin` in the checkout, no `remote` compares with it, as before.
        let runner = Canned::new(&[
            ok_head(),
            clean,
            origin(),
            ("branch", out(0, "main\n", "")),
            ("ls-remote", out(0, &format!("{B}\trefs/heads/main\n"), "")),
        ]);
        let p = super::parity(&runner, &alone).await.unwrap();
        assert_eq!(p.compared.as_ref().unwrap().remote, "origin");
        assert!(!p.in_sync());
    }

    #[tokio::test]
    async fn dubious_ownership_is_said_plainly() {
        let runner = Canned::new(&[(
            "head",
            out(
                128,
                "",
                "fatal: detected dubious ownership in repository at '/srv/vault'\nTo add an \
                 exception for this directory, call:\n",
            ),
        )]);
        let err = super::parity(&runner, &cfg("origin", None))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
        assert!(
            err.reason.starts_with(
                "fatal: detected dubious ownership in repository at '/srv/vault' (the checkout \
                 belongs to another user"
            ),
            "{}",
            err.reason
        );
    }

    #[tokio::test]
    async fn detached_head_without_a_branch_asks_for_one() {
        let runner = Canned::new(&[
            ok_head(),
            ("status", out(0, "", "")),
            origin(),
            (
                "branch",
                out(128, "", "fatal: ref HEAD is not a symbolic ref\n"),
            ),
        ]);
        let err = super::parity(&runner, &cfg("origin", None))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::FAILED_PRECONDITION);
        assert_eq!(err.reason, "detached HEAD: set vault.branch");
    }

    #[tokio::test]
    async fn a_remote_with_credentials_never_reaches_a_reason() {
        let remote = "https://bob:s3cret@git.example/v.git";
        let status = ("status", out(0, "", ""));
        let unreachable = Canned::new(&[
            ok_head(),
            status.clone(),
            (
                "ls-remote",
                out(
                    128,
                    "",
                    "warning: redirecting\nfatal: unable to access 'https://bob:s3cret@git.example/v.git/': Could not resolve host\n",
                ),
            ),
        ]);
        let err = super::parity(&unreachable, &cfg(remote, Some("main")))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::DEPENDENCY_UNAVAILABLE);
        assert_eq!(
            err.reason,
            "fatal: unable to access 'https://git.example/v.git/': Could not resolve host"
        );

        let no_branch = Canned::new(&[ok_head(), status.clone(), ("ls-remote", out(0, "", ""))]);
        let err = super::parity(&no_branch, &cfg(remote, Some("main")))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::NOT_FOUND);
        assert_eq!(err.reason, "branch main not on https://git.example/v.git");

        let timed_out = Canned::new(&[
            ok_head(),
            status,
            (
                "ls-remote",
                Err(ProbeFailure::new(Asc::TIMEOUT, "git: no answer within 20s")),
            ),
        ]);
        let err = super::parity(&timed_out, &cfg(remote, Some("main")))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::TIMEOUT);
        assert_eq!(
            err.reason,
            "git ls-remote https://git.example/v.git: git: no answer within 20s"
        );
    }

    #[tokio::test]
    async fn over_an_ssh_remote_the_reason_is_sshs_own_line() {
        for (ssh_says, asc) in [
            ("Host key verification failed.", Asc::INTEGRITY_CHECK_FAILED),
            (
                "git@lab: Permission denied (publickey).",
                Asc::PERMISSION_DENIED,
            ),
            (
                "ssh: connect to host lab port 22: Connection refused",
                Asc::DEPENDENCY_UNAVAILABLE,
            ),
        ] {
            let stderr = format!(
                "{ssh_says}\nfatal: Could not read from remote repository.\n\nPlease make sure \
                 you have the correct access rights\nand the repository exists.\n"
            );
            let runner = Canned::new(&[
                ok_head(),
                ("status", out(0, "", "")),
                ("ls-remote", out(128, "", &stderr)),
            ]);
            let err = super::parity(&runner, &cfg("git@lab:vault.git", Some("main")))
                .await
                .unwrap_err();
            assert_eq!(err.asc, asc, "{ssh_says}");
            assert!(
                err.reason.contains(&format!(
                    "{ssh_says}; fatal: Could not read from remote repository."
                )),
                "{}",
                err.reason
            );
        }
    }

    #[tokio::test]
    async fn a_refused_askpass_is_not_the_reason() {
        let runner = Canned::new(&[
            ok_head(),
            ("status", out(0, "", "")),
            (
                "ls-remote",
                out(
                    128,
                    "",
                    "error: unable to read askpass response from '/bin/false'\nfatal: could not \
                     read Username for 'https://git.example': terminal prompts disabled\n",
                ),
            ),
        ]);
        let err = super::parity(&runner, &cfg("https://git.example/v.git", Some("main")))
            .await
            .unwrap_err();
        assert_eq!(err.asc, Asc::PERMISSION_DENIED);
        assert_eq!(
            err.reason,
            "fatal: could not read Username for 'https://git.example': terminal prompts disabled"
        );
    }

    #[tokio::test]
    async fn only_the_exact_ref_counts() {
        let runner = Canned::new(&[
            ok_head(),
            origin(),
            ("branch", out(0, "main\n", "")),
            ("status", out(0, " M a.md\n?? b.md\n", "")),
            (
                "ls-remote",
                out(
                    0,
                    &format!("{B}\trefs/heads/x/refs/heads/main\n{A}\trefs/heads/main\n"),
                    "",
                ),
            ),
        ]);
        let p = super::parity(&runner, &cfg("origin", None)).await.unwrap();
        assert_eq!(p.head, A);
        assert_eq!(p.compared.as_ref().unwrap().remote_head, A);
        assert_eq!(p.uncommitted, 2);
        assert_eq!(p.describe(), "2 uncommitted changes");
    }
}
