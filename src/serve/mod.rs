//! The long-running doors (feature `server`): the live knowledge base the servers answer from
//! (switched to each newly published generation, `--watch`), the MCP server on stdio and the
//! HTTP server (the Developer OpenAPI's read routes, MCP over Streamable HTTP, the search page).
//! Each request runs one tool ([`crate::tools`]) on one snapshot.

pub mod http;
pub mod live;
pub mod mcp;
pub mod watch;
