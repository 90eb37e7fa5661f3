//! The house's layering (docs/architecture.md), checked from the code's own imports, so it holds
//! without anyone remembering it.
//!
//! Every `crate::` path of fleetdash's library (in `use` trees, in code, and inside macro calls)
//! is resolved to the file that defines it; `super::` and `self::` too. Test modules
//! (`#[cfg(test)]`) are left out: they may build fixtures from anywhere. Then:
//! - each top-level module has a layer in [`LAYERS`], and no file imports from a layer above its
//!   own;
//! - no import circle joins files, in the backend, the model or the page: a folder's `mod.rs`
//!   may use the files inside it (declare, re-export, build them), and they may use it; any
//!   other set of files that need each other is a circle (a re-export is followed to the file
//!   that defines the item);
//! - no source file is over [`MAX_LINES`] lines;
//! - the page depends on the model alone.
//!
//! `cargo test -p fleetdash --test integration layering:: -- --nocapture` prints the counts (edges, upward imports, circles,
//! the largest files).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The backend's layers, ground up: each may import only from its own layer and those before it.
/// The model (its own crate) is below them all.
const LAYERS: &[&[&str]] = &[
    &[
        "redact", "text", "net", "sqlite", "problem", "clock", "certs",
    ],
    &["config"],
    &["a2a", "queue"],
    &["collect"],
    &["snapshot", "deps"],
    &["write"],
    &["alerting"],
    &[
        "server", "page", "intake", "cron_run", "watchdog", "logging", "doctor", "metrics", "otel",
        "answers", "mcp", "init", "report",
    ],
    &["daemon"],
    &["demo"],
    &["app", "starter"],
    &["cli"],
];

/// A file past this many lines is split along its own seams.
const MAX_LINES: usize = 1000;

/// A module's path, `["collect", "board", "read"]`; the crate root is empty.
type ModPath = Vec<String>;

/// One source file: where it is, the module it defines, and the modules its code names.
struct Source {
    file: PathBuf,
    module: ModPath,
    /// Paths as written, each from the module it is written in (an inline module counts).
    uses: Vec<(ModPath, Vec<String>, usize)>,
    /// `pub use` re-exports: (module, name it is known by there, the path it names).
    reexports: Vec<(ModPath, String, Vec<String>)>,
}

fn module_of(root: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(root).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Collects the paths a file names, skipping `#[cfg(test)]` items.
struct Uses {
    /// The module the visitor is in (inline modules push onto it).
    here: ModPath,
    found: Vec<(ModPath, Vec<String>, usize)>,
    reexports: Vec<(ModPath, String, Vec<String>)>,
    /// Set while reading a `pub use`.
    exporting: bool,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string().contains("test"))
    })
}

impl Uses {
    fn push(&mut self, segments: Vec<String>, line: usize) {
        if !segments.is_empty() {
            self.found.push((self.here.clone(), segments, line));
        }
    }

    fn export(&mut self, name: Option<String>, path: &[String]) {
        if let (true, Some(name)) = (self.exporting, name) {
            self.reexports
                .push((self.here.clone(), name, path.to_vec()));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.export(full.last().cloned(), &full);
                self.push(full, line);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.export(Some(r.rename.to_string()), &full);
                self.push(full, line);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone(), line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    /// `crate::a::b`, `super::x` sequences inside a macro's tokens (format!, json!, tracing).
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    self.push(segments, line);
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_cfg_test(&m.attrs) {
            return;
        }
        self.here.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.here.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_cfg_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_cfg_test(&u.attrs) {
            let line = u.use_token.span.start().line;
            self.exporting = !matches!(u.vis, syn::Visibility::Inherited);
            self.use_tree(&mut Vec::new(), &u.tree, line);
            self.exporting = false;
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.push(segments, line);
        syn::visit::visit_path(self, p);
    }

    /// `pub(crate)`, `pub(in crate::x)`: who may see an item, not a use of anything.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

fn read_sources(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    // A binary beside the library is a crate of its own.
    if root.join("lib.rs").exists() {
        files.retain(|f| f != &root.join("main.rs"));
    }
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            let module = module_of(root, &file);
            let mut uses = Uses {
                here: module.clone(),
                found: Vec::new(),
                reexports: Vec::new(),
                exporting: false,
            };
            uses.visit_file(&ast);
            Source {
                file,
                module,
                uses: uses.found,
                reexports: uses.reexports,
            }
        })
        .collect()
}

/// The file-level import graph of one crate: for each file, the files it names, with the line.
struct Graph {
    sources: Vec<Source>,
    /// (from, to) index pairs, with the first line naming it.
    edges: BTreeMap<(usize, usize), usize>,
}

impl Graph {
    fn of(root: &Path) -> Graph {
        let sources = read_sources(root);
        let by_module: BTreeMap<ModPath, usize> = sources
            .iter()
            .enumerate()
            .map(|(i, s)| (s.module.clone(), i))
            .collect();
        let reexports: BTreeMap<(ModPath, String), (ModPath, Vec<String>)> = sources
            .iter()
            .flat_map(|s| &s.reexports)
            .map(|(m, name, path)| ((m.clone(), name.clone()), (m.clone(), path.clone())))
            .collect();
        let mut edges = BTreeMap::new();
        for (from, s) in sources.iter().enumerate() {
            for (here, path, line) in &s.uses {
                let Some(target) = resolve(here, path, &by_module, &reexports, 0) else {
                    continue;
                };
                if target != from {
                    edges.entry((from, target)).or_insert(*line);
                }
            }
        }
        Graph { sources, edges }
    }

    fn name(&self, i: usize) -> String {
        let s = &self.sources[i];
        let rel = s
            .file
            .strip_prefix(workspace())
            .unwrap_or(&s.file)
            .display();
        rel.to_string()
    }

    /// Whether `from` is a folder's `mod.rs` and `to` lies inside that folder: the folder
    /// declaring and using its own parts, the one circle the house allows.
    fn declares(&self, from: usize, to: usize) -> bool {
        let (f, t) = (&self.sources[from], &self.sources[to]);
        f.file.file_name().is_some_and(|n| n == "mod.rs")
            && t.module.len() > f.module.len()
            && t.module.starts_with(&f.module)
    }

    /// Whether the files `set` are a folder's `mod.rs` and files inside that folder.
    fn one_folder(&self, set: &[usize]) -> bool {
        set.iter()
            .any(|&root| set.iter().all(|&i| i == root || self.declares(root, i)))
    }

    /// Import circles, each sorted by name: files that need each other across folders (a
    /// strongly connected set that is not one folder's `mod.rs` with its parts), and inside a
    /// folder, parts that need each other once the `mod.rs` using its parts is set aside.
    fn circles(&self) -> Vec<Vec<String>> {
        let n = self.sources.len();
        let mut all: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut parts: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in self.edges.keys() {
            all[a].push(b);
            if !self.declares(a, b) {
                parts[a].push(b);
            }
        }
        let across: Vec<Vec<usize>> = tarjan(&all)
            .into_iter()
            .filter(|c| c.len() > 1 && !self.one_folder(c))
            .collect();
        let inside = tarjan(&parts)
            .into_iter()
            .filter(|c| c.len() > 1 && !across.iter().any(|a| c.iter().all(|i| a.contains(i))));
        across
            .iter()
            .cloned()
            .chain(inside)
            .map(|c| {
                let mut names: Vec<String> = c.into_iter().map(|i| self.name(i)).collect();
                names.sort();
                names
            })
            .collect()
    }
}

/// A name a module re-exports (`pub use`), to the module and path it names.
type Reexports = BTreeMap<(ModPath, String), (ModPath, Vec<String>)>;

/// The file a path names: the longest module prefix of it that is a file, followed through the
/// re-exports of that module (`crate::config::TokenSource` is the file that defines it).
fn resolve(
    here: &ModPath,
    path: &[String],
    modules: &BTreeMap<ModPath, usize>,
    reexports: &Reexports,
    depth: usize,
) -> Option<usize> {
    let mut rest = path.iter().peekable();
    let mut module: ModPath = match rest.peek().map(|s| s.as_str()) {
        Some("crate") => {
            rest.next();
            Vec::new()
        }
        Some("self") => {
            rest.next();
            here.clone()
        }
        Some("super") => {
            let mut m = here.clone();
            while rest.next_if(|s| *s == "super").is_some() {
                m.pop();
            }
            m
        }
        Some(first) => {
            // A child module named from its parent (`use read::Board;` in a mod.rs); anything
            // else (another crate, a local name) is not ours to follow.
            let mut child = here.clone();
            child.push(first.to_string());
            if !modules.contains_key(&child) {
                return None;
            }
            here.clone()
        }
        None => return None,
    };
    let mut best = modules.get(&module).copied();
    for segment in rest {
        if let Some((from, target)) = reexports.get(&(module.clone(), segment.clone()))
            && best.is_some()
            && depth < 8
            && target.first() != Some(segment)
        {
            return resolve(from, target, modules, reexports, depth + 1).or(best);
        }
        module.push(segment.clone());
        match modules.get(&module) {
            Some(&i) => best = Some(i),
            None => break,
        }
    }
    best
}

/// Tarjan's strongly connected components.
fn tarjan(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for i in 0..s.next[v].len() {
            let w = s.next[v][i];
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = next.len();
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

fn layer_of(module: &ModPath) -> Option<usize> {
    let top = module.first()?;
    LAYERS.iter().position(|l| l.contains(&top.as_str()))
}

/// Each import that runs from a layer up to a higher one, as "file:line: a imports b".
fn upward(graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    for (&(a, b), line) in &graph.edges {
        let (la, lb) = (
            layer_of(&graph.sources[a].module),
            layer_of(&graph.sources[b].module),
        );
        if let (Some(la), Some(lb)) = (la, lb)
            && lb > la
        {
            found.push(format!(
                "{}:{line}: {} (layer {la}) imports {} (layer {lb}), a layer above it",
                graph.name(a),
                graph.sources[a].module.join("::"),
                graph.sources[b].module.join("::"),
            ));
        }
    }
    found
}

/// The checkout read: this one, or another one named by `LAYERING_ROOT` (to count an older
/// tree: `LAYERING_ROOT=/tmp/old cargo test -p fleetdash --test integration layering::report -- --nocapture`).
fn workspace() -> PathBuf {
    std::env::var_os("LAYERING_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap()
                .to_path_buf()
        })
}

fn backend() -> Graph {
    Graph::of(&workspace().join("backend/src"))
}

#[test]
fn every_top_level_module_has_a_layer() {
    let graph = backend();
    let missing: BTreeSet<String> = (0..graph.sources.len())
        .filter(|&i| {
            !graph.sources[i].module.is_empty() && layer_of(&graph.sources[i].module).is_none()
        })
        .map(|i| graph.name(i))
        .collect();
    assert!(
        missing.is_empty(),
        "files of a module without a layer in tests/layering.rs LAYERS (and docs/architecture.md): {missing:?}"
    );
}

/// docs/architecture.md's table of layers says what [`LAYERS`] says: the reader's map is the
/// one this test keeps.
#[test]
fn the_maps_table_of_layers_is_these_layers() {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let table = doc
        .split("## The layers")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/architecture.md has a section \"The layers\"");
    let mut mapped: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Ok(layer) = cells[1].parse::<usize>() else {
            continue;
        };
        let modules = cells[2]
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.contains(' ') && !m.is_empty());
        mapped.entry(layer).or_default().extend(modules);
    }
    let model = mapped.remove(&0);
    assert!(model.is_some(), "layer 0, the model crate, is in the table");
    let coded: BTreeMap<usize, BTreeSet<String>> = LAYERS
        .iter()
        .enumerate()
        .map(|(i, mods)| (i + 1, mods.iter().map(|m| m.to_string()).collect()))
        .collect();
    assert_eq!(
        mapped, coded,
        "docs/architecture.md's layers (left) differ from tests/layering.rs LAYERS (right)"
    );
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let found = upward(&backend());
    assert!(
        found.is_empty(),
        "{} upward imports:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn no_import_circle_joins_files() {
    for crate_src in ["backend/src", "model/src", "frontend/src"] {
        let circles = Graph::of(&workspace().join(crate_src)).circles();
        assert!(
            circles.is_empty(),
            "{crate_src}: {} import circles:\n{}",
            circles.len(),
            circles
                .iter()
                .map(|c| format!("{} files: {}", c.len(), c.join(", ")))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn no_source_file_is_over_the_limit() {
    let mut over = Vec::new();
    for dir in [
        "backend/src",
        "backend/benches",
        "model/src",
        "frontend/src",
    ] {
        let mut files = Vec::new();
        rust_files(&workspace().join(dir), &mut files);
        for f in files {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            if n > MAX_LINES {
                over.push(format!(
                    "{} ({n} lines)",
                    f.strip_prefix(workspace()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines, to be split along their seams: {over:?}"
    );
}

#[test]
fn the_page_depends_on_the_model_alone() {
    let manifest = std::fs::read_to_string(workspace().join("frontend/Cargo.toml")).unwrap();
    let table: toml::Table = manifest.parse().unwrap();
    let deps = table["dependencies"].as_table().unwrap();
    let ours: Vec<&String> = deps.keys().filter(|k| k.starts_with("fleetdash")).collect();
    assert_eq!(ours, ["fleetdash-model"]);
}

/// The checks above fail on a planted violation: a config file importing the alerting layer, and
/// two files importing each other.
#[test]
fn the_checks_catch_a_planted_upward_import_and_circle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("alerting")).unwrap();
    std::fs::write(root.join("lib.rs"), "pub mod config;\npub mod alerting;\n").unwrap();
    std::fs::write(root.join("config/mod.rs"), "pub mod alerts;\n").unwrap();
    std::fs::write(
        root.join("config/alerts.rs"),
        "use crate::alerting::silences::Matcher;\npub struct Alerts(Matcher);\n",
    )
    .unwrap();
    std::fs::write(
        root.join("alerting/mod.rs"),
        "pub mod silences;\npub mod engine;\n",
    )
    .unwrap();
    std::fs::write(
        root.join("alerting/silences.rs"),
        "pub struct Matcher;\npub fn f() { super::engine::g() }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("alerting/engine.rs"),
        "pub fn g() { tracing::info!(\"{}\", crate::alerting::silences::f()) }\n",
    )
    .unwrap();
    let graph = Graph::of(root);
    let up = upward(&graph);
    assert_eq!(up.len(), 1, "{up:?}");
    assert!(
        up[0].contains("config/alerts.rs:1: config::alerts (layer 1) imports alerting::silences"),
        "{up:?}"
    );
    let circles = graph.circles();
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].len(), 2, "{circles:?}");
    assert!(circles[0][0].ends_with("alerting/engine.rs"), "{circles:?}");
}

/// The counts, for the record (`-- --nocapture`).
#[test]
fn report() {
    let graph = backend();
    let circles = graph.circles();
    let mut sizes: Vec<(usize, String)> = Vec::new();
    for dir in [
        "backend/src",
        "backend/benches",
        "model/src",
        "frontend/src",
    ] {
        let mut files = Vec::new();
        rust_files(&workspace().join(dir), &mut files);
        for f in files {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            sizes.push((
                n,
                f.strip_prefix(workspace()).unwrap().display().to_string(),
            ));
        }
    }
    sizes.sort_by(|a, b| b.cmp(a));
    println!(
        "backend: {} files, {} import edges between files, {} upward imports, {} circles {:?}",
        graph.sources.len(),
        graph.edges.len(),
        upward(&graph).len(),
        circles.len(),
        circles.iter().map(Vec::len).collect::<Vec<_>>(),
    );
    for crate_src in ["model/src", "frontend/src"] {
        let g = Graph::of(&workspace().join(crate_src));
        println!(
            "{crate_src}: {} files, {} edges, {} circles",
            g.sources.len(),
            g.edges.len(),
            g.circles().len()
        );
    }
    println!("largest files: {:?}", &sizes[..8]);
}
