//! Whether a SQLite file is one of ours, read before anything is written to it: its mark
//! (`application_id`), its schema version (`user_version`), its health (`quick_check`) and, for
//! a kind that knows them, its tables and their columns.
//!
//! Every store of fleetdash in SQLite asks here: the work queue ([`crate::queue`]) and the
//! alert outbox. What to do with a file that is not ours stays each store's own policy (the
//! queue refuses it and leaves it untouched; the outbox moves it aside and starts afresh), and
//! so do the words that say why: [`recognise`] only says what it found ([`NotOurs`]).

use rusqlite::{Connection, ErrorCode};

/// What makes a file one of a kind of ours.
#[derive(Debug, Clone, Copy)]
pub struct Kind<'a> {
    /// The kind's mark, SQLite's `application_id`, so that a file of another program is told
    /// apart from ours and never has our tables added to it.
    pub application_id: i32,
    /// The newest schema (`user_version`) this build reads.
    pub schema_version: i32,
    /// The kind's tables, each with its columns in order, when it recognises a file by them. A
    /// file holding tables must then hold exactly these; one without the mark (`application_id`
    /// and `user_version` both 0) is ours when it holds these or nothing: it was written before
    /// the mark. `None`: the mark alone says it; a file holding nothing is a new one whatever
    /// its header says (the store marks it), and one holding anything without the mark is
    /// another program's.
    pub tables: Option<&'a [(&'a str, &'a [&'a str])]>,
}

/// Why a file is not of the kind.
#[derive(Debug)]
pub enum NotOurs {
    /// Not a SQLite database at all.
    NotADatabase(rusqlite::Error),
    /// SQLite found the file corrupt while reading what recognises it.
    Corrupt(rusqlite::Error),
    /// `quick_check` found the file damaged: its first finding. The whole file is read, not
    /// just its first page: a truncated file reads its header fine.
    Damaged(String),
    /// Another program's database: another mark, or none on a file that is not ours by its
    /// tables.
    OtherProgram {
        application_id: i32,
        user_version: i32,
    },
    /// Of the kind, but from a newer fleetdash: a schema this build does not read.
    Newer { version: i32 },
    /// Tables other than the kind's, sorted by name.
    OtherTables(Vec<String>),
    /// One of the kind's tables, with other columns (in order).
    OtherColumns { table: String, columns: Vec<String> },
}

/// Why [`recognise`] gave no version.
#[derive(Debug)]
pub enum Unrecognised {
    /// The file is not of the kind.
    NotOurs(NotOurs),
    /// Reading it failed for a reason that says nothing of the file (busy, I/O).
    Unreadable(rusqlite::Error),
}

impl From<rusqlite::Error> for Unrecognised {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => Unrecognised::NotOurs(NotOurs::NotADatabase(e)),
            Some(ErrorCode::DatabaseCorrupt) => Unrecognised::NotOurs(NotOurs::Corrupt(e)),
            _ => Unrecognised::Unreadable(e),
        }
    }
}

/// The file's schema version, once it is known to be a healthy file of `kind`, or a new,
/// empty database (version 0, or what its header says). Reads only.
///
/// The mark and the version are looked at before the file's health: refusing another
/// program's database costs no read of the whole file.
pub fn recognise(conn: &Connection, kind: &Kind) -> Result<i32, Unrecognised> {
    let not_ours = |why| Err(Unrecognised::NotOurs(why));
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    let tables: Vec<String> = {
        let mut stmt = conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let marked = app == kind.application_id;
    let unmarked = app == 0 && version == 0;
    let ours_unmarked = match kind.tables {
        // Its tables, or none, say whether it is ours (checked below).
        Some(_) => unmarked,
        None => objects == 0,
    };
    if !marked && !ours_unmarked {
        return not_ours(NotOurs::OtherProgram {
            application_id: app,
            user_version: version,
        });
    }
    if version > kind.schema_version {
        return not_ours(NotOurs::Newer { version });
    }
    let check: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
    if check != "ok" {
        return not_ours(NotOurs::Damaged(check));
    }
    let Some(expected) = kind.tables.filter(|_| !tables.is_empty()) else {
        return Ok(version);
    };
    let mut names: Vec<&str> = expected.iter().map(|(t, _)| *t).collect();
    names.sort_unstable();
    if tables != names {
        return not_ours(NotOurs::OtherTables(tables));
    }
    for (table, columns) in expected {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
        let found: Vec<String> = stmt
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if found != *columns {
            return not_ours(NotOurs::OtherColumns {
                table: table.to_string(),
                columns: found,
            });
        }
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLES: &[(&str, &[&str])] = &[("items", &["id", "body"]), ("meta", &["key"])];
    const BY_TABLES: Kind = Kind {
        application_id: 0x4644_5458,
        schema_version: 2,
        tables: Some(TABLES),
    };
    const BY_MARK: Kind = Kind {
        tables: None,
        ..BY_TABLES
    };

    fn db(sql: &str) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(sql).unwrap();
        conn
    }

    const OURS: &str = "CREATE TABLE items (id, body); CREATE TABLE meta (key);";

    fn mark(version: i32) -> String {
        format!(
            "PRAGMA application_id = {}; PRAGMA user_version = {version};",
            BY_TABLES.application_id
        )
    }

    fn verdict(conn: &Connection, kind: &Kind) -> Result<i32, String> {
        recognise(conn, kind).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn an_empty_database_and_a_marked_one_are_ours() {
        for kind in [BY_TABLES, BY_MARK] {
            assert_eq!(verdict(&db(""), &kind), Ok(0));
            assert_eq!(verdict(&db(&format!("{OURS}{}", mark(2))), &kind), Ok(2));
        }
    }

    #[test]
    fn an_unmarked_file_is_ours_by_its_tables_only_for_a_kind_that_knows_them() {
        assert_eq!(verdict(&db(OURS), &BY_TABLES), Ok(0));
        let err = verdict(&db(OURS), &BY_MARK).unwrap_err();
        assert!(err.starts_with("NotOurs(OtherProgram"), "{err}");
        let err = verdict(&db("CREATE TABLE cards (id);"), &BY_TABLES).unwrap_err();
        assert!(err.contains("OtherTables([\"cards\"])"), "{err}");
    }

    #[test]
    fn another_mark_a_newer_schema_or_other_columns_are_not_ours() {
        let other = db("CREATE TABLE items (id); PRAGMA application_id = 7;");
        for kind in [BY_TABLES, BY_MARK] {
            let err = verdict(&other, &kind).unwrap_err();
            assert!(err.contains("application_id: 7"), "{err}");
            let err = verdict(&db(&format!("{OURS}{}", mark(3))), &kind).unwrap_err();
            assert!(err.contains("Newer { version: 3 }"), "{err}");
        }
        let extra = db(&format!(
            "{OURS}ALTER TABLE meta ADD COLUMN extra;{}",
            mark(1)
        ));
        let err = verdict(&extra, &BY_TABLES).unwrap_err();
        assert!(err.contains("OtherColumns { table: \"meta\""), "{err}");
        assert_eq!(verdict(&extra, &BY_MARK), Ok(1), "the mark alone says it");
    }
}
