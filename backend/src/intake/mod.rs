//! The report intake (spec 003 §1.2, §4): an A2A server the fleet's agents report to. Reports
//! become work-queue rows; replies are A2A Tasks and Messages of the caller's dialect.
//!
//! - [`wire`]: JSON-RPC in both dialects (and the Pulse plane's `content`), replies, errors.
//! - [`report`]: one message's report, from a data part or the lenient text form.

pub mod report;
pub mod wire;
