//! Finding, building and opening the index a command answers from: the bundle and index
//! locations, the build and its diagnostics, and the errors that say what to do.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use serde_json::json;

use crate::output::print_json;
use crate::Source;
use kbtools::index::{self, BuildOptions};
use kbtools::kb::{KnowledgeBase, ServeOptions};

/// The bundle named positionally or by `--bundle` / `KBTOOLS_BUNDLE`: one of them, or both the
/// same folder. The argument wins over the environment (`--bundle` as `KBTOOLS_BUNDLE` set
/// it); an argument and a `--bundle` that name two folders are an error.
pub(super) fn one_bundle(
    positional: Option<PathBuf>,
    flag: Option<PathBuf>,
) -> Result<Option<PathBuf>> {
    let from_env = flag.is_some()
        && std::env::var_os("KBTOOLS_BUNDLE").map(PathBuf::from) == flag
        && !std::env::args_os()
            .any(|a| a == "-b" || a == "--bundle" || a.to_string_lossy().starts_with("--bundle="));
    let same = |a: &Path, b: &Path| {
        a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    };
    match (positional, flag) {
        (Some(a), Some(_)) if from_env => Ok(Some(a)),
        (Some(a), Some(b)) if !same(&a, &b) => Err(anyhow!(
            "the bundle is named twice, as {} and as --bundle (or KBTOOLS_BUNDLE) {}: name it once",
            a.display(),
            b.display()
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// A bundle path that is missing or is a file: an error saying what was found.
pub(super) fn check_bundle_path(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(anyhow!(
            "{}: no such folder; pass the bundle's folder (the one holding index.md and pages/) or a folder of Markdown files",
            path.display()
        )),
        Err(e) => Err(anyhow!("{}: cannot be read ({e})", path.display())),
        Ok(meta) if !meta.is_dir() => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| ".".to_string(), |p| p.display().to_string());
            Err(anyhow!(
                "{} is a file, not a folder: pass the folder that holds the bundle or the Markdown files (perhaps {parent})",
                path.display()
            ))
        }
        Ok(_) => Ok(()),
    }
}

/// Refuses a knowledge base without a single source page unless `--allow-empty`, saying what
/// the folder holds.
pub(super) fn refuse_empty(source: &Source, bundle: &Path, source_pages: usize) -> Result<()> {
    if source_pages > 0 || source.allow_empty {
        return Ok(());
    }
    Err(anyhow!(
        "{} holds no Markdown page ({}): kbtools answers from *.md files; pass the folder that holds them, or --allow-empty to use it as it is",
        bundle.display(),
        describe_folder(bundle)
    ))
}

/// What a first look through a folder found, before a build: whether a file is named `*.md`,
/// and how many such files stand under folders named `node_modules` (installed packages' own
/// docs, seldom what a knowledge base means to answer from). At most 100,000 entries are looked
/// at; past them the folder counts as holding Markdown and the build decides.
pub(super) struct Survey {
    markdown: bool,
    dependencies: usize,
}

/// Looks through `bundle` ([`Survey`]) and refuses, before anything is built, a folder in which
/// no file is named `*.md` (unless `--allow-empty`): a build of it would only end in
/// [`refuse_empty`].
pub(super) fn survey(source: &Source, bundle: &Path) -> Result<Survey> {
    let mut found = Survey {
        markdown: false,
        dependencies: 0,
    };
    let mut seen = 0usize;
    let mut stack = vec![(bundle.to_path_buf(), false)];
    'walk: while let Some((folder, dependency)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > 100_000 {
                found.markdown = true;
                break 'walk;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    stack.push((entry.path(), dependency || name == "node_modules"));
                }
                Ok(_)
                    if name.len() > 3
                        && name.as_bytes()[name.len() - 3..].eq_ignore_ascii_case(b".md") =>
                {
                    found.markdown = true;
                    found.dependencies += usize::from(dependency);
                }
                _ => {}
            }
        }
    }
    if !found.markdown {
        refuse_empty(source, bundle, 0)?;
    }
    Ok(found)
}

/// After a build that read `node_modules` folders' pages (none of its `--exclude` patterns names
/// them): one hint naming `--exclude node_modules/`.
pub(super) fn hint_dependencies(source: &Source, survey: &Survey, exclude: &[String]) {
    let excluded = exclude
        .iter()
        .any(|p| p.trim_matches('/').split('/').any(|s| s == "node_modules"));
    if source.quiet || survey.dependencies == 0 || excluded {
        return;
    }
    let files = match survey.dependencies {
        1 => "1 Markdown file is".to_string(),
        n => format!("{n} Markdown files are"),
    };
    eprintln!(
        "kbtools: hint: {files} under node_modules/ (installed packages' own docs); leave them out with --exclude node_modules/"
    );
}

/// What a folder holds, counted (at most 10,000 entries looked at): "found 3 files (2 .txt,
/// 1 .json) in 1 folder".
pub(super) fn describe_folder(dir: &Path) -> String {
    let mut by_extension: std::collections::BTreeMap<String, usize> = Default::default();
    let (mut files, mut folders, mut seen) = (0usize, 0usize, 0usize);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > 10_000 {
                break;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    folders += 1;
                    stack.push(entry.path());
                }
                Ok(_) => {
                    files += 1;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let ext = match name.rsplit_once('.') {
                        Some((stem, ext)) if !stem.is_empty() => format!(".{ext}"),
                        _ => "no extension".into(),
                    };
                    *by_extension.entry(ext).or_default() += 1;
                }
                Err(_) => {}
            }
        }
    }
    if files == 0 {
        return format!("it is empty: no file in {folders} subfolders");
    }
    let mut kinds: Vec<(String, usize)> = by_extension.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown: Vec<String> = kinds
        .iter()
        .take(5)
        .map(|(e, n)| format!("{n} {e}"))
        .collect();
    format!(
        "found {files} files ({}{}) in {folders} subfolders",
        shown.join(", "),
        if kinds.len() > 5 { ", …" } else { "" }
    )
}

/// An index error with what fixes it: a folder that cannot be written names the flag or the
/// variable that moves the index elsewhere.
pub(super) fn explain_index_error(
    e: kbtools::error::IndexError,
    index_dir: &Path,
    chosen: bool,
) -> anyhow::Error {
    let unwritable = matches!(
        &e,
        kbtools::error::IndexError::Io { source, .. } if matches!(
            source.kind(),
            std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::ReadOnlyFilesystem
                | std::io::ErrorKind::NotADirectory
        )
    );
    if !unwritable {
        return e.into();
    }
    let how = if chosen {
        "pass an --index folder you can write to".to_string()
    } else {
        "pass --index DIR (or set KBTOOLS_INDEX) to a folder you can write to, or set XDG_CACHE_HOME to move the cache directory".to_string()
    };
    let why = match &e {
        kbtools::error::IndexError::Io { path, source } if Path::new(path) == index_dir => {
            source.to_string()
        }
        kbtools::error::IndexError::Io { path, source } => format!("{source}: {path}"),
        other => other.to_string(),
    };
    anyhow!(
        "cannot write the index folder {} ({why}); {how}",
        index_dir.display()
    )
}

pub(super) fn progress_printer(quiet: bool) -> impl FnMut(&str) {
    move |line: &str| {
        if !quiet {
            eprintln!("kbtools: {}", kbtools::text::terminal_safe_lines(line));
        }
    }
}

pub(super) fn serve_options(source: &Source) -> Result<ServeOptions> {
    let today = match &source.today {
        Some(text) => kbtools::okf::parse_date(text)
            .ok_or_else(|| anyhow!("--today {text:?} is not a YYYY-MM-DD date"))?,
        None => kbtools::okf::utc_today(),
    };
    Ok(ServeOptions {
        today,
        read_limit: source.read_limit,
        model_dir: source.model_dir.clone(),
        ..ServeOptions::default()
    })
}

pub(super) fn build_index(
    bundle: &Path,
    threads: usize,
    full: bool,
    semantic: index::Semantic,
    publish: Option<(PathBuf, usize)>,
    source: &Source,
) -> Result<i32> {
    check_bundle_path(bundle)?;
    let survey = survey(source, bundle)?;
    let index_dir = source
        .index
        .clone()
        .unwrap_or_else(|| index::default_index_dir(bundle));
    let options = BuildOptions {
        knowledge_base_id: source.kb_id.clone(),
        threads,
        full,
        streamed_bytes: None,
        semantic,
        model_dir: source.model_dir.clone(),
        exclude: exclusions(source),
        embedding: index::Embedding::Now,
        embed_progress: None,
    };
    if let Some((dir, _)) = &publish {
        // Before the build: a publish folder inside the bundle would be indexed by it.
        index::replica::check_target(bundle, &index_dir, dir)
            .map_err(|e| anyhow!("--publish {}: {e}", dir.display()))?;
    }
    let mut progress = progress_printer(source.quiet);
    let started = std::time::Instant::now();
    let report = index::build(bundle, &index_dir, &options, &mut progress)
        .map_err(|e| explain_index_error(e, &index_dir, source.index.is_some()))?;
    print_diagnostics(&report.diagnostics, source.quiet);
    refuse_empty(source, bundle, report.manifest.counts.source_pages as usize)?;
    hint_dependencies(source, &survey, &report.manifest.exclude);
    let published = match publish {
        Some((dir, keep)) => {
            let root = Path::new(&report.manifest.bundle_root);
            let published = index::replica::publish(&index_dir, root, &dir, keep)
                .map_err(|e| anyhow!("publishing into {}: {e}", dir.display()))?;
            Some(published)
        }
        None => None,
    };
    let m = &report.manifest;
    let mut summary = json!({
        "index": index_dir.display().to_string(),
        "knowledgeBaseId": m.knowledge_base_id,
        "knowledgeBaseName": m.knowledge_base_name,
        "bundleKind": m.bundle_kind,
        "activeContentRevision": m.active_content_revision,
        "revisionChanged": report.revision_changed,
        "counts": m.counts,
        "semantic": m.semantic,
        "work": report.work,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    if let Some(published) = published {
        summary["published"] = json!(published);
    }
    print_json(&summary, source.pretty)?;
    Ok(0)
}

/// Shows up to 20 diagnostics and a count; the full list is in the index's diagnostics.json.
pub(super) fn print_diagnostics(diagnostics: &[kbtools::ingest::bundle::Diagnostic], quiet: bool) {
    if quiet || diagnostics.is_empty() {
        return;
    }
    for d in diagnostics.iter().take(20) {
        // A diagnostic of no file starts with its severity already.
        match d.path.is_empty() {
            true => eprintln!("kbtools: {d}"),
            false => eprintln!("kbtools: warning: {d}"),
        }
    }
    if diagnostics.len() > 20 {
        eprintln!(
            "kbtools: … and {} more diagnostics (all in the index's diagnostics.json)",
            diagnostics.len() - 20
        );
    }
    eprintln!("kbtools: {} diagnostics in all", diagnostics.len());
}

/// Where a command's knowledge base lives: a bundle and its index folder, or only an index
/// folder whose bundle moved away (answered as built) or that was published (answered from its
/// own copy).
pub(super) struct Location {
    pub(super) bundle: Option<PathBuf>,
    pub(super) index_dir: PathBuf,
}

pub(super) fn locate(source: &Source) -> Result<Location> {
    match (&source.bundle, &source.index) {
        (Some(bundle), index) => {
            check_bundle_path(bundle)?;
            Ok(Location {
                bundle: Some(bundle.clone()),
                index_dir: index
                    .clone()
                    .unwrap_or_else(|| index::default_index_dir(bundle)),
            })
        }
        (None, Some(index_dir)) => {
            let manifest = index::read_manifest(index_dir)?.ok_or_else(|| {
                anyhow!(
                    "{}: no index here; run `kbtools index <BUNDLE> --index {}` first",
                    index_dir.display(),
                    index_dir.display()
                )
            })?;
            // A published folder (`--publish`) answers from its own copy of the bundle, never
            // from the builder's folder its manifest names, even where that exists here.
            let published = index::current_generation(index_dir)
                .is_some_and(|generation| index::replica::is_published(&generation));
            let root = PathBuf::from(&manifest.bundle_root);
            Ok(Location {
                bundle: (!published && root.is_dir()).then_some(root),
                index_dir: index_dir.clone(),
            })
        }
        (None, None) => Err(anyhow!(
            "say which bundle to answer from: --bundle <DIR> (or --index <DIR>, or KBTOOLS_BUNDLE)"
        )),
    }
}

/// How a query command or a server builds the index it opens: deferred, so that it answers at
/// once (a server embeds the rest in the background, `kbtools index` embeds it).
pub(super) fn build_options(source: &Source) -> BuildOptions {
    BuildOptions {
        knowledge_base_id: source.kb_id.clone(),
        threads: 0,
        full: false,
        streamed_bytes: None,
        // Installed models embed (an index built `--no-semantic` stays without).
        semantic: index::Semantic::Auto,
        model_dir: source.model_dir.clone(),
        exclude: exclusions(source),
        embedding: index::Embedding::Deferred,
        embed_progress: None,
    }
}

/// The `--exclude` patterns given (`None`: none given, keep the index's; `''` clears them).
fn exclusions(source: &Source) -> Option<Vec<String>> {
    (!source.exclude.is_empty()).then(|| {
        source
            .exclude
            .iter()
            .filter(|pattern| !pattern.is_empty())
            .cloned()
            .collect()
    })
}

pub(super) fn open(source: &Source) -> Result<KnowledgeBase> {
    open_at(source, &locate(source)?, index::Verify::Quick)
}

/// [`open`], embedding what the index lacks before it opens (`kbtools eval`, which measures
/// the semantic lanes, waits for them as `kbtools index` does).
pub(super) fn open_embedded(source: &Source) -> Result<KnowledgeBase> {
    let location = locate(source)?;
    let build = BuildOptions {
        embedding: index::Embedding::Now,
        ..build_options(source)
    };
    open_ahead_with(source, &location, index::Verify::Quick, &build, |_| ()).map(|(kb, _)| kb)
}

/// Opens the index at `location`, building it first when it is missing, damaged (its files
/// checked at `verify`) or stale.
pub(super) fn open_at(
    source: &Source,
    location: &Location,
    verify: index::Verify,
) -> Result<KnowledgeBase> {
    open_ahead_at(source, location, verify, |_| ()).map(|(kb, _)| kb)
}

/// [`open`], with `ahead` (a tool's run) answered by the index while the bundle is checked
/// ([`KnowledgeBase::open_or_build_ahead`]); its result, unless the index had to be rebuilt.
pub(super) fn open_ahead<T>(
    source: &Source,
    ahead: impl FnOnce(&KnowledgeBase) -> T,
) -> Result<(KnowledgeBase, Option<T>)> {
    open_ahead_at(source, &locate(source)?, index::Verify::Quick, ahead)
}

fn open_ahead_at<T>(
    source: &Source,
    location: &Location,
    verify: index::Verify,
    ahead: impl FnOnce(&KnowledgeBase) -> T,
) -> Result<(KnowledgeBase, Option<T>)> {
    open_ahead_with(source, location, verify, &build_options(source), ahead)
}

fn open_ahead_with<T>(
    source: &Source,
    location: &Location,
    verify: index::Verify,
    build: &BuildOptions,
    ahead: impl FnOnce(&KnowledgeBase) -> T,
) -> Result<(KnowledgeBase, Option<T>)> {
    let options = ServeOptions {
        verify,
        ..serve_options(source)?
    };
    let Some(bundle) = &location.bundle else {
        // The bundle moved away: answer from the index as built.
        return Ok((
            KnowledgeBase::open(&location.index_dir, None, options)?,
            None,
        ));
    };
    if source.no_refresh && matches!(index::read_manifest(&location.index_dir), Ok(Some(_))) {
        let kb = KnowledgeBase::open(&location.index_dir, Some(bundle), options)?;
        return Ok((kb, None));
    }
    // A first build looks through the folder first: a folder without Markdown is refused
    // before anything is built. Later ones do not pay for the walk.
    let first = match index::read_manifest(&location.index_dir) {
        Ok(Some(_)) => None,
        _ => Some(survey(source, bundle)?),
    };
    let mut progress = progress_printer(source.quiet);
    let (kb, report, early) = KnowledgeBase::open_or_build_ahead(
        bundle,
        &location.index_dir,
        build,
        options,
        &mut progress,
        ahead,
    )
    .map_err(|e| explain_index_error(e, &location.index_dir, source.index.is_some()))?;
    if let Some(report) = report {
        print_diagnostics(&report.diagnostics, source.quiet);
        if let Some(first) = &first {
            hint_dependencies(source, first, &report.manifest.exclude);
        }
    }
    if let Some(stale) = &kb.stale {
        // Said even with --quiet: the answers may miss what changed.
        eprintln!(
            "kbtools: warning: {}",
            kbtools::text::terminal_safe_lines(stale)
        );
    }
    refuse_empty(source, bundle, kb.catalog.source_page_count() as usize)?;
    Ok((kb, early))
}
