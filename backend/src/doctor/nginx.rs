//! The nginx site in front of the page: it serves this config's output folder, asks for a
//! password from a sound htpasswd, and `nginx -t` accepts the whole configuration.

use std::path::{Path, PathBuf};

use fleetdash_model::Asc;

use super::Finding;
use crate::config::Config;

/// Where Debian's nginx keeps its sites.
const SITE_DIRS: &[&str] = &["/etc/nginx/sites-enabled", "/etc/nginx/conf.d"];
const NGINX: &str = "/usr/sbin/nginx";

pub fn site(config: &Config, given: Option<&Path>) -> Vec<Finding> {
    let found = match given {
        Some(path) => Some(path.to_path_buf()),
        None => find_site(config),
    };
    let Some(path) = found else {
        return vec![Finding::ok(
            "nginx",
            "no site",
            "no nginx site of fleetdash found under /etc/nginx (fine with `fleetdash serve`; \
             name one with --nginx-site FILE)",
        )];
    };
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            return vec![Finding::fail(
                "nginx",
                shown,
                format!("cannot read it: {e}"),
                "run the doctor as root, or name the site with --nginx-site",
                Asc::PERMISSION_DENIED,
            )];
        }
    };
    let mut out = Vec::new();
    let want = config.output_dir.join("status.json");
    let aliases = directive_values(&text, "alias");
    match aliases.iter().find(|a| a.ends_with("status.json")) {
        Some(alias) if same_path(Path::new(alias), &want) => out.push(Finding::ok(
            "nginx",
            shown.clone(),
            format!("/api/status.json is {alias}"),
        )),
        Some(alias) => out.push(Finding::fail(
            "nginx",
            shown.clone(),
            format!(
                "/api/status.json is {alias}, but the collector writes {}",
                want.display()
            ),
            "make the site's OUTPUT_DIR the config's output_dir (nginx/README.md)",
            Asc::FAILED_PRECONDITION,
        )),
        None => out.push(Finding::warn(
            "nginx",
            shown.clone(),
            "the site has no `alias .../status.json`: is it the repository's nginx/fleetdash.conf?",
            "start from nginx/fleetdash.conf (nginx/README.md)",
            Asc::FAILED_PRECONDITION,
        )),
    }
    for root in directive_values(&text, "root") {
        let root = PathBuf::from(root);
        if same_path(&config.state_dir, &root)
            || normal(&config.state_dir).starts_with(normal(&root))
        {
            out.push(Finding::fail(
                "exposure",
                config.state_dir.display().to_string(),
                format!(
                    "the state folder is under the site's root {}",
                    root.display()
                ),
                "give the page (root) and the state folders of their own",
                Asc::PERMISSION_DENIED,
            ));
        }
    }
    match directive_values(&text, "auth_basic_user_file").first() {
        Some(file) => {
            let mut f = super::local::htpasswd(Path::new(file), None);
            f.subject = format!("{} (auth_basic_user_file of {shown})", f.subject);
            out.push(f);
        }
        None => out.push(Finding::fail(
            "nginx",
            shown.clone(),
            "no auth_basic_user_file: the page would be open to anyone who reaches it",
            "keep the site's auth_basic and auth_basic_user_file (nginx/fleetdash.conf)",
            Asc::PERMISSION_DENIED,
        )),
    }
    out.push(nginx_t());
    out
}

/// The first site under /etc/nginx naming the output folder, else mentioning fleetdash.
fn find_site(config: &Config) -> Option<PathBuf> {
    let mut sites: Vec<(PathBuf, String)> = Vec::new();
    for dir in SITE_DIRS {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                sites.push((entry.path(), text));
            }
        }
    }
    sites.sort();
    let out = config.output_dir.display().to_string();
    sites
        .iter()
        .find(|(_, t)| t.contains(&out))
        .or_else(|| sites.iter().find(|(_, t)| t.contains("fleetdash")))
        .map(|(p, _)| p.clone())
}

/// The values of `name` directives (`alias "/x/status.json";` → `/x/status.json`), comments
/// left out.
fn directive_values(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix(name))
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .map(|rest| {
            rest.trim()
                .trim_end_matches(';')
                .trim()
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

fn normal(p: &Path) -> PathBuf {
    std::path::absolute(p)
        .ok()
        .and_then(|a| a.canonicalize().ok().or(Some(a)))
        .unwrap_or_else(|| p.to_path_buf())
}

fn same_path(a: &Path, b: &Path) -> bool {
    normal(a) == normal(b)
}

/// `nginx -t`: the whole configuration, as nginx reads it at reload.
fn nginx_t() -> Finding {
    if !Path::new(NGINX).exists() {
        return Finding::ok("nginx", "nginx -t", "nginx is not installed here");
    }
    match std::process::Command::new(NGINX).arg("-t").output() {
        Ok(out) if out.status.success() => {
            Finding::ok("nginx", "nginx -t", "the configuration is valid")
        }
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            let last = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Finding::fail(
                "nginx",
                "nginx -t",
                crate::text::clean(last, 300),
                "fix what nginx names, then `systemctl reload nginx` (run the doctor as root: \
                 nginx -t reads root-only files)",
                Asc::FAILED_PRECONDITION,
            )
        }
        Err(e) => Finding::warn(
            "nginx",
            "nginx -t",
            format!("cannot run {NGINX}: {e}"),
            "run the doctor as root",
            Asc::PERMISSION_DENIED,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Level, loaded};

    #[test]
    fn a_site_serving_another_output_folder_fails_and_the_right_one_passes() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = loaded(dir.path(), "");
        let htpasswd = dir.path().join("htpasswd");
        std::fs::write(
            &htpasswd,
            format!("young:{}\n", bcrypt::hash("pw", 4).unwrap()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&htpasswd, std::fs::Permissions::from_mode(0o640)).unwrap();
        let site = dir.path().join("site.conf");
        let template = include_str!("../../../nginx/fleetdash.conf")
            .replace("{{LISTEN}}", "127.0.0.1:8080")
            .replace("{{HTPASSWD}}", &htpasswd.display().to_string())
            .replace("{{DIST_DIR}}", "/srv/fleetdash/page");
        let good = template.replace("{{OUTPUT_DIR}}", &config.output_dir.display().to_string());
        std::fs::write(&site, &good).unwrap();
        let found = site_checks(&config, &site);
        assert!(found.iter().all(|f| f.level == Level::Ok), "{found:#?}");
        std::fs::write(
            &site,
            template.replace("{{OUTPUT_DIR}}", "/var/www/elsewhere"),
        )
        .unwrap();
        let found = site_checks(&config, &site);
        let wrong = found
            .iter()
            .find(|f| f.level == Level::Fail)
            .expect("a failure");
        assert!(
            wrong.detail.contains("/var/www/elsewhere/status.json"),
            "{wrong:?}"
        );
    }

    /// The site's checks without `nginx -t` (which judges the host's own nginx).
    fn site_checks(config: &Config, site_path: &Path) -> Vec<Finding> {
        let mut found = site(config, Some(site_path));
        found.retain(|f| f.subject != "nginx -t");
        found
    }
}
