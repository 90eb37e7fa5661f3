//! The page, built into the binary. `page/` at the repository's root is what
//! `scripts/build-frontend` builds (trunk's `index.html` and content-hashed assets, each with
//! its zopfli `.gz` and its brotli `.br`), committed and checked by `scripts/test` to be the build of the source byte
//! for byte. It is embedded here, in debug builds too (the tests see what ships), so `serve`
//! and `demo` need no frontend tools and no files beside the binary; `fleetdash page export
//! DIR` writes it out for nginx.
//!
//! The page is the build of the repository's source, never data of the fleet: it does not pass
//! the redaction gate (which would take its integrity hashes for tokens).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use include_dir::{Dir, include_dir};
use regex::Regex;

use crate::write::atomic;

static PAGE: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../page");

// A checkout without the built page does not build, rather than give a binary without a page.
const _: &[u8] = include_bytes!("../../page/index.html");

/// The page's entry point, served at `/`.
pub const INDEX: &str = "index.html";

/// The page's service worker (`frontend/sw.js`, issue 46), which index.html registers: not
/// content-hashed (browsers check it for a new build on each visit, so it keeps its name and is
/// served `no-cache`); each build writes its own id and files into it.
pub const SERVICE_WORKER: &str = "sw.js";

/// trunk's content-hashed file names (`fleetdash-frontend-<hash>.js`, `..._bg.wasm`,
/// `style-<hash>.css`): the hash is a seahash in lower hex, not zero-padded. The same pattern
/// is the `immutable` location of `nginx/fleetdash.conf`.
pub const HASHED_ASSET: &str = r"-[0-9a-f]{10,16}(_bg)?\.(js|wasm|css)$";

static HASHED: LazyLock<Regex> = LazyLock::new(|| Regex::new(HASHED_ASSET).expect("valid"));

/// Whether a URL path names one of trunk's content-hashed assets ([`HASHED_ASSET`]).
pub fn is_hashed_asset(path: &str) -> bool {
    HASHED.is_match(path)
}

/// The web app manifest (issue 46: the page installable as a phone app), beside index.html,
/// which links it. Not hashed: the browser finds it by this name.
pub const MANIFEST: &str = "manifest.webmanifest";

/// The manifest's icons (`scripts/make-icons` draws them): not hashed either, the manifest
/// names them. The same pattern is in the Cache-Control map of `nginx/fleetdash.conf`.
pub const ICON: &str = r"/icon-[0-9a-z-]+\.png$";

static ICONS: LazyLock<Regex> = LazyLock::new(|| Regex::new(ICON).expect("valid"));

/// Whether a URL path names one of the manifest's icons ([`ICON`]).
pub fn is_icon(path: &str) -> bool {
    ICONS.is_match(path)
}

/// The suffix of a file's pre-compressed copy (gzip format), beside it in the page.
pub const GZ: &str = ".gz";

/// The suffix of a file's other pre-compressed copy (brotli), beside it in the page.
pub const BR: &str = ".br";

/// One file of the embedded page.
#[derive(Clone, Copy)]
pub struct PageFile {
    pub name: &'static str,
    pub bytes: &'static [u8],
}

/// The page's file called `name` (flat: the page has no folders), `.gz` and `.br` copies
/// included.
pub fn file(name: &str) -> Option<PageFile> {
    files().find(|f| f.name == name)
}

/// The page's index.html as the shell the collector writes the first HTML from (issue 46,
/// [`crate::write::first_html`]).
pub fn first_html_shell() -> Result<crate::write::first_html::Shell> {
    let index = file(INDEX).context("the page built in has no index.html")?;
    crate::write::first_html::Shell::of(index.bytes)
}

/// Every file of the page, by name.
pub fn files() -> impl Iterator<Item = PageFile> {
    PAGE.files().filter_map(|f| {
        Some(PageFile {
            name: f.path().to_str()?,
            bytes: f.contents(),
        })
    })
}

/// A strong ETag for each file: its content's SHA-256, cut (the bytes never change under a
/// running binary; computed once, at the first request).
pub fn etag(name: &str) -> Option<&'static str> {
    static TAGS: LazyLock<HashMap<&'static str, String>> = LazyLock::new(|| {
        files()
            .map(|f| {
                let digest = ring::digest::digest(&ring::digest::SHA256, f.bytes);
                let hex: String = digest.as_ref()[..12]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                (f.name, format!("\"{hex}\""))
            })
            .collect()
    });
    TAGS.get(name).map(String::as_str)
}

/// Whether `name` is the name of a page file: `index.html`, the manifest, the service worker or
/// a content-hashed asset, or the `.gz` or `.br` of one, or an icon. An export folder holding
/// anything else is refused.
pub fn is_page_name(name: &str) -> bool {
    let plain = name
        .strip_suffix(GZ)
        .or_else(|| name.strip_suffix(BR))
        .unwrap_or(name);
    plain == INDEX
        || plain == MANIFEST
        || plain == SERVICE_WORKER
        || is_hashed_asset(&format!("/{plain}"))
        || is_icon(&format!("/{name}"))
}

/// What [`export`] did, by file name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Exported {
    /// Written (new, or replaced with other bytes).
    pub written: Vec<String>,
    /// Already there with the same bytes: left alone.
    pub unchanged: Vec<String>,
    /// An earlier export's files that the page no longer has (old hashed assets).
    pub removed: Vec<String>,
}

/// Writes the page into `dir` for nginx's `root` (`nginx/fleetdash.conf`). `dir` may be missing
/// (it is created), empty, or hold an earlier export, which is replaced: the assets first, then
/// `index.html` (each file atomically), so a server reading `dir` meanwhile never serves an
/// `index.html` naming an asset that is not there; then the earlier export's assets that the
/// page no longer names are removed. A `dir` holding anything else (a file that is not a page
/// file, a folder, a dotfile) is refused before anything is written, naming them: export never
/// mixes the page into a folder of other things, nor deletes anything of theirs.
///
/// Blocking (fsync): run it off the async workers.
pub fn export(dir: &Path) -> Result<Exported> {
    let present = page_files_in(dir)?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create it", dir.display()))?;
    let mut done = Exported::default();
    // index.html (and its .gz and .br) last: it names the assets, which must be there before it.
    let mut order: Vec<PageFile> = files().collect();
    order.sort_by_key(|f| (f.name.starts_with(INDEX), f.name == INDEX, f.name));
    for f in order {
        let target = dir.join(f.name);
        if present.contains(f.name) && std::fs::read(&target).is_ok_and(|b| b == f.bytes) {
            done.unchanged.push(f.name.to_string());
            continue;
        }
        atomic::write(&target, f.bytes)
            .with_context(|| format!("{}: cannot write {}", dir.display(), f.name))?;
        done.written.push(f.name.to_string());
    }
    for old in present.iter().filter(|n| file(n).is_none()) {
        std::fs::remove_file(dir.join(old))
            .with_context(|| format!("{}: cannot remove the earlier {old}", dir.display()))?;
        done.removed.push(old.clone());
    }
    Ok(done)
}

/// The page files already in `dir` (none when it does not exist); an error naming `dir` and
/// what else it holds when it holds anything but page files (and our own temp files, which the
/// atomic writer sweeps).
fn page_files_in(dir: &Path) -> Result<BTreeSet<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) if dir.exists() && !dir.is_dir() => {
            bail!("{}: not a folder ({e})", dir.display())
        }
        Err(e) => bail!("{}: cannot read it: {e}", dir.display()),
    };
    let mut pages = BTreeSet::new();
    let mut others = BTreeSet::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot read it", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && is_page_name(&name) {
            pages.insert(name);
        } else if !(regular && atomic::is_our_temp_name(&name)) {
            others.insert(name);
        }
    }
    if !others.is_empty() {
        const SHOWN: usize = 5;
        let mut list: Vec<&str> = others.iter().take(SHOWN).map(String::as_str).collect();
        if others.len() > SHOWN {
            list.push("...");
        }
        bail!(
            "{}: holds {} that {} not part of a page ({}); export writes only into a missing or \
             empty folder or an earlier export, and changed nothing",
            dir.display(),
            plural(others.len(), "entry", "entries"),
            if others.len() == 1 { "is" } else { "are" },
            list.join(", ")
        );
    }
    Ok(pages)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page built into this binary has a place for the first HTML's header (issue 46).
    #[test]
    fn the_built_page_is_a_first_html_shell() {
        first_html_shell().unwrap();
    }

    #[test]
    fn hashed_asset_names_are_recognised() {
        for name in [
            "/fleetdash-frontend-4f1c2a9be07d3e56.js",
            "/fleetdash-frontend-4f1c2a9be07d3e56_bg.wasm",
            "/style-0b3a9e2f1c4d5e6f.css",
            "/style-b3a9e2f1c4d5e6f.css",
        ] {
            assert!(HASHED.is_match(name), "{name}");
        }
        for name in [
            "/index.html",
            "/style.css",
            "/fleetdash-frontend.js",
            "/a-cafe.js",
        ] {
            assert!(!HASHED.is_match(name), "{name}");
        }
    }

    /// What the page's index.html loads, and the icons its manifest names: every file they
    /// name is embedded, each text file with its .gz and its .br (a PNG is compressed already),
    /// and nothing else is (a file nothing names would be a leftover of another build). The
    /// service worker it registers keeps exactly the hashed assets.
    #[test]
    fn the_embedded_page_is_whole() {
        let text = |name| std::str::from_utf8(file(name).expect("embedded").bytes).unwrap();
        let index = text(INDEX);
        let manifest: serde_json::Value = serde_json::from_str(text(MANIFEST)).unwrap();
        let icons: Vec<&str> = manifest["icons"]
            .as_array()
            .expect("the manifest has icons")
            .iter()
            .map(|i| i["src"].as_str().unwrap())
            .collect();
        let named: BTreeSet<&str> = files()
            .map(|f| f.name)
            .filter(|n| !n.ends_with(GZ) && !n.ends_with(BR) && *n != INDEX)
            .filter(|n| *n != SERVICE_WORKER)
            .collect();
        assert!(
            index.contains(&format!("register(\"{SERVICE_WORKER}\")")),
            "index.html registers the service worker"
        );
        let worker = std::str::from_utf8(file(SERVICE_WORKER).expect("sw.js is embedded").bytes)
            .expect("sw.js is UTF-8");
        let shell = worker
            .lines()
            .find_map(|l| l.strip_prefix("const SHELL = ["))
            .expect("sw.js names its shell");
        let kept: BTreeSet<&str> = shell
            .trim_end_matches("];")
            .split(", ")
            .map(|f| f.trim_matches('"'))
            .filter(|f| *f != "./")
            .collect();
        let hashed: BTreeSet<&str> = named
            .iter()
            .copied()
            .filter(|n| is_hashed_asset(&format!("/{n}")))
            .collect();
        assert_eq!(
            kept, hashed,
            "sw.js keeps every hashed asset of the page, and only those"
        );
        assert!(
            !worker.contains("@BUILD@"),
            "the build wrote its id into sw.js"
        );
        assert!(
            named.iter().any(|n| n.ends_with("_bg.wasm")),
            "no wasm: {named:?}"
        );
        assert!(
            index.contains(&format!("href={MANIFEST} rel=manifest")),
            "index.html does not link the manifest"
        );
        for name in &named {
            assert!(
                index.contains(&format!("/{name}")) || *name == MANIFEST || icons.contains(name),
                "{name} is embedded but neither index.html nor the manifest names it"
            );
        }
        for icon in &icons {
            assert!(
                named.contains(icon),
                "the manifest's {icon} is not embedded"
            );
            assert!(is_icon(&format!("/{icon}")), "{icon} is not an icon's name");
        }
        for f in files() {
            assert!(is_page_name(f.name), "{} is not a page file name", f.name);
            if !f.name.ends_with(GZ) && !f.name.ends_with(BR) && !is_icon(&format!("/{}", f.name)) {
                for copy in [GZ, BR] {
                    let there = file(&format!("{}{copy}", f.name));
                    assert!(there.is_some(), "{} has no {copy}", f.name);
                }
            }
        }
        assert!(PAGE.dirs().next().is_none(), "the page is flat");
    }

    #[test]
    fn page_names_are_the_index_and_hashed_assets() {
        for name in [
            "index.html",
            "index.html.gz",
            "fleetdash-frontend-22d1187daf8be7a2_bg.wasm",
            "fleetdash-frontend-22d1187daf8be7a2.js.gz",
            "style-eafc3ad9490b6fe4.css",
            "fleetdash-frontend-22d1187daf8be7a2.js.br",
            "index.html.br",
            "manifest.webmanifest",
            "manifest.webmanifest.gz",
            "manifest.webmanifest.br",
            "icon-192.png",
            "icon-maskable-512.png",
            "sw.js",
            "sw.js.gz",
        ] {
            assert!(is_page_name(name), "{name}");
        }
        for name in [
            "notes.txt",
            ".git",
            "index.htm",
            "style.css",
            "index.html.gz.gz",
            "index.html.br.gz",
            "index.html.gz.br",
            "style.css.br",
            "icon-192.png.gz",
            "icon.png",
            "icon-192.svg",
            "manifest.json",
            "sw.js.js",
            "other-sw.js",
        ] {
            assert!(!is_page_name(name), "{name}");
        }
    }

    #[test]
    fn etags_differ_between_a_file_and_its_copies() {
        let wasm = files().find(|f| f.name.ends_with("_bg.wasm")).unwrap();
        let plain = etag(wasm.name).unwrap();
        let gz = etag(&format!("{}{GZ}", wasm.name)).unwrap();
        let br = etag(&format!("{}{BR}", wasm.name)).unwrap();
        assert_ne!(plain, gz);
        assert_ne!(plain, br);
        assert_ne!(gz, br);
        assert!(plain.starts_with('"') && plain.ends_with('"') && plain.len() == 26);
    }
}
