//! What each tool says of itself, to clients and models: its title, what its arguments are,
//! and when to use it and what to do with what it returns.

use super::ToolName;

impl ToolName {
    /// A tool's description for a model: when to use it and what to do with what it returns.
    pub const fn description(self) -> &'static str {
        match self {
            ToolName::SearchFiles => {
                "Find candidate files for a question. Pass the user's complete, standalone question \
                 (2-512 characters, English or Chinese), not keywords. Returns ranked candidates with \
                 path, title, fileId, score and a short excerpt: they are leads, not evidence; read \
                 the useful ones with read_file before answering. Options: mode file|graph|hybrid \
                 (default hybrid adds relationship lanes), scope all|path|metadata, limit 1-50, cursor \
                 (nextCursor of the previous page, same query and options), okf filters. Run at most \
                 two follow-up searches, each derived from a concrete gap in files already read."
            }
            ToolName::ReadFile => {
                "Read one file: give exactly one of fileId or path, as returned by another tool (a \
                 graphRef is a path too). type=read (default) returns the full content, the evidence to \
                 answer from. For a long file, type=search with a query returns only the matching \
                 line snippets with line numbers, and type=extract with segments [{label, start, end}] \
                 returns those line ranges. Do not read the same file twice."
            }
            ToolName::ListTree => {
                "Browse the knowledge base's folders and files (parentPath \"\" for the root, e.g. \
                 \"pages\"). Use it when search finds nothing useful or to discover what exists; start \
                 with the root index.md. Paged: pass nextCursor with the same parentPath and limit."
            }
            ToolName::GetFile => {
                "Inspect one file's metadata (title, path, kind, size, dates, tags, OKF fields, \
                 graphRef) without its content. Use it only when metadata matters; read_file is what \
                 gives evidence."
            }
            ToolName::ReadRelated => {
                "List the files related to a file already read (by fileId or path): relation type, \
                 reason, score and the related file's id and path. Use it when the file read leaves a \
                 gap that a related file may fill; then read_file the useful ones. Paged with cursor."
            }
            ToolName::ExpandGraph => {
                "Explore relationships outward from a file already read, bounded by depth (1-2) and \
                 fanout: returns nodes and edges with relation types and reasons. Optional: use it when \
                 read_related is not enough. Summaries are leads, not evidence; read the files."
            }
        }
    }

    /// A tool's title and what its arguments are, for a client to show and a model to read.
    pub const fn title_and_arguments(self) -> (&'static str, &'static str) {
        match self {
            ToolName::SearchFiles => (
                "Search files",
                "The question to search for (the user's whole question), and optional mode, filters and paging.",
            ),
            ToolName::ReadFile => (
                "Read file",
                "The file to read (exactly one of fileId or path, as another tool returned it), and an optional partial read.",
            ),
            ToolName::ListTree => (
                "List folder",
                "The folder to list (\"\" for the root) and optional paging.",
            ),
            ToolName::GetFile => ("File metadata", "The file whose metadata to return."),
            ToolName::ReadRelated => (
                "Related files",
                "The file already read whose related files to list, and optional paging.",
            ),
            ToolName::ExpandGraph => (
                "Expand graph",
                "The file already read to start from, how far and how wide to walk, and paging.",
            ),
        }
    }
}
