//! `kbtools gen-bundle` (hidden, feature `gen-bundle`): a deterministic synthetic bundle for
//! benchmarks; a JSON summary on stdout.

use anyhow::{Context, Result};

use crate::args::GenBundleArgs;
use crate::output::print_json;
use crate::Source;

pub(crate) fn run(args: GenBundleArgs, source: &Source) -> Result<i32> {
    let started = std::time::Instant::now();
    let options = kbtools::bundle_gen::GenOptions {
        pages: args.pages,
        seed: args.seed,
        page_bytes: args.page_bytes,
        zh_share: args.zh_share,
        replace: args.force,
        ..Default::default()
    };
    let report = kbtools::bundle_gen::generate(&args.dir, &options)
        .with_context(|| format!("generating a bundle in {}", args.dir.display()))?;
    let mut summary = serde_json::to_value(&report)?;
    summary["seconds"] =
        serde_json::json!((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0);
    print_json(&summary, source.pretty)?;
    Ok(0)
}
