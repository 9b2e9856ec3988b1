//! `kbtools index`: build (or refresh) a bundle's index; a JSON summary on stdout.

use std::path::PathBuf;

use anyhow::{anyhow, Result};

use crate::open::{build_index, one_bundle};
use crate::Source;

/// Indexes `bundle_path` (or the global `--bundle`) with `threads` writer threads (0: the
/// machine's choice), in full or as a refresh; `(semantic, no_semantic)` are the two flags;
/// `publish` the folder to publish into for read replicas, and how many generations it keeps.
pub(crate) fn run(
    bundle_path: Option<PathBuf>,
    threads: usize,
    full: bool,
    (semantic, no_semantic): (bool, bool),
    publish: Option<(PathBuf, usize)>,
    source: &Source,
) -> Result<i32> {
    let bundle = one_bundle(bundle_path, source.bundle.clone())?.ok_or_else(|| {
        anyhow!(
            "say which bundle to index: kbtools index <BUNDLE> (or --bundle, or KBTOOLS_BUNDLE)"
        )
    })?;
    let semantic = match (semantic, no_semantic) {
        (true, _) => kbtools::index::Semantic::On,
        (_, true) => kbtools::index::Semantic::Off,
        _ => kbtools::index::Semantic::Auto,
    };
    build_index(&bundle, threads, full, semantic, publish, source)
}
