//! `kbtools check`: the findings of a bundle in the form asked for, and the exit status a CI
//! job gates on.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Result};

use kbtools::check::report::{self, Context, Format};
use kbtools::ingest::bundle::{Code, Severity};

use crate::open::one_bundle;
use crate::Source;

pub(super) fn check(
    bundle_path: Option<PathBuf>,
    source: &Source,
    format: Format,
    strict: bool,
    allow: &[String],
    codes: bool,
) -> Result<i32> {
    if codes {
        let mut out = String::new();
        for code in Code::ALL {
            out.push_str(&format!(
                "{}  {:<7}  {}\n       fix: {}\n",
                code.as_str(),
                code.severity().as_str(),
                code.title(),
                code.hint()
            ));
        }
        std::io::stdout().write_all(out.as_bytes())?;
        return Ok(0);
    }
    let root = one_bundle(bundle_path, source.bundle.clone())?.ok_or_else(|| {
        anyhow!(
            "say which bundle to check: kbtools check <BUNDLE> (or --bundle, or KBTOOLS_BUNDLE)"
        )
    })?;
    let allow = allow
        .iter()
        .filter(|a| !a.trim().is_empty())
        .map(|a| {
            Code::parse(a).ok_or_else(|| {
                anyhow!(
                    "--allow {a:?}: not a kbtools check code (KB001 … KB099; `kbtools check --codes` lists them)"
                )
            })
        })
        .collect::<Result<Vec<Code>>>()?;
    let report = kbtools::check::check(&root, &allow)?;
    let threshold = if strict {
        Severity::Warning
    } else {
        Severity::Error
    };
    let cx = Context {
        root: &root,
        threshold,
    };
    let text = report::write(&report, format, &cx);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(i32::from(report.fails(threshold)))
}
