//! The long-running doors (feature `server`): the live knowledge base the servers answer from
//! (switched to each newly published generation, `--watch`), the MCP server on stdio and the
//! HTTP server (the Developer OpenAPI's read routes, MCP over Streamable HTTP, the search page).
//! Each request runs one tool on one snapshot, as every door does ([`crate::door`]), on the
//! blocking pool (`pool.rs`).

pub mod background;
pub mod http;
pub mod live;
pub mod mcp;
pub(crate) mod pool;
pub mod watch;
