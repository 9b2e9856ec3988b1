//! The local MCP server (stdio): the six tools over the Model Context Protocol with the official
//! Rust SDK `rmcp`. Results are compact text by default ([`crate::render`]) or the contract JSON.
