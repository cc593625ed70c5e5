//! driftd's comparison core: everything that decides *what* drifts, with no I/O.
//!
//! `manifest` reads and validates desired files, `diff` compares one desired object with its
//! live counterpart (a pure function), `helm` and `pulumi` read what those tools record,
//! `adopt` edits manifest text so it equals live objects, `audit` reduces audit events to
//! who wrote what, `plan` orders a source's objects for applying, `verdict` holds the drift
//! classes that both `diff` and `report` speak, and `report` the types every output shares
//! (the `/drift` wire format); `text` escapes untrusted text for terminals, logs and HTML.
//! The daemon, the store and the CLI build on these; this crate depends on none of tokio,
//! kube, rusqlite or an HTTP stack (its `Cargo.toml` is the proof), so it can be
//! unit-tested, fuzzed and benchmarked alone.

pub mod adopt;
pub mod audit;
pub mod diff;
pub mod helm;
pub mod manifest;
pub mod par;
pub mod plan;
pub mod pulumi;
pub mod report;
pub mod text;
pub mod verdict;
