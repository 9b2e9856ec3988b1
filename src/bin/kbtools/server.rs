//! The servers' commands (the `server` feature): `serve` (HTTP) and `mcp` (stdio), each over
//! the live generation of its knowledge bases, with `--watch` rebuilding on changes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use kbtools::door::OutputFormat;
use kbtools::index;
use kbtools::serve::background::BackgroundEmbedding;
use kbtools::serve::live::{BundleWatcher, Level, LiveKnowledgeBase, Log, WatchMode, WatchOptions};
use kbtools::serve::mcp::{serve_stdio, McpOptions};

use crate::args::ServeArgs;
use crate::open::{build_options, locate, one_bundle, open_at};
use crate::Source;

/// `kbtools mcp`: the six tools on stdio for the bundle of `source` (or `bundle_path`), until
/// the client closes it.
pub(super) fn mcp_stdio(
    source: Source,
    bundle_path: Option<PathBuf>,
    format: OutputFormat,
    text_budget: usize,
    audit_log: Option<PathBuf>,
    watch: bool,
) -> Result<i32> {
    init_tracing(source.quiet);
    let mut source = source;
    source.bundle = one_bundle(bundle_path, source.bundle.clone())?;
    let (live, running) = open_live(&source, watch)?;
    let options = McpOptions {
        format,
        text_budget,
        audit_log,
    };
    if !source.quiet {
        let kb = live.snapshot();
        eprintln!(
            "kbtools: MCP server on stdio for {} (revision {}, {} files)",
            kb.bundle_root.display(),
            kb.manifest.active_content_revision,
            kb.manifest.counts.files
        );
    }
    serve_stdio(live, options, server_log())?;
    drop(running);
    Ok(0)
}

/// What a server says while it runs, as `tracing` events of target `kbtools` (progress at
/// `info`, warnings at `warn`), which [`init_tracing`] prints on stderr.
fn server_log() -> Log {
    Arc::new(|level: Level, line: &str| {
        let line = kbtools::text::terminal_safe_lines(line);
        match level {
            Level::Progress => tracing::info!(target: "kbtools", "{line}"),
            Level::Warning => tracing::warn!(target: "kbtools", "{line}"),
        }
    })
}

/// The servers' log, set up once: kbtools' own lines (progress unless `quiet`, warnings always)
/// and the libraries' (rmcp's, hyper's: warnings and errors), on stderr (the MCP server's stdout
/// carries the protocol only). `KBTOOLS_LOG` takes a `tracing` filter instead (for example
/// `KBTOOLS_LOG=kbtools=info,rmcp=debug`).
fn init_tracing(quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "warn" } else { "warn,kbtools=info" };
    let filter = EnvFilter::try_from_env("KBTOOLS_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(Lines)
        .try_init();
}

/// `kbtools: <line>` for progress, `kbtools: warning: <line>` for a warning, as the one-shot
/// commands print theirs; another crate's event names its level and target.
struct Lines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Lines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let metadata = event.metadata();
        let level = *metadata.level();
        write!(writer, "kbtools: ")?;
        if metadata.target() != "kbtools" {
            write!(
                writer,
                "{} {}: ",
                level.as_str().to_lowercase(),
                metadata.target()
            )?;
        } else if level == tracing::Level::WARN {
            write!(writer, "warning: ")?;
        } else if level == tracing::Level::ERROR {
            write!(writer, "error: ")?;
        }
        tracing_subscriber::fmt::FormatFields::format_fields(context, writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// What runs beside a server's requests for one knowledge base: the watcher (`--watch`) and
/// the background embedding. Keep it as long as the server runs.
struct Beside {
    _watcher: Option<BundleWatcher>,
    _embedding: Option<BackgroundEmbedding>,
}

/// Opens the knowledge base of a server: it follows its index folder (a rebuilt index is
/// switched to between requests); the index opens built deferred (docs/semantic.md), so the
/// server answers at once, and a background build embeds what it lacks; with `watch`, a
/// watcher rebuilds the index when the bundle changes.
fn open_live(source: &Source, watch: bool) -> Result<(Arc<LiveKnowledgeBase>, Beside)> {
    let location = locate(source)?;
    // A server answers from what it opens for long: every file is checked.
    let kb = open_at(source, &location, index::Verify::Full)?;
    let log = server_log();
    let live = Arc::new(LiveKnowledgeBase::from_opened(
        kb,
        &location.index_dir,
        location.bundle.as_deref(),
        log.clone(),
    ));
    // The models load beside the first requests, which need them only to search.
    let warming = live.clone();
    std::thread::spawn(move || {
        kbtools::tools::warm_up(&warming.snapshot(), kbtools::tools::WarmUp::Server);
    });
    // `--no-refresh` never builds (a read replica serves what is published).
    let embedding = match location.bundle.as_ref().filter(|_| !source.no_refresh) {
        Some(bundle) => Some(
            BackgroundEmbedding::start(
                bundle,
                &location.index_dir,
                build_options(source),
                live.clone(),
                log.clone(),
            )
            .context("starting the background embedding")?,
        ),
        None => None,
    };
    let watcher = if watch {
        Some(start_watch(source, &location, &live, log)?)
    } else {
        None
    };
    let beside = Beside {
        _watcher: watcher,
        _embedding: embedding,
    };
    Ok((live, beside))
}

/// `--watch`: a watcher that rebuilds the index (deferred: the background embedding embeds
/// after it) when the bundle changes.
fn start_watch(
    source: &Source,
    location: &crate::open::Location,
    live: &Arc<LiveKnowledgeBase>,
    log: Log,
) -> Result<BundleWatcher> {
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
    Ok(watcher)
}

/// The HTTP server's limits as typed (seconds, counts).
pub(super) struct ServeLimits {
    pub request_timeout: u64,
    pub header_timeout: u64,
    pub max_connections: usize,
    pub max_connections_per_client: Option<usize>,
    pub body_timeout: u64,
    pub max_unsent_mib: usize,
    pub max_concurrent_calls: Option<usize>,
    pub write_timeout: u64,
    pub allowed_hosts: Vec<String>,
    pub max_mcp_sessions: usize,
    pub max_mcp_sessions_per_client: Option<usize>,
    pub max_event_streams: Option<usize>,
}

pub(super) fn serve_http(
    source: &Source,
    bundles: Vec<PathBuf>,
    addr: &str,
    token: Option<String>,
    limits: ServeLimits,
    watch: bool,
) -> Result<i32> {
    init_tracing(source.quiet);
    if token.as_ref().is_some_and(|t| t.trim().is_empty()) {
        return Err(anyhow!(
            "--token (or KBTOOLS_TOKEN) is empty: an empty token would turn authentication off; pass a token, or leave --token and KBTOOLS_TOKEN unset to serve without one"
        ));
    }
    // A bad --allowed-host is a usage error before anything is opened or bound.
    kbtools::serve::http::hosts::HostPolicy::new(true, &limits.allowed_hosts)
        .map_err(|e| anyhow!(e))?;
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
    let mut beside = Vec::new();
    let mut add = |source: &Source| -> Result<()> {
        let (live, running) = open_live(source, watch)?;
        kbs.push(live);
        beside.push(running);
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
    let options = kbtools::serve::http::HttpOptions {
        token: token.clone(),
        request_timeout: std::time::Duration::from_secs(limits.request_timeout.max(1)),
        header_read_timeout: std::time::Duration::from_secs(limits.header_timeout.max(1)),
        max_connections: limits.max_connections.max(1),
        max_connections_per_client: limits.max_connections_per_client,
        body_timeout: std::time::Duration::from_secs(limits.body_timeout.max(1)),
        max_unsent_bytes: limits.max_unsent_mib.max(1).saturating_mul(1024 * 1024),
        max_concurrent_calls: limits.max_concurrent_calls.map(|n| n.max(1)),
        write_timeout: std::time::Duration::from_secs(limits.write_timeout.max(1)),
        allowed_hosts: limits.allowed_hosts.clone(),
        max_mcp_sessions: limits.max_mcp_sessions.max(1),
        max_mcp_sessions_per_client: limits.max_mcp_sessions_per_client,
        max_event_streams: limits.max_event_streams.map(|n| n.max(1)),
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
                    "kbtools: serving {} as http://{local}/openapi/v2/knowledge-bases/{} (MCP: http://{local}/mcp/{})",
                    kb.bundle_root.display(), kb.manifest.knowledge_base_id, kb.manifest.knowledge_base_id
                );
            }
            if kbs.len() == 1 {
                eprintln!("kbtools: MCP over Streamable HTTP at http://{local}/mcp");
            }
            eprintln!("kbtools: search page at http://{local}/ (for people, in a browser)");
            eprintln!("kbtools: listening on http://{local} (Ctrl-C stops)");
        }
        // Said even with --quiet.
        if !kbtools::serve::http::hosts::is_loopback_ip(local.ip()) && token.is_none() {
            eprintln!(
                "kbtools: warning: listening on {local}, beyond loopback, without --token: anyone who can reach it reads the knowledge base"
            );
        }
        if !kbtools::serve::http::hosts::is_loopback_ip(local.ip()) && options.allowed_hosts.is_empty() {
            eprintln!(
                "kbtools: warning: listening on {local}, beyond loopback, without --allowed-host: any Host is answered, so a web page can reach the server through DNS rebinding; name the hosts clients use with --allowed-host"
            );
        }
        kbtools::serve::http::serve_live(listener, kbs, options, kbtools::serve::http::shutdown_signal())
            .await
            .map_err(|e| anyhow!("{e}"))
    })?;
    drop(beside);
    Ok(0)
}

/// `kbtools serve`: the HTTP server over the bundles until Ctrl-C.
pub(crate) fn serve_command(source: &Source, args: ServeArgs) -> Result<i32> {
    let limits = ServeLimits {
        request_timeout: args.request_timeout,
        header_timeout: args.header_timeout,
        max_connections: args.max_connections,
        max_connections_per_client: args.max_connections_per_client,
        body_timeout: args.body_timeout,
        max_unsent_mib: args.max_unsent_mib,
        max_concurrent_calls: args.max_concurrent_calls,
        write_timeout: args.write_timeout,
        allowed_hosts: args.allowed_hosts,
        max_mcp_sessions: args.max_mcp_sessions,
        max_mcp_sessions_per_client: args.max_mcp_sessions_per_client,
        max_event_streams: args.max_event_streams,
    };
    serve_http(
        source,
        args.bundles,
        &args.addr,
        args.token,
        limits,
        args.watch,
    )
}
