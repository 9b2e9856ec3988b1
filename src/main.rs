//! The `kbtools` command: a thin clap front door over the library.

mod cli;

/// mimalloc instead of the system allocator: indexing makes millions of small, short-lived
/// allocations (tokens, terms, parsed records), where glibc's malloc spent about a sixth of a
/// 100k-page build.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    kbtools::no_transparent_huge_pages();
    let code = cli::main();
    kbtools::memory::keep_freed_memory();
    std::process::exit(code);
}
