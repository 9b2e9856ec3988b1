//! Handing freed memory back to the system between a build's phases.
//!
//! The `kbtools` binary allocates with mimalloc, which keeps freed memory for reuse and hands
//! it back to the system only after a delay (a second, mimalloc 3's default). A build frees a
//! large amount at once when the search index writer writes its segments (its threads'
//! arenas; then the threads end): kept, that memory sat under the next phase's allocations, and
//! at 30,000 generated pages the peak resident memory was the arenas' and the catalog's
//! together.
//!
//! Outside the binary (the tests) mimalloc is linked but not the global allocator: its heaps
//! are empty and these calls change nothing that is measured.

/// mimalloc's `mi_option_t` number of its purge delay: its place in `mi_option_e`
/// (`include/mimalloc.h`) of mimalloc 3, which `libmimalloc-sys` 0.1 builds by default (and of
/// mimalloc 2); its bindings do not name it. `the_purge_delay_option_is_mimalloc_3s` checks it
/// against the option's default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Runs `work` with mimalloc purging every page freed meanwhile at once, then restores its
/// delay.
pub(crate) fn purging_at_once<T>(work: impl FnOnce() -> T) -> T {
    // SAFETY: mi_option_get/mi_option_set read and write one entry of mimalloc's option table;
    // the delay is read again at each purge, so a change applies from the next one.
    let delay = unsafe {
        let saved = libmimalloc_sys::mi_option_get(PURGE_DELAY);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
        saved
    };
    let out = work();
    // SAFETY: as above.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, delay);
    }
    out
}

/// Keeps freed memory from here on: for a process about to exit, which hands everything back
/// at once. mimalloc otherwise purges its arenas page range by page range at exit (`madvise`
/// per range): a tenth of a one-shot `kbtools call`'s last milliseconds.
pub fn keep_freed_memory() {
    // SAFETY: as in `purging_at_once`; a negative delay turns purging off.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

/// Returns the memory freed so far on this thread to the system (mimalloc's, and glibc's when
/// it is the allocator).
pub(crate) fn release_free() {
    // SAFETY: mi_collect only returns free memory of mimalloc's heaps.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: glibc's malloc_trim only hands free pages of its heaps back to the system.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option number names the purge delay: its default is mimalloc 3's (1,000 ms), unless
    /// the environment set it; the delay is restored after the work.
    #[test]
    fn the_purge_delay_option_is_mimalloc_3s() {
        // SAFETY: reads one entry of the option table.
        let delay = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(delay, 1000, "option {PURGE_DELAY} is not the purge delay");
        }
        assert_eq!(purging_at_once(|| 7), 7);
        // SAFETY: as above.
        let restored = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(restored, delay);
    }
}
