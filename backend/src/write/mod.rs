//! Writers: the only code that puts collected data on disk, each behind the redaction gate.
//!
//! Probes never write; they return data. `status_json` writes the snapshot and, from the same
//! gated data, `snapshot_html` the no-JavaScript page; `atomic` is the shared
//! temp-file-fsync-rename step that keeps every reader's view whole. `projection` renders a
//! board into its vault `.kanban` file, failing closed on any file it did not write.

pub mod atomic;
pub mod projection;
pub mod snapshot_html;
pub mod status_json;
