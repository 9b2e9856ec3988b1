//! The slow integration suites (crash safety, hostile bundles, incremental builds, evaluation,
//! the shared bundles, the scale smoke test): `cargo test --test slow`; the rest are `tests/it`.

#[path = "../common/mod.rs"]
mod common;

// The modules that run a server, or the binary as a whole, need the `server` feature (on by
// default).

#[cfg(feature = "server")]
mod crash_safety;
mod eval;
mod hostile_bundles;
mod incremental;
mod scale_smoke;
mod shared_bundles;
