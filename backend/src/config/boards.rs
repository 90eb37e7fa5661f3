//! `[[boards]]` and `[vault]`: the Hermes kanban boards read, and the `.kanban` files in the
//! vault they are projected into. Projection targets fail closed here (spec §3.4): only a
//! declared `.kanban` file inside the vault can ever be written.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVault {
    path: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBoard {
    name: Spanned<String>,
    plane: Option<String>,
    db: Spanned<String>,
    projection: Option<Spanned<String>>,
    #[serde(default)]
    retired: bool,
    #[serde(default)]
    include_archived: bool,
    dispatch_config: Option<String>,
}

/// The vault's folder, resolved like any path.
pub(super) fn validate_vault(v: &Validator, raw: Option<&RawVault>) -> Option<PathBuf> {
    raw.map(|vault| v.path(vault.path.get_ref()))
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

pub(super) fn validate(
    v: &mut Validator,
    raw: &[RawBoard],
    vault: Option<&Path>,
) -> Vec<BoardConfig> {
    let mut seen = HashSet::new();
    let mut targets = HashSet::new();
    let mut out = Vec::new();
    for (i, b) in raw.iter().enumerate() {
        let field = |f: &str| format!("boards[{i}].{f}");
        let name = b.name.get_ref().clone();
        if !is_slug(&name) {
            v.error(&b.name, field("name"), "expected a board slug: a-z, 0-9, '-' and '_', up to 64, starting with a letter or digit");
        } else if !seen.insert(name.clone()) {
            v.error(&b.name, field("name"), format!("duplicate board {name:?}"));
        }
        let mut projection = None;
        if let Some(target) = &b.projection {
            let rel = target.get_ref();
            let path = Path::new(rel);
            // Fail closed (spec §3.4): only a declared `.kanban` file inside the vault can ever
            // be written; a register such as fleet-board.md can never be a target.
            if path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                v.error(target, field("projection"), "expected a path relative to [vault] path, without `..`, e.g. \"Docs/Kanban/research.kanban\"");
            } else if path.extension().is_none_or(|e| e != "kanban") {
                v.error(target, field("projection"), "a projection target must be a .kanban file (registers such as fleet-board.md are never written)");
            } else if !targets.insert(rel.clone()) {
                v.error(
                    target,
                    field("projection"),
                    format!("{rel:?} is already the target of another board"),
                );
            } else {
                match vault {
                    Some(vault) => projection = Some((vault.join(path), rel.clone())),
                    None => v.error(
                        target,
                        field("projection"),
                        "a projection needs [vault] path",
                    ),
                }
            }
        }
        out.push(BoardConfig {
            name,
            plane: b.plane.clone(),
            db: v.path(b.db.get_ref()),
            projection_rel: projection.as_ref().map(|(_, rel)| rel.clone()),
            projection: projection.map(|(abs, _)| abs),
            retired: b.retired,
            include_archived: b.include_archived,
            dispatch_config: b.dispatch_config.as_deref().map(|p| v.path(p)),
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
