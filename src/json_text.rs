//! A JSON object kept as JSON text inside a compact binary encoding (postcard cannot carry
//! free-form JSON values), parsed on first use: [`LazyObject`].

use serde::{Deserialize, Deserializer, Serializer};
use serde_json::{Map, Value};

/// A JSON object stored as text and parsed on first use: a catalog of a large knowledge base
/// opens without parsing every page's frontmatter.
#[derive(Default)]
pub struct LazyObject {
    text: Box<str>,
    parsed: std::sync::OnceLock<Map<String, Value>>,
}

impl LazyObject {
    pub fn map(&self) -> &Map<String, Value> {
        // The text was written by `serde_json` from a map; unreadable text (a damaged index)
        // reads as no frontmatter rather than failing a call.
        self.parsed
            .get_or_init(|| serde_json::from_str(&self.text).unwrap_or_default())
    }
}

impl LazyObject {
    /// The object whose JSON text (as `serde_json` writes a map; `""` for none) is `text`.
    pub(crate) fn from_text(text: String) -> Self {
        LazyObject {
            text: text.into_boxed_str(),
            parsed: std::sync::OnceLock::new(),
        }
    }
}

impl From<Map<String, Value>> for LazyObject {
    fn from(map: Map<String, Value>) -> Self {
        let text = if map.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&map).unwrap_or_default()
        };
        LazyObject {
            text: text.into_boxed_str(),
            parsed: std::sync::OnceLock::from(map),
        }
    }
}

impl std::ops::Deref for LazyObject {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        self.map()
    }
}

impl Clone for LazyObject {
    fn clone(&self) -> Self {
        LazyObject {
            text: self.text.clone(),
            parsed: self.parsed.clone(),
        }
    }
}

impl std::fmt::Debug for LazyObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.map().fmt(f)
    }
}

impl PartialEq for LazyObject {
    fn eq(&self, other: &Self) -> bool {
        self.map() == other.map()
    }
}

impl serde::Serialize for LazyObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for LazyObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(LazyObject {
            text: text.into_boxed_str(),
            parsed: std::sync::OnceLock::new(),
        })
    }
}
