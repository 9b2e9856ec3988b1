//! What the benches share with the `kbtools` command and its servers, so that their figures are
//! the command's: the allocator of src/bin/kbtools/main.rs, and the index opened as `serve` and `mcp` open it.
//! (Each bench also turns huge pages off first thing, as the command does.)

use std::path::Path;

use kbtools::index::Verify;
use kbtools::kb::{KnowledgeBase, ServeOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Opens the index at `index_dir` as the servers do: every file checked, every document's
/// catalog position read.
pub fn open_as_server(index_dir: &Path, bundle: &Path) -> KnowledgeBase {
    let options = ServeOptions {
        verify: Verify::Full,
        ..ServeOptions::default()
    };
    KnowledgeBase::open(index_dir, Some(bundle), options).expect("open the index")
}
