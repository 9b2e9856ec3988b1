//! Pagination cursors (rules#cursors): opaque, stateless, versioned. A cursor is the base64url of
//! a small JSON payload plus an integrity hash; it binds the tool, a hash of every input that
//! shapes the result set (limit included) and the `activeContentRevision`. Anything else —
//! malformed, tampered, from another tool, other inputs or an older revision — is the contract's
//! 422 "Pagination cursor is invalid." and the client restarts without a cursor.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::ToolError;

const VERSION: u32 = 1;
/// Longest cursor accepted before decoding.
const MAX_CURSOR_LEN: usize = 1024;
/// Highest offset a cursor may carry.
pub(crate) const MAX_OFFSET: u64 = 100_000;

#[derive(Serialize, Deserialize)]
struct Payload {
    v: u32,
    t: String,
    s: String,
    r: u64,
    o: u64,
}

fn scope_hash(tool: &str, scope: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(scope.to_string().as_bytes());
    hex::encode(&hasher.finalize()[..12])
}

fn mac(payload: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(b"kbtools-cursor-v1\0");
    hasher.update(payload);
    hasher.finalize()[..12].to_vec()
}

/// The cursor for the page starting at `offset`.
pub fn encode(tool: &str, scope: &Value, revision: u64, offset: u64) -> String {
    let payload = Payload {
        v: VERSION,
        t: tool.to_string(),
        s: scope_hash(tool, scope),
        r: revision,
        o: offset,
    };
    let json = serde_json::to_vec(&payload).unwrap_or_default();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&json),
        URL_SAFE_NO_PAD.encode(mac(&json))
    )
}

/// The offset a cursor resumes at, if it was made by `tool` for `scope` at `revision`.
pub fn decode(cursor: &str, tool: &str, scope: &Value, revision: u64) -> Result<u64, ToolError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(ToolError::cursor_invalid());
    }
    let (body, tag) = cursor
        .split_once('.')
        .ok_or_else(ToolError::cursor_invalid)?;
    let json = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| ToolError::cursor_invalid())?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| ToolError::cursor_invalid())?;
    if tag != mac(&json) {
        return Err(ToolError::cursor_invalid());
    }
    let payload: Payload =
        serde_json::from_slice(&json).map_err(|_| ToolError::cursor_invalid())?;
    if payload.v != VERSION
        || payload.t != tool
        || payload.s != scope_hash(tool, scope)
        || payload.r != revision
        || payload.o == 0
        || payload.o > MAX_OFFSET
    {
        return Err(ToolError::cursor_invalid());
    }
    Ok(payload.o)
}

/// Where a request's page starts: 0 without a cursor, else the cursor's offset.
pub fn start(
    cursor: Option<&str>,
    tool: &str,
    scope: &Value,
    revision: u64,
) -> Result<usize, ToolError> {
    match cursor {
        Some(c) => Ok(decode(c, tool, scope, revision)? as usize),
        None => Ok(0),
    }
}

/// The items of the page starting at `offset` out of `total`, and the cursor of the next page.
pub fn page(
    tool: &str,
    scope: &Value,
    revision: u64,
    offset: usize,
    limit: u64,
    total: usize,
) -> (std::ops::Range<usize>, Option<String>) {
    let start = offset.min(total);
    let end = start.saturating_add(limit as usize).min(total);
    let next = (end < total).then(|| encode(tool, scope, revision, end as u64));
    (start..end, next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_binding() {
        let scope = json!({"parentPath": "pages", "limit": 2});
        let c = encode("list_tree", &scope, 3, 2);
        assert_eq!(decode(&c, "list_tree", &scope, 3).unwrap(), 2);
        assert!(decode(&c, "list_tree", &scope, 4).is_err());
        assert!(decode(&c, "read_related", &scope, 3).is_err());
        assert!(decode(
            &c,
            "list_tree",
            &json!({"parentPath": "pages", "limit": 3}),
            3
        )
        .is_err());
        let mut tampered = c.clone().into_bytes();
        tampered[3] ^= 1;
        assert!(decode(&String::from_utf8_lossy(&tampered), "list_tree", &scope, 3).is_err());
        assert!(decode("garbage", "list_tree", &scope, 3).is_err());
    }
}
