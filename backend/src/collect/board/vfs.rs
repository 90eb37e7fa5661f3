//! A SQLite VFS that opens a board's files read-only and only if they exist, and never deletes
//! one: whatever the folder's permissions and whatever Hermes does at the same instant, no file
//! in Hermes' folder is created, owned or removed by fleetdash.
//!
//! Why a VFS and not only URI flags: SQLite's unix VFS opens a WAL file with `O_RDWR|O_CREAT`
//! even for a read-only connection (`sqlite3WalOpen` asks for READWRITE|CREATE and falls back to
//! read-only only when that fails), and a WAL-mode database whose `-wal` is absent when the
//! read starts gets one created. `immutable=1` avoids that for an idle board, but when Hermes
//! closes its last connection (deleting `-wal`) between our look at the folder and SQLite's, a
//! `-wal` owned by fleetdash's user would appear, and Hermes, running as another user, could
//! no longer write its own board. Here such an open fails instead (SQLITE_CANTOPEN), and
//! [`super::read`] reads again.
//!
//! Every other method is the default unix VFS's own; temporary files (sorting, no name or
//! not one of the database's own files) are opened as SQLite asks, in the temporary
//! directory. This and `cli::limit_malloc_arenas` (one call to glibc's `mallopt`) are the
//! crate's only `unsafe` code: registering a VFS is a C API.

use std::ffi::{CStr, c_char, c_int};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections pass to open through this VFS.
pub const NAME: &str = "fleetdash-board-readonly";
const NAME_C: &CStr = c"fleetdash-board-readonly";

/// The database's own files: the main file, its rollback journal, its WAL, a super-journal.
const OWN_FILES: c_int = ffi::SQLITE_OPEN_MAIN_DB
    | ffi::SQLITE_OPEN_MAIN_JOURNAL
    | ffi::SQLITE_OPEN_WAL
    | ffi::SQLITE_OPEN_SUPER_JOURNAL;
/// What an open of one of those files may never ask for.
const WRITE_FLAGS: c_int = ffi::SQLITE_OPEN_READWRITE
    | ffi::SQLITE_OPEN_CREATE
    | ffi::SQLITE_OPEN_EXCLUSIVE
    | ffi::SQLITE_OPEN_DELETEONCLOSE;

/// Registers the VFS once per process (not as the default); later calls return the first
/// outcome. An error is SQLite's result code.
pub fn register() -> Result<&'static str, c_int> {
    static REGISTERED: OnceLock<Result<(), c_int>> = OnceLock::new();
    REGISTERED.get_or_init(register_once).map(|()| NAME)
}

fn register_once() -> Result<(), c_int> {
    // SAFETY: sqlite3_initialize and sqlite3_vfs_find are thread-safe and return either null or
    // a pointer to a VFS that SQLite keeps for the life of the process. The copy we register is
    // leaked, so it too lives as long as the process, as sqlite3_vfs_register requires; its
    // pAppData points at the unix VFS our `open` forwards to.
    unsafe {
        let rc = ffi::sqlite3_initialize();
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        let base = ffi::sqlite3_vfs_find(c"unix".as_ptr());
        if base.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        let mut vfs: ffi::sqlite3_vfs = *base;
        vfs.zName = NAME_C.as_ptr();
        vfs.pNext = std::ptr::null_mut();
        vfs.pAppData = base.cast();
        vfs.xOpen = Some(open);
        vfs.xDelete = Some(refuse_delete);
        let vfs: &'static mut ffi::sqlite3_vfs = Box::leak(Box::new(vfs));
        match ffi::sqlite3_vfs_register(vfs, 0) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(rc),
        }
    }
}

/// The unix VFS's open, with the database's own files forced read-only and never created.
unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let flags = read_only_flags(flags, !name.is_null());
    // SAFETY: SQLite calls this with the VFS registered above, whose pAppData is the unix VFS
    // (alive for the process). `file` has room for szOsFile bytes, which we copied from it.
    unsafe {
        let base = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        match (*base).xOpen {
            Some(base_open) => base_open(base, name, file, flags, out_flags),
            None => ffi::SQLITE_CANTOPEN,
        }
    }
}

/// The flags an open is passed on with: a named file of the database's own is opened
/// read-only and must exist; anything else (temporary files) as asked.
fn read_only_flags(flags: c_int, named: bool) -> c_int {
    if named && flags & OWN_FILES != 0 {
        (flags & !WRITE_FLAGS) | ffi::SQLITE_OPEN_READONLY
    } else {
        flags
    }
}

/// Nothing in Hermes' folder is ours to delete (SQLite would, for example, delete the `-wal`
/// of a database whose main file is empty).
unsafe extern "C" fn refuse_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    _name: *const c_char,
    _sync_dir: c_int,
) -> c_int {
    ffi::SQLITE_IOERR_DELETE
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    #[test]
    fn the_database_files_are_opened_read_only_and_temporary_files_as_asked() {
        let wal = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE | ffi::SQLITE_OPEN_WAL;
        assert_eq!(
            read_only_flags(wal, true),
            ffi::SQLITE_OPEN_READONLY | ffi::SQLITE_OPEN_WAL
        );
        let temp = ffi::SQLITE_OPEN_READWRITE
            | ffi::SQLITE_OPEN_CREATE
            | ffi::SQLITE_OPEN_DELETEONCLOSE
            | ffi::SQLITE_OPEN_TEMP_JOURNAL;
        assert_eq!(read_only_flags(temp, true), temp);
        assert_eq!(read_only_flags(wal, false), wal);
    }

    #[test]
    fn a_missing_file_is_not_created_even_when_sqlite_asks_to() {
        let name = register().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kanban.db");
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let opened = Connection::open_with_flags_and_vfs(&db, flags, name)
            .and_then(|c| c.execute_batch("CREATE TABLE t (x)"));
        assert!(opened.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
