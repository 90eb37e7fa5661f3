//! The committed page (`page/`): `fleetdash page export DIR` writes exactly it, replaces an
//! earlier export and refuses a folder of other things untouched, naming DIR; and
//! `scripts/check-page`, the determinism check `scripts/test` runs after rebuilding the page,
//! fails naming every file that is not the build's byte for byte.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use support::Scratch;

fn committed() -> PathBuf {
    support::repo_root().join("page")
}

/// Every file of a flat folder, by name.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            assert!(e.file_type().unwrap().is_file(), "{:?} is a file", e.path());
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn export(dir: &Path) -> Output {
    support::fleetdash()
        .args(["page", "export"])
        .arg(dir)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn page_export_writes_exactly_the_committed_page() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("srv/fleetdash/page");
    let out = export(&dir);
    support::assert_success(&out);
    let page = contents(&committed());
    assert!(
        page.contains_key("index.html") && page.len() >= 8,
        "{:?}",
        page.keys()
    );
    assert_eq!(contents(&dir), page, "the export is page/, byte for byte");
    for name in page.keys() {
        let mode = std::fs::metadata(dir.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{name}: readable by nginx's user");
    }
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "{}: the page ({} files written",
            dir.display(),
            page.len()
        )),
        "{stdout}"
    );

    // Again: nothing to write.
    let again = export(&dir);
    support::assert_success(&again);
    let stdout = text(&again.stdout);
    assert!(
        stdout.contains(&format!(
            "(0 files written, {} unchanged, 0 earlier removed)",
            page.len()
        )),
        "{stdout}"
    );
    assert_eq!(contents(&dir), page);
}

/// An earlier export (another build: other hashed names, another index.html) is replaced; its
/// assets the page no longer names are removed, the files that are the same are left alone.
#[test]
fn page_export_replaces_an_earlier_export() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("page");
    std::fs::create_dir(&dir).unwrap();
    let page = contents(&committed());
    // The page's JS glue (its stylesheet is inline in index.html).
    let js = page
        .keys()
        .find(|n| n.ends_with(".js") && n.as_str() != "sw.js")
        .unwrap()
        .clone();
    std::fs::write(dir.join(&js), &page[&js]).unwrap();
    std::fs::write(dir.join("index.html"), "<!doctype html><p>an older build\n").unwrap();
    let old = [
        "fleetdash-frontend-0123456789abcdef_bg.wasm",
        "fleetdash-frontend-0123456789abcdef_bg.wasm.gz",
        "fleetdash-frontend-0123456789abcdef_bg.wasm.br",
        "fleetdash-frontend-0123456789abcdef.js",
    ];
    for name in old {
        std::fs::write(dir.join(name), "old build\n").unwrap();
    }

    let out = export(&dir);
    support::assert_success(&out);
    assert_eq!(contents(&dir), page, "only the page, byte for byte");
    let stdout = text(&out.stdout);
    for name in old {
        assert!(
            stdout.contains(&format!("removed   {}", dir.join(name).display())),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains(&format!("unchanged {}", dir.join(&js).display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("written   {}", dir.join("index.html").display())),
        "{stdout}"
    );
}

/// A folder holding anything but a page is refused before anything is written, with one line
/// naming the folder and what is in it; so are a file and a folder that cannot be made.
#[test]
fn page_export_refuses_a_folder_of_other_things_untouched_and_names_it() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("www");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    std::fs::write(dir.join("index.html"), "my own site\n").unwrap();
    let before = contents_and_dirs(&dir);

    let out = export(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: holds 2 entries that are not part of a page (.git, notes.txt)",
            dir.display()
        )) && stderr.contains("changed nothing"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(contents_and_dirs(&dir), before, "untouched");

    let file = scratch.path().join("a-file");
    std::fs::write(&file, "x\n").unwrap();
    let out = export(&file);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("{}: not a folder", file.display())),
        "{}",
        text(&out.stderr)
    );
    let under_a_file = file.join("page");
    let out = export(&under_a_file);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("{}:", under_a_file.display())),
        "{}",
        text(&out.stderr)
    );
}

fn contents_and_dirs(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = e
                .file_type()
                .unwrap()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (e.file_name().into_string().unwrap(), bytes)
        })
        .collect();
    all.sort();
    all
}

fn check_page(built: &Path, committed: &Path) -> Output {
    std::process::Command::new(support::repo_root().join("scripts/check-page"))
        .arg(built)
        .arg(committed)
        .output()
        .unwrap()
}

/// The determinism check: a committed page equal to the build passes; one byte changed, a file
/// missing or one too many fails, naming each file and the command that refreshes page/.
#[test]
fn check_page_fails_naming_each_file_that_is_not_the_build() {
    let scratch = Scratch::new();
    let built = scratch.path().join("built");
    let copy = scratch.path().join("committed");
    for dir in [&built, &copy] {
        std::fs::create_dir(dir).unwrap();
        for (name, bytes) in contents(&committed()) {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let same = check_page(&built, &copy);
    assert!(same.status.success(), "{}", text(&same.stderr));
    // Times do not matter, only bytes.
    let index = copy.join("index.html");
    std::fs::File::options()
        .write(true)
        .open(&index)
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH)
        .unwrap();
    assert!(check_page(&built, &copy).status.success());

    let page = contents(&committed());
    let wasm = page.keys().find(|n| n.ends_with("_bg.wasm")).unwrap();
    let mut bytes = page[wasm].clone();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(copy.join(wasm), bytes).unwrap();
    let js_gz = page
        .keys()
        .find(|n| n.ends_with(".js.gz") && n.as_str() != "sw.js.gz")
        .unwrap();
    std::fs::remove_file(copy.join(js_gz)).unwrap();
    std::fs::write(copy.join("style-0123456789abcdef.css"), "old\n").unwrap();

    let out = check_page(&built, &copy);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{wasm}: differs")), "{stderr}");
    assert!(
        stderr.contains(&format!("{js_gz}: built, but not in {}", copy.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "style-0123456789abcdef.css: in {}, but not built",
            copy.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("run scripts/build-frontend --update"),
        "{stderr}"
    );
    // Only those three.
    let named = stderr
        .lines()
        .filter(|l| l.starts_with("check-page:   "))
        .count();
    assert_eq!(named, 3, "{stderr}");
}
