//! A small deterministic random source for unit tests (xorshift64): the same seed gives the
//! same sequence on every machine, with no dependency.

/// The xorshift64 sequence from `seed` (not zero), one `u64` a call.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
