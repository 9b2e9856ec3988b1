//! The slow integration suites (crash safety, hostile bundles, incremental builds, evaluation,
//! the shared bundles, the scale smoke test): `cargo test --test slow`; the rest are `tests/it`.

#[path = "../common/mod.rs"]
mod common;

// The modules that run a server, or the binary as a whole, need the `server` feature, and those
// over a generated bundle the `gen-bundle` feature (both on by default).

#[cfg(all(feature = "server", feature = "gen-bundle"))]
mod crash_safety;
mod eval;
mod hostile_bundles;
#[cfg(feature = "gen-bundle")]
mod incremental;
#[cfg(feature = "gen-bundle")]
mod scale_smoke;
mod shared_bundles;
