//! Command-line front door: typed arguments (clap), resolved into library options, then one
//! library call. Exit codes: 0 success, 1 tool error (the error envelope, or its text form, is
//! printed on stdout),
//! 2 usage, I/O or index problems (a message on stderr).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};

use std::sync::Arc;

use kbtools::index::{self, BuildOptions, KnowledgeBase, ServeOptions};
use kbtools::live::{BundleWatcher, Level, LiveKnowledgeBase, Log, WatchMode, WatchOptions};
use kbtools::mcp::{serve_stdio, Format, McpOptions};
use kbtools::{error::new_request_id, tools};

#[derive(Parser)]
#[command(
    name = "kbtools",
    version,
    about = "Search and read an exported Focowiki knowledge-base bundle (or a Markdown folder) offline.",
    long_about = "Search and read an exported Focowiki knowledge-base bundle (or a plain Markdown folder) offline, with the six agent tools of the online Developer OpenAPI and their output contracts.\n\nExit codes: 0 success; 1 the tool answered with an error (its envelope is on stdout); 2 usage, I/O or index problem (message on stderr)."
)]
struct Cli {
    #[command(flatten)]
    source: Source,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Source {
    /// The bundle folder (or plain Markdown folder) to answer from.
    #[arg(long, short = 'b', global = true, env = "KBTOOLS_BUNDLE")]
    bundle: Option<PathBuf>,
    /// The index folder [default: a per-bundle folder under the user's cache directory].
    #[arg(long, global = true, env = "KBTOOLS_INDEX")]
    index: Option<PathBuf>,
    /// Set the knowledge-base id instead of deriving it from the knowledge-base name.
    #[arg(long, global = true)]
    kb_id: Option<String>,
    /// "Today" (YYYY-MM-DD, UTC) for OKF freshness; pins results for reproducible tests.
    #[arg(long, global = true, env = "KBTOOLS_TODAY")]
    today: Option<String>,
    /// Largest file a read returns, in bytes (larger reads answer 413).
    #[arg(long, global = true, default_value_t = 10 * 1024 * 1024)]
    read_limit: u64,
    /// Print no progress lines on stderr.
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    /// Indent JSON output.
    #[arg(long, global = true)]
    pretty: bool,
    /// Answer from the existing index as built, without checking the bundle for changes (the
    /// check stats every file of the bundle: on 100,000 pages that costs more than the answer).
    /// Run `kbtools index` after changing the bundle. An index that does not exist yet is
    /// still built.
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_NO_REFRESH",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    no_refresh: bool,
}

/// How a tool command prints its result.
#[derive(Args, Clone)]
struct RenderArgs {
    /// json: the contract JSON (an error as its envelope); text: the compact text format for
    /// models (docs/text-format.md; an error as `失败: <CODE> <message>`).
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    format: OutputFormat,
    /// Character budget of a text result; a longer one is cut and says how to continue.
    #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET)]
    text_budget: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputFormat {
    Json,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Build (or refresh) the index of a bundle.
    Index {
        /// The bundle folder.
        bundle_path: PathBuf,
        /// Writer threads (0: pick from the machine).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Read and index every file again instead of only what changed since the last build.
        #[arg(long)]
        full: bool,
    },
    /// Serve the Developer OpenAPI read routes of the six tools over HTTP (read-only), one
    /// knowledge base per bundle; Ctrl-C stops it gracefully.
    Serve {
        /// Bundle folders (or plain Markdown folders); each is served under its knowledge-base
        /// id (`GET /openapi/v2/knowledge-bases` lists them). Default: --bundle.
        bundles: Vec<PathBuf>,
        /// Address to listen on. The default is loopback only; binding elsewhere exposes the
        /// knowledge base to the network (use --token).
        #[arg(long, default_value = "127.0.0.1:43200")]
        addr: String,
        /// Require `Authorization: Bearer <TOKEN>` on every request (401 UNAUTHORIZED otherwise).
        #[arg(long, env = "KBTOOLS_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Longest time one request may take, in seconds.
        #[arg(long, default_value_t = 30)]
        request_timeout: u64,
        /// Longest time a client may take to send a request's headers, and longest idle time of
        /// a kept-alive connection, in seconds; the connection is closed after it.
        #[arg(long, default_value_t = 10)]
        header_timeout: u64,
        /// Most connections served at once (more wait to be accepted).
        #[arg(long, default_value_t = 1024)]
        max_connections: usize,
        /// Longest time a response may wait for a client that stopped reading, in seconds; the
        /// connection is closed after it.
        #[arg(long, default_value_t = 30)]
        write_timeout: u64,
        /// Rebuild the index when files in a bundle change (the server switches to the rebuilt
        /// index between requests).
        #[arg(long)]
        watch: bool,
    },
    /// Serve the six tools as a local MCP server on stdio (for agents); logs go to stderr.
    Mcp {
        /// The bundle folder (same as --bundle).
        bundle_path: Option<PathBuf>,
        /// The result format of a call that does not name one: text (compact, for models) or
        /// json (the contract JSON).
        #[arg(long = "format", default_value = "text", value_parser = ["text", "json"])]
        result_format: String,
        /// Character budget of a text result.
        #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET)]
        text_budget: usize,
        /// Append one JSON line per call (tool, input, contract JSON output, duration) to FILE.
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        /// Rebuild the index when files in the bundle change (the server switches to the rebuilt
        /// index between calls).
        #[arg(long)]
        watch: bool,
    },
    /// Run one tool with its JSON input exactly as an agent sends it; prints the contract JSON
    /// (or, with --format text, the compact text for models).
    Call {
        /// search_files, read_file, list_tree, get_file, read_related or expand_graph.
        tool: String,
        /// The tool input as JSON ('-' reads it from stdin) [default: {}].
        input: Option<String>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Search for candidate pages (search_files).
    Search {
        query: String,
        /// file, graph or hybrid.
        #[arg(long)]
        mode: Option<String>,
        /// all, path or metadata.
        #[arg(long)]
        scope: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        graph_depth: Option<u32>,
        #[arg(long)]
        graph_fanout: Option<u32>,
        #[arg(long)]
        okf_status: Option<String>,
        #[arg(long)]
        okf_trust_tier: Option<String>,
        #[arg(long)]
        okf_freshness: Option<String>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Read a file by path or id (read_file).
    Read {
        /// A bundle path (e.g. pages/guide.md) or a fileId.
        target: String,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// List the direct children of a directory (list_tree).
    Tree {
        /// The directory [default: the root].
        parent: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// A file's metadata (get_file).
    File {
        /// A fileId or a bundle path (get_file accepts either).
        target: String,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Pages related to a source page (read_related).
    Related {
        target: String,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Measure search quality against relevance judgments (BEIR queries.jsonl + qrels TSV).
    Eval {
        /// queries.jsonl ({"_id", "text"} per line).
        #[arg(long)]
        queries: PathBuf,
        /// qrels TSV (query-id, corpus-id, score); corpus-id <id> is page pages/<id>.md.
        #[arg(long)]
        qrels: PathBuf,
        /// Modes to evaluate (repeatable) [default: file, graph, hybrid].
        #[arg(long)]
        mode: Vec<String>,
        /// Print a JSON report instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Install the agent Skill `knowledge-base-tools` (how an agent answers from the knowledge
    /// base with these tools).
    Skill {
        #[command(subcommand)]
        action: SkillAction,
    },
    /// Write a deterministic synthetic bundle for benchmarks (for developers); prints a JSON
    /// summary.
    #[command(hide = true)]
    GenBundle(GenBundleArgs),
    /// Explore the relation graph from a source page (expand_graph).
    Expand {
        target: String,
        #[arg(long)]
        depth: Option<u32>,
        #[arg(long)]
        fanout: Option<u32>,
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        render: RenderArgs,
    },
}

/// `gen-bundle`: a synthetic bundle for benchmarks (hidden; `kbtools::bundle_gen`).
#[derive(Args)]
struct GenBundleArgs {
    /// The folder to write (absent or empty).
    dir: PathBuf,
    /// Number of document pages.
    #[arg(long)]
    pages: usize,
    /// Seed of the generator (the same seed gives the same bytes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// About how large a page is, in bytes.
    #[arg(long, default_value_t = 3000)]
    page_bytes: usize,
    /// Share of Chinese pages (0–1).
    #[arg(long, default_value_t = 0.3)]
    zh_share: f32,
    /// Replace DIR when it holds an earlier generated bundle.
    #[arg(long)]
    force: bool,
}

#[derive(Subcommand)]
enum SkillAction {
    /// Write the Skill to <DIR>/knowledge-base-tools/ (e.g. ~/.claude/skills); prints the paths
    /// of its files on stderr.
    Install {
        /// The skills folder to install into.
        dir: PathBuf,
        /// Overwrite Skill files that exist with other content.
        #[arg(long)]
        force: bool,
    },
}

/// Runs the command line and returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kbtools: {e:#}");
            2
        }
    }
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(v) = value {
        map.insert(key.to_string(), v.into());
    }
}

fn run(cli: Cli) -> Result<i32> {
    let source = cli.source;
    match cli.command {
        Command::Index {
            bundle_path,
            threads,
            full,
        } => build_index(&bundle_path, threads, full, &source),
        Command::Call {
            tool,
            input,
            render,
        } => {
            let text = match input.as_deref() {
                None => "{}".to_string(),
                Some("-") => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("reading the tool input from stdin")?;
                    s
                }
                Some(s) => s.to_string(),
            };
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| anyhow!("the tool input is not valid JSON: {e}"))?;
            answer(&source, &render, &tool, &value)
        }
        Command::Search {
            query,
            mode,
            scope,
            limit,
            cursor,
            graph_depth,
            graph_fanout,
            okf_status,
            okf_trust_tier,
            okf_freshness,
            render,
        } => {
            let mut m = Map::new();
            m.insert("query".into(), query.into());
            insert_some(&mut m, "mode", mode);
            insert_some(&mut m, "scope", scope);
            insert_some(&mut m, "limit", limit);
            insert_some(&mut m, "cursor", cursor);
            insert_some(&mut m, "graphDepth", graph_depth);
            insert_some(&mut m, "graphFanout", graph_fanout);
            insert_some(&mut m, "okfStatus", okf_status);
            insert_some(&mut m, "okfTrustTier", okf_trust_tier);
            insert_some(&mut m, "okfFreshness", okf_freshness);
            answer(&source, &render, "search_files", &Value::Object(m))
        }
        Command::Serve {
            bundles,
            addr,
            token,
            request_timeout,
            header_timeout,
            max_connections,
            write_timeout,
            watch,
        } => {
            kbtools::analysis::load_dictionary_at_first_cjk_query();
            let limits = ServeLimits {
                request_timeout,
                header_timeout,
                max_connections,
                write_timeout,
            };
            serve_http(&source, bundles, &addr, token, limits, watch)
        }
        Command::Mcp {
            bundle_path,
            result_format,
            text_budget,
            audit_log,
            watch,
        } => {
            kbtools::analysis::load_dictionary_at_first_cjk_query();
            let mut source = source;
            if bundle_path.is_some() {
                source.bundle = bundle_path;
            }
            let (live, watcher) = open_live(&source, watch)?;
            let options = McpOptions {
                format: Format::parse(&result_format).unwrap_or_default(),
                text_budget,
                audit_log,
            };
            if !source.quiet {
                let kb = live.snapshot();
                eprintln!(
                    "kbtools: MCP server on stdio for {} (revision {}, {} files)",
                    kb.manifest.bundle_root,
                    kb.manifest.active_content_revision,
                    kb.manifest.counts.files
                );
            }
            serve_stdio(live, options, server_log(source.quiet))?;
            drop(watcher);
            Ok(0)
        }
        Command::Eval {
            queries,
            qrels,
            mode,
            json,
        } => {
            // Thousands of queries: the whole dictionary, loaded before any is timed.
            kbtools::analysis::load_dictionary();
            evaluate(&source, &queries, &qrels, mode, json)
        }
        Command::Read { target, render } => {
            let input = if looks_like_id(&target) {
                json!({ "fileId": target })
            } else {
                json!({ "path": target })
            };
            answer(&source, &render, "read_file", &input)
        }
        Command::Tree {
            parent,
            limit,
            cursor,
            render,
        } => {
            let mut m = Map::new();
            insert_some(&mut m, "parentPath", parent);
            insert_some(&mut m, "limit", limit);
            insert_some(&mut m, "cursor", cursor);
            answer(&source, &render, "list_tree", &Value::Object(m))
        }
        Command::File { target, render } => {
            answer(&source, &render, "get_file", &json!({ "fileId": target }))
        }
        Command::Related {
            target,
            limit,
            cursor,
            render,
        } => {
            let mut m = Map::new();
            m.insert("fileId".into(), target.into());
            insert_some(&mut m, "limit", limit);
            insert_some(&mut m, "cursor", cursor);
            answer(&source, &render, "read_related", &Value::Object(m))
        }
        Command::Skill {
            action: SkillAction::Install { dir, force },
        } => {
            for path in kbtools::skill::install(&dir, force)? {
                if !source.quiet {
                    eprintln!("{}", path.display());
                }
            }
            Ok(0)
        }
        Command::GenBundle(args) => {
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
            summary["seconds"] = json!((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0);
            print_json(&summary, source.pretty)?;
            Ok(0)
        }
        Command::Expand {
            target,
            depth,
            fanout,
            cursor,
            render,
        } => {
            let mut m = Map::new();
            m.insert("fileId".into(), target.into());
            insert_some(&mut m, "depth", depth);
            insert_some(&mut m, "fanout", fanout);
            insert_some(&mut m, "cursor", cursor);
            answer(&source, &render, "expand_graph", &Value::Object(m))
        }
    }
}

fn evaluate(
    source: &Source,
    queries: &Path,
    qrels: &Path,
    modes: Vec<String>,
    as_json: bool,
) -> Result<i32> {
    let modes = if modes.is_empty() {
        vec![
            "file".to_string(),
            "graph".to_string(),
            "hybrid".to_string(),
        ]
    } else {
        modes
    };
    for mode in &modes {
        if !["file", "graph", "hybrid"].contains(&mode.as_str()) {
            return Err(anyhow!("--mode {mode:?}: expected file, graph or hybrid"));
        }
    }
    let queries = kbtools::eval::load_queries(queries).map_err(|e| anyhow!(e))?;
    let qrels = kbtools::eval::load_qrels(qrels).map_err(|e| anyhow!(e))?;
    let kb = open(source)?;
    let mut report = Map::new();
    for mode in &modes {
        let metrics = kbtools::eval::evaluate(&kb, &queries, &qrels, mode);
        report.insert(mode.clone(), serde_json::to_value(metrics)?);
    }
    if as_json {
        let value = json!({
            "knowledgeBaseName": kb.manifest.knowledge_base_name,
            "activeContentRevision": kb.manifest.active_content_revision,
            "modes": report,
        });
        print_json(&value, source.pretty)?;
    } else {
        println!(
            "{} (revision {})",
            kb.manifest.knowledge_base_name, kb.manifest.active_content_revision
        );
        println!(
            "{:<8} {:>8} {:>10} {:>11} {:>8} {:>8} {:>7} {:>10}",
            "mode",
            "nDCG@10",
            "Recall@10",
            "Recall@100",
            "MRR@10",
            "queries",
            "failed",
            "median ms"
        );
        for (mode, m) in &report {
            let f = |k: &str| m[k].as_f64().unwrap_or(0.0);
            println!(
                "{:<8} {:>8.4} {:>10.4} {:>11.4} {:>8.4} {:>8} {:>7} {:>10.2}",
                mode,
                f("ndcgAt10"),
                f("recallAt10"),
                f("recallAt100"),
                f("mrrAt10"),
                m["queries"].as_u64().unwrap_or(0),
                m["failed"].as_u64().unwrap_or(0),
                f("medianQueryMs")
            );
        }
    }
    Ok(0)
}

fn looks_like_id(target: &str) -> bool {
    target.starts_with("source-file-") || target.starts_with("generated-")
}

fn progress_printer(quiet: bool) -> impl FnMut(&str) {
    move |line: &str| {
        if !quiet {
            eprintln!("kbtools: {line}");
        }
    }
}

fn serve_options(source: &Source) -> Result<ServeOptions> {
    let today = match &source.today {
        Some(text) => kbtools::okf::parse_date(text)
            .ok_or_else(|| anyhow!("--today {text:?} is not a YYYY-MM-DD date"))?,
        None => kbtools::okf::utc_today(),
    };
    Ok(ServeOptions {
        today,
        read_limit: source.read_limit,
        ..ServeOptions::default()
    })
}

fn build_index(bundle: &Path, threads: usize, full: bool, source: &Source) -> Result<i32> {
    let index_dir = source
        .index
        .clone()
        .unwrap_or_else(|| index::default_index_dir(bundle));
    let options = BuildOptions {
        knowledge_base_id: source.kb_id.clone(),
        threads,
        full,
        streamed_bytes: None,
    };
    let mut progress = progress_printer(source.quiet);
    let started = std::time::Instant::now();
    let report = index::build(bundle, &index_dir, &options, &mut progress)?;
    print_diagnostics(&report.diagnostics, source.quiet);
    let m = &report.manifest;
    let summary = json!({
        "index": index_dir.display().to_string(),
        "knowledgeBaseId": m.knowledge_base_id,
        "knowledgeBaseName": m.knowledge_base_name,
        "bundleKind": m.bundle_kind,
        "activeContentRevision": m.active_content_revision,
        "revisionChanged": report.revision_changed,
        "counts": m.counts,
        "work": report.work,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    print_json(&summary, source.pretty)?;
    Ok(0)
}

/// Shows up to 20 diagnostics and a count; the full list is in the index's diagnostics.json.
fn print_diagnostics(diagnostics: &[kbtools::bundle::Diagnostic], quiet: bool) {
    if quiet || diagnostics.is_empty() {
        return;
    }
    for d in diagnostics.iter().take(20) {
        eprintln!("kbtools: warning: {d}");
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
/// folder whose bundle moved away (answered as built).
struct Location {
    bundle: Option<PathBuf>,
    index_dir: PathBuf,
}

fn locate(source: &Source) -> Result<Location> {
    match (&source.bundle, &source.index) {
        (Some(bundle), index) => Ok(Location {
            bundle: Some(bundle.clone()),
            index_dir: index
                .clone()
                .unwrap_or_else(|| index::default_index_dir(bundle)),
        }),
        (None, Some(index_dir)) => {
            let manifest = index::read_manifest(index_dir)?.ok_or_else(|| {
                anyhow!(
                    "{}: no index here; run `kbtools index <BUNDLE> --index {}` first",
                    index_dir.display(),
                    index_dir.display()
                )
            })?;
            let root = PathBuf::from(&manifest.bundle_root);
            Ok(Location {
                bundle: root.is_dir().then_some(root),
                index_dir: index_dir.clone(),
            })
        }
        (None, None) => Err(anyhow!(
            "say which bundle to answer from: --bundle <DIR> (or --index <DIR>, or KBTOOLS_BUNDLE)"
        )),
    }
}

fn build_options(source: &Source) -> BuildOptions {
    BuildOptions {
        knowledge_base_id: source.kb_id.clone(),
        threads: 0,
        full: false,
        streamed_bytes: None,
    }
}

fn open(source: &Source) -> Result<KnowledgeBase> {
    open_at(source, &locate(source)?, index::Verify::Quick)
}

/// Opens the index at `location`, building it first when it is missing, damaged (its files
/// checked at `verify`) or stale.
fn open_at(source: &Source, location: &Location, verify: index::Verify) -> Result<KnowledgeBase> {
    let options = ServeOptions {
        verify,
        ..serve_options(source)?
    };
    let Some(bundle) = &location.bundle else {
        // The bundle moved away: answer from the index as built.
        return Ok(KnowledgeBase::open(&location.index_dir, None, options)?);
    };
    if source.no_refresh && matches!(index::read_manifest(&location.index_dir), Ok(Some(_))) {
        return Ok(KnowledgeBase::open(
            &location.index_dir,
            Some(bundle),
            options,
        )?);
    }
    let mut progress = progress_printer(source.quiet);
    let (kb, report) = KnowledgeBase::open_or_build(
        bundle,
        &location.index_dir,
        &build_options(source),
        options,
        &mut progress,
    )?;
    if let Some(report) = report {
        print_diagnostics(&report.diagnostics, source.quiet);
    }
    if let Some(stale) = &kb.stale {
        // Said even with --quiet: the answers may miss what changed.
        eprintln!("kbtools: warning: {stale}");
    }
    Ok(kb)
}

/// What a server says while it runs: progress unless `quiet`, warnings always (on stderr; the
/// MCP server's stdout carries the protocol only).
fn server_log(quiet: bool) -> Log {
    Arc::new(move |level: Level, line: &str| match level {
        Level::Progress if quiet => {}
        Level::Progress => eprintln!("kbtools: {line}"),
        Level::Warning => eprintln!("kbtools: warning: {line}"),
    })
}

/// Opens the knowledge base of a server: it follows its index folder (a rebuilt index is
/// switched to between requests) and, with `watch`, a watcher rebuilds the index when the
/// bundle changes. Keep the watcher as long as the server runs.
fn open_live(
    source: &Source,
    watch: bool,
) -> Result<(Arc<LiveKnowledgeBase>, Option<BundleWatcher>)> {
    let location = locate(source)?;
    // A server answers from what it opens for long: every file is checked.
    let kb = open_at(source, &location, index::Verify::Full)?;
    let log = server_log(source.quiet);
    let live = Arc::new(LiveKnowledgeBase::from_opened(
        kb,
        &location.index_dir,
        location.bundle.as_deref(),
        log.clone(),
    ));
    if !watch {
        return Ok((live, None));
    }
    let Some(bundle) = &location.bundle else {
        return Err(anyhow!(
            "--watch: the bundle {} of the index {} is gone; there is nothing to watch",
            live.snapshot().manifest.bundle_root,
            location.index_dir.display()
        ));
    };
    let watcher = BundleWatcher::start(
        bundle,
        &location.index_dir,
        build_options(source),
        Some(live.clone()),
        WatchOptions::default(),
        log,
    )?;
    if !source.quiet {
        let how = match watcher.mode() {
            WatchMode::Events => "file events",
            WatchMode::Polling => "polling",
        };
        eprintln!(
            "kbtools: watching {} for changes ({how}); the index is rebuilt when it changes",
            bundle.display()
        );
    }
    Ok((live, Some(watcher)))
}

fn answer(source: &Source, render: &RenderArgs, tool: &str, input: &Value) -> Result<i32> {
    if !tools::TOOL_NAMES.contains(&tool) {
        return Err(anyhow!(
            "unknown tool {tool:?}; the tools are {}",
            tools::TOOL_NAMES.join(", ")
        ));
    }
    let kb = open(source)?;
    let result = tools::call(&kb, tool, input);
    // A one-shot process: the OS frees the knowledge base faster than its destructors would
    // (hundreds of thousands of small allocations on a large bundle).
    std::mem::forget(kb);
    if render.format == OutputFormat::Text {
        let text = match &result {
            Ok(output) => kbtools::render::render_output(tool, input, output, render.text_budget),
            Err(error) => kbtools::render::render_error(error),
        };
        print_text(text)?;
        return Ok(if result.is_ok() { 0 } else { 1 });
    }
    match result {
        Ok(output) => {
            print_json(&output, source.pretty)?;
            Ok(0)
        }
        Err(error) => {
            print_json(&error.envelope(&new_request_id()), source.pretty)?;
            Ok(1)
        }
    }
}

/// The HTTP server's limits as typed (seconds, counts).
struct ServeLimits {
    request_timeout: u64,
    header_timeout: u64,
    max_connections: usize,
    write_timeout: u64,
}

fn serve_http(
    source: &Source,
    bundles: Vec<PathBuf>,
    addr: &str,
    token: Option<String>,
    limits: ServeLimits,
    watch: bool,
) -> Result<i32> {
    if token.as_ref().is_some_and(|t| t.trim().is_empty()) {
        return Err(anyhow!(
            "--token (or KBTOOLS_TOKEN) is empty: an empty token would turn authentication off; pass a token, or leave --token and KBTOOLS_TOKEN unset to serve without one"
        ));
    }
    let bundles = if bundles.is_empty() {
        source.bundle.clone().into_iter().collect()
    } else {
        bundles
    };
    if bundles.len() > 1 && (source.index.is_some() || source.kb_id.is_some()) {
        return Err(anyhow!(
            "--index and --kb-id name one knowledge base; with several bundles each gets its own default index folder and id"
        ));
    }
    let mut kbs = Vec::new();
    let mut watchers = Vec::new();
    let mut add = |source: &Source| -> Result<()> {
        let (live, watcher) = open_live(source, watch)?;
        kbs.push(live);
        watchers.extend(watcher);
        Ok(())
    };
    if bundles.is_empty() {
        add(source)?;
    }
    for bundle in bundles {
        let mut one = source.clone();
        one.bundle = Some(bundle);
        add(&one)?;
    }
    let options = kbtools::http::HttpOptions {
        token: token.clone(),
        request_timeout: std::time::Duration::from_secs(limits.request_timeout.max(1)),
        header_read_timeout: std::time::Duration::from_secs(limits.header_timeout.max(1)),
        max_connections: limits.max_connections.max(1),
        write_timeout: std::time::Duration::from_secs(limits.write_timeout.max(1)),
        ..Default::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        if !source.quiet {
            for kb in kbs.iter().map(|live| live.snapshot()) {
                eprintln!(
                    "kbtools: serving {} as http://{local}/openapi/v2/knowledge-bases/{}",
                    kb.manifest.bundle_root, kb.manifest.knowledge_base_id
                );
            }
            eprintln!("kbtools: listening on http://{local} (Ctrl-C stops)");
        }
        // Said even with --quiet.
        if !local.ip().is_loopback() && token.is_none() {
            eprintln!(
                "kbtools: warning: listening on {local}, beyond loopback, without --token: anyone who can reach it reads the knowledge base"
            );
        }
        kbtools::http::serve_live(listener, kbs, options, kbtools::http::shutdown_signal())
            .await
            .map_err(|e| anyhow!("{e}"))
    })?;
    drop(watchers);
    Ok(0)
}

fn print_json(value: &Value, pretty: bool) -> Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        serde_json::to_string(value)?
    };
    print_text(text)
}

/// Prints `text` on stdout, ending with one newline (none added when it already ends with one,
/// so a file read as text prints byte for byte).
fn print_text(mut text: String) -> Result<()> {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`kbtools … | head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e.into()),
    }
}
