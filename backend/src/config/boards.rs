//! `[[boards]]` and `[vault]`: the Hermes kanban boards read, and the `.kanban` files in the
//! vault they are projected into. Projection targets fail closed here (spec §3.4): only a
//! declared `.kanban` file inside the vault can ever be written.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::files::Expect;
use super::table::Table;
use super::validator::Validator;

/// One Hermes kanban board: where its database is, and where (if anywhere) it is projected.
#[derive(Debug, Clone)]
pub struct BoardConfig {
    /// The board's slug (`default` for `<root>/kanban.db`).
    pub name: String,
    /// The vault plane it belongs to (`Docs`, `Pulse`).
    pub plane: Option<String>,
    pub db: PathBuf,
    /// The projection file, already joined to the vault; `None`: the board is not projected.
    pub projection: Option<PathBuf>,
    /// The projection as declared, relative to the vault (for messages).
    pub projection_rel: Option<String>,
    /// A retired generator writes nothing and says so.
    pub retired: bool,
    pub include_archived: bool,
    /// The Hermes config holding `kanban.dispatch_profiles`, to flag cards this host can never
    /// dispatch; `None`: the host boundary is not checked.
    pub dispatch_config: Option<PathBuf>,
}

/// `[vault] path`: the vault's folder, resolved like any path.
pub(super) fn read_vault(v: &mut Validator, mut t: Table) -> Option<PathBuf> {
    let path = if t.is_present() {
        t.required_string(v, "path", "the Obsidian vault's folder")
    } else {
        None
    };
    t.finish(v);
    path.map(|p| v.read_path(&p, t.field("path"), Expect::Folder))
}

/// A board slug, as Hermes accepts it.
fn is_slug(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Reads each `[[boards]]` entry; its projection resolves inside `vault`.
pub(super) fn read(
    v: &mut Validator,
    entries: Vec<Table>,
    vault: Option<&Path>,
) -> Vec<BoardConfig> {
    let mut seen = HashSet::new();
    let mut targets = HashSet::new();
    let mut out = Vec::new();
    for mut t in entries {
        let name = t.required_string(v, "name", "the board's Hermes slug, e.g. \"research\"");
        let plane = t.string(v, "plane");
        let db = t.required_string(v, "db", "the board's kanban.db");
        let projection = t.string(v, "projection");
        let retired = t.boolean(v, "retired").unwrap_or(false);
        let include_archived = t.boolean(v, "include_archived").unwrap_or(false);
        let dispatch_config = t.string(v, "dispatch_config");
        t.finish(v);

        if let Some(name) = &name {
            if !is_slug(name.get_ref()) {
                v.error(name, t.field("name"), "expected a board slug: a-z, 0-9, '-' and '_', up to 64, starting with a letter or digit");
            } else if !seen.insert(name.get_ref().clone()) {
                v.error(
                    name,
                    t.field("name"),
                    format!("duplicate board {:?}", name.get_ref()),
                );
            }
        }
        let mut resolved = None;
        if let Some(target) = &projection {
            let rel = target.get_ref();
            let path = Path::new(rel);
            // Fail closed (spec §3.4): only a declared `.kanban` file inside the vault can ever
            // be written; a register such as fleet-board.md can never be a target.
            if path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                v.error(target, t.field("projection"), "expected a path relative to [vault] path, without `..`, e.g. \"Docs/Kanban/research.kanban\"");
            } else if path.extension().is_none_or(|e| e != "kanban") {
                v.error(target, t.field("projection"), "a projection target must be a .kanban file (registers such as fleet-board.md are never written)");
            } else if !targets.insert(rel.clone()) {
                v.error(
                    target,
                    t.field("projection"),
                    format!("{rel:?} is already the target of another board"),
                );
            } else {
                match vault {
                    Some(vault) => resolved = Some((vault.join(path), rel.clone())),
                    None => v.error(
                        target,
                        t.field("projection"),
                        "a projection needs [vault] path",
                    ),
                }
            }
        }
        let (Some(name), Some(db)) = (name, db) else {
            continue;
        };
        out.push(BoardConfig {
            name: name.into_inner(),
            plane: plane.map(Spanned::into_inner),
            db: v.read_path(&db, t.field("db"), Expect::File),
            projection_rel: resolved.as_ref().map(|(_, rel)| rel.clone()),
            projection: resolved.map(|(abs, _)| abs),
            retired,
            include_archived,
            dispatch_config: dispatch_config
                .map(|p| v.read_path(&p, t.field("dispatch_config"), Expect::File)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::{Config, defaults};

    #[test]
    fn boards_resolve_their_projection_inside_the_vault() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[vault]\npath = \"/v\"\n\
                    [[boards]]\nname = \"research\"\nplane = \"Docs\"\ndb = \"k/research.db\"\n\
                    projection = \"Docs/Kanban/research.kanban\"\n";
        let c = Config::parse(Path::new("/etc/f.toml"), text).unwrap();
        let b = &c.boards[0];
        assert_eq!(b.db, Path::new("/etc/k/research.db"));
        assert_eq!(
            b.projection.as_deref(),
            Some(Path::new("/v/Docs/Kanban/research.kanban"))
        );
        assert!(!b.retired && b.dispatch_config.is_none());
        assert_eq!(c.cadence.projections, defaults::PROJECTIONS_CADENCE);
    }

    #[test]
    fn a_projection_can_only_target_a_kanban_file_inside_the_vault() {
        let board = |target: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[vault]\npath = \"/v\"\n\
                 [[boards]]\nname = \"b\"\ndb = \"x.db\"\nprojection = \"{target}\"\n"
            )
        };
        for (target, expected) in [
            ("Docs/Kanban/fleet-board.md", "must be a .kanban file"),
            ("../outside.kanban", "without `..`"),
            ("/abs/b.kanban", "relative to [vault] path"),
        ] {
            let err = Config::parse(Path::new("f.toml"), &board(target))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("boards[0].projection") && err.contains(expected),
                "{target}: {err}"
            );
        }
        let no_vault = board("Docs/Kanban/b.kanban").replace("[vault]\npath = \"/v\"\n", "");
        let err = Config::parse(Path::new("f.toml"), &no_vault)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a projection needs [vault] path"), "{err}");
    }
}
