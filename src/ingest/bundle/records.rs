//! The bundle's JSON records (`_index/**`, `_graph/**`): lenient parsing (lone UTF-16 surrogate
//! escapes become U+FFFD) and the typed records kbtools reads. One bad record is reported and
//! skipped; the rest of its file is kept.

use serde::Deserialize;
use serde_json::Value;

use crate::relation::Direction;

/// Nesting deeper than this is refused before parsing (serde_json's own limit is 128).
const MAX_JSON_DEPTH: usize = 100;

/// Replaces `\uD800`–`\uDFFF` escapes that are not part of a valid surrogate pair with `\uFFFD`,
/// so that serde_json accepts what JavaScript's `JSON.stringify` writes for a cut pair.
pub(crate) fn sanitize_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\u") {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let s = text.get(at..at + 4)?;
        u32::from_str_radix(s, 16).ok()
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut last = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex4(i + 2) else {
            i += 2;
            continue;
        };
        if (0xD800..0xDC00).contains(&unit) {
            let low = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                .then(|| hex4(i + 8))
                .flatten();
            if matches!(low, Some(l) if (0xDC00..0xE000).contains(&l)) {
                i += 12;
                continue;
            }
        } else if !(0xDC00..0xE000).contains(&unit) {
            i += 6;
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str("\\uFFFD");
        i += 6;
        last = i;
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

fn nesting_depth_exceeds(text: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses JSON leniently (lone surrogates tolerated, depth bounded).
pub fn parse_json(text: &str) -> Result<Value, String> {
    if nesting_depth_exceeds(text, MAX_JSON_DEPTH) {
        return Err(format!("JSON nests deeper than {MAX_JSON_DEPTH} levels"));
    }
    let text = sanitize_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Checks a JSON document's syntax and returns its top-level `title` string, without building
/// a tree of the rest: serde_json skips every other value in place (term route files are most
/// of a bundle's bytes). A duplicated `title` gives none. Nesting is not bounded here: nothing
/// is built, and serde_json skips nested values with a stack of its own, not by recursion, so a
/// deep document is read like any other (records, which are built into trees, are bounded by
/// [`parse_json`]).
pub(crate) fn parse_title(text: &str) -> Result<Option<String>, String> {
    use serde::de::DeserializeSeed;
    let text = sanitize_lone_surrogates(text);
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    Titled::Document
        .deserialize(&mut deserializer)
        .and_then(|title| deserializer.end().map(|()| title))
        .map_err(|e| e.to_string())
}

/// What [`parse_title`] reads a value as: the whole document (the string `title` of a top-level
/// object kept), or a `title` value (its text when it is a string). Anything else is skipped.
#[derive(Clone, Copy)]
enum Titled {
    Document,
    TitleValue,
}

impl<'de> serde::de::DeserializeSeed<'de> for Titled {
    type Value = Option<String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Titled {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(matches!(self, Titled::TitleValue).then(|| v.to_string()))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Only the document's own keys are looked at; a nested object is skipped whole.
        let mut titles = 0;
        let mut title = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if matches!(self, Titled::Document) && key == "title" {
                titles += 1;
                title = map.next_value_seed(Titled::TitleValue)?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(if titles == 1 { title } else { None })
    }
}

/// The (path, title) of each good `documents[]` item of a packet, and a message per bad item.
pub(crate) type PacketDocuments = (Vec<(String, Option<String>)>, Vec<String>);

/// What ingest reads of a record file (routers, document packets, per-file graphs).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RecordParts {
    /// The top-level `title`, when it is a string.
    pub title: Option<String>,
    /// `documents[]` as (path, title) with a message per bad item; `None` when absent.
    pub documents: Option<PacketDocuments>,
    /// `childDirectories[].path`.
    pub children: Vec<String>,
    /// `resources[].path`.
    pub resources: Vec<String>,
    /// The top-level `path`, when it is a string.
    pub path: Option<String>,
    /// `relationships[]` with a message per bad item (only when asked for).
    pub relationships: (Vec<LocalRelationship>, Vec<String>),
}

impl RecordParts {
    /// The parts of a parsed `value`.
    fn of(value: &Value, with_relationships: bool) -> Self {
        let documents = value.get("documents").map(|_| {
            let (good, bad) = typed_items::<DocumentRecord>(value, "documents");
            (good.into_iter().map(|d| (d.path, d.title)).collect(), bad)
        });
        RecordParts {
            title: value
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_string),
            documents,
            children: listed_paths(value, "childDirectories"),
            resources: listed_paths(value, "resources"),
            path: value
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_string),
            relationships: if with_relationships {
                typed_items(value, "relationships")
            } else {
                Default::default()
            },
        }
    }
}

/// Parses a record file as [`parse_json`] does and takes its [`RecordParts`], without building a
/// tree of the whole file: the top-level keys ingest reads are taken as raw text, and each
/// `documents[]` and `relationships[]` item is read straight into its record (document packets
/// and per-file graphs are most of a large bundle's records). Whatever does not read that way (a
/// bad item, a duplicated key, a top level that is no object) is read through [`parse_json`]
/// instead, so results and messages are the same. One difference: a number out of `f64`'s range
/// in a value ingest skips is accepted, where a tree refuses it.
pub(crate) fn parse_record(text: &str, with_relationships: bool) -> Result<RecordParts, String> {
    if nesting_depth_exceeds(text, MAX_JSON_DEPTH) {
        return Err(format!("JSON nests deeper than {MAX_JSON_DEPTH} levels"));
    }
    let text = sanitize_lone_surrogates(text);
    let is_object = text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{');
    if let Some(parts) = is_object
        .then(|| serde_json::from_str::<RawRecord<'_>>(&text).ok())
        .flatten()
        .and_then(|raw| raw.parts(with_relationships))
    {
        return Ok(parts);
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(RecordParts::of(&value, with_relationships))
}

/// The top-level keys of a record that ingest reads, as raw JSON (`null` included).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRecord<'a> {
    #[serde(borrow, default, deserialize_with = "raw_present")]
    title: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    documents: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    child_directories: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    resources: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    path: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    relationships: Option<&'a serde_json::value::RawValue>,
}

/// A present key's raw value, `null` included (`Option`'s own reading would make it `None`).
fn raw_present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de serde_json::value::RawValue>, D::Error> {
    <&serde_json::value::RawValue>::deserialize(d).map(Some)
}

/// The (path, title) of a `documents[]` item: the fields of [`DocumentRecord`] that can make an
/// item bad (the others take any JSON value).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DocumentTitle {
    path: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    graph_path: Option<String>,
}

impl RawRecord<'_> {
    /// The parts, or `None` when one of them must be read as a tree.
    fn parts(&self, with_relationships: bool) -> Option<RecordParts> {
        let small = |raw: Option<&serde_json::value::RawValue>| -> Option<Value> {
            raw.and_then(|r| serde_json::from_str(r.get()).ok())
        };
        let string = |raw: Option<&serde_json::value::RawValue>| -> Option<String> {
            match small(raw) {
                Some(Value::String(s)) => Some(s),
                _ => None,
            }
        };
        let paths = |raw: Option<&serde_json::value::RawValue>, key: &str| -> Vec<String> {
            match small(raw) {
                Some(value) => listed_paths(&serde_json::json!({ key: value }), key),
                None => Vec::new(),
            }
        };
        let documents = match self.documents {
            None => None,
            Some(raw) => Some(raw_items(
                raw,
                "documents",
                |item| {
                    serde_json::from_str::<DocumentTitle>(item)
                        .ok()
                        .map(|d| (d.path, d.title))
                },
                |d: DocumentRecord| (d.path, d.title),
            )?),
        };
        let relationships = match (with_relationships, self.relationships) {
            (false, _) => Default::default(),
            (true, None) => (Vec::new(), vec!["`relationships` is missing".to_string()]),
            (true, Some(raw)) => raw_items(
                raw,
                "relationships",
                |item| serde_json::from_str::<LocalRelationship>(item).ok(),
                |r: LocalRelationship| r,
            )?,
        };
        Some(RecordParts {
            title: string(self.title),
            documents,
            children: paths(self.child_directories, "childDirectories"),
            resources: paths(self.resources, "resources"),
            path: string(self.path),
            relationships,
        })
    }
}

/// The items of the array `raw` (under `key`), each read by `read`; an item `read` refuses is
/// read as a tree, as [`typed_items`] reads it, for its message (or its record: a duplicated
/// key). `None` when `raw` is no array or an item is no JSON (never, in a parsed document).
fn raw_items<T: for<'de> Deserialize<'de>, G>(
    raw: &serde_json::value::RawValue,
    key: &str,
    read: impl Fn(&str) -> Option<G>,
    convert: impl Fn(T) -> G,
) -> Option<(Vec<G>, Vec<String>)> {
    let items: Vec<&serde_json::value::RawValue> = match serde_json::from_str(raw.get()) {
        Ok(items) => items,
        Err(_) => {
            let value: Value = serde_json::from_str(raw.get()).ok()?;
            return match value {
                Value::Array(_) => None,
                _ => Some((Vec::new(), vec![format!("`{key}` is not an array")])),
            };
        }
    };
    let mut good = Vec::with_capacity(items.len());
    let mut bad = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if let Some(record) = read(item.get()) {
            good.push(record);
            continue;
        }
        let value: Value = serde_json::from_str(item.get()).ok()?;
        match T::deserialize(&value) {
            Ok(record) => good.push(convert(record)),
            Err(e) => bad.push(format!("{key}[{i}]: {e}")),
        }
    }
    Some((good, bad))
}

/// The `formatVersion` of a record, if it is an integer.
pub(crate) fn format_version(value: &Value) -> Option<u64> {
    value.get("formatVersion").and_then(Value::as_u64)
}

/// One `documents[]` record of a `_index/pages/**` document packet.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DocumentRecord {
    pub path: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<Value>,
    #[serde(default, rename = "type")]
    pub doc_type: Option<Value>,
    #[serde(default)]
    pub tags: Option<Value>,
    #[serde(default)]
    pub subjects: Option<Value>,
    #[serde(default)]
    pub keywords: Option<Value>,
    #[serde(default)]
    pub headings: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub graph_path: Option<String>,
}

/// One relationship of a `_graph/by-file/**` per-file graph.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LocalRelationship {
    pub target_path: String,
    #[serde(default)]
    pub target_title: Option<String>,
    pub direction: Direction,
    pub relation_type: String,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Extracts the `key` array of `value` and deserializes each item on its own: the good items,
/// and one message per bad item.
pub(crate) fn typed_items<T: for<'de> Deserialize<'de>>(
    value: &Value,
    key: &str,
) -> (Vec<T>, Vec<String>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    match value.get(key) {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match T::deserialize(item) {
                    Ok(record) => good.push(record),
                    Err(e) => bad.push(format!("{key}[{i}]: {e}")),
                }
            }
        }
        Some(_) => bad.push(format!("`{key}` is not an array")),
        None => bad.push(format!("`{key}` is missing")),
    }
    (good, bad)
}

/// The string paths listed under `key[].path` (router `resources` and `childDirectories`).
pub(crate) fn listed_paths(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.get("path").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let v = parse_json(r#"{"a":"x\ud83d","b":"\ud83d\ude00","c":"\\ud83d","d":"\udc00y"}"#)
            .unwrap();
        assert_eq!(v["a"], "x\u{fffd}");
        assert_eq!(v["b"], "😀");
        assert_eq!(v["c"], "\\ud83d");
        assert_eq!(v["d"], "\u{fffd}y");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        assert!(parse_json(&deep).is_err());
    }

    #[test]
    fn a_top_level_array_is_valid_json_without_a_title() {
        for text in [
            r#"[1,"title",{"title":"x"}]"#,
            r#"["x"]"#,
            " \n[]",
            "3",
            "null",
        ] {
            assert_eq!(parse_title(text), Ok(None), "{text}");
        }
        assert_eq!(parse_title(r#" {"title":"t"}"#), Ok(Some("t".to_string())));
        assert!(parse_title("[1,").is_err());
    }

    #[test]
    fn titles_are_the_top_level_objects_strings() {
        let cases = [
            (
                r#"{"a":[1,{"title":"inner"}],"title":"top","b":{"c":null}}"#,
                Some("top"),
            ),
            (r#"{"title":"a","title":"b"}"#, None),
            (r#"{"title":3}"#, None),
            (r#"{"title":["x"]}"#, None),
            (r#"{"title":"caf\u00e9 \ud800"}"#, Some("café \u{fffd}")),
            (r#"{}"#, None),
        ];
        for (text, title) in cases {
            assert_eq!(parse_title(text), Ok(title.map(str::to_string)), "{text}");
        }
        assert!(parse_title(r#"{"title":"t"} x"#).is_err());
        assert!(parse_title(r#"{"title":"t",}"#).is_err());
        // Nesting: the check builds nothing, so any depth is read (without recursion: 100,000
        // levels do not overflow the stack), and a bad document is bad at any depth; records,
        // built into trees, are refused past 100 levels.
        let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
        assert_eq!(parse_title(&nested(101)), Ok(None));
        let deep = format!(
            "{},\"title\":\"t\"}}",
            &nested(100_000)[..nested(100_000).len() - 1]
        );
        assert_eq!(parse_title(&deep), Ok(Some("t".to_string())));
        assert!(parse_title(&nested(100_000)[1..]).is_err());
        assert!(parse_json(&nested(101)).is_err() && parse_json(&nested(100)).is_ok());
    }

    /// Reading a record straight gives what reading its tree gives, bad items, odd shapes and
    /// errors included.
    #[test]
    fn records_read_straight_as_from_their_tree() {
        let cases = [
            r#"{"formatVersion":2,"title":"All","documents":[{"path":"pages/a.md","title":"A","summary":"s","metadata":{"x":[1,2.5e3,null]},"checksumSha256":"ab"},{"path":"pages/b.md"},{"title":"no path"},{"path":"pages/c.md","title":3},{"path":"pages/d.md","graphPath":7},{"path":"pages/e.md","path":"pages/f.md"},"x",{"path":"pages/g.md","title":null,"description":{"deep":[[[]]]}}]}"#,
            r#"{"title":"t","documents":null}"#,
            r#"{"title":["t"],"documents":{"path":"x"}}"#,
            r#"{"documents":[],"title":"t","title":"u"}"#,
            r#"{"childDirectories":[{"path":"pages/x"},{"nopath":1},{"path":2}],"resources":[{"path":"pages/x/a.md"}],"resources2":"z"}"#,
            r#"{"childDirectories":{"path":"pages/x"},"resources":null}"#,
            r#"{"path":"pages/a.md","relationships":[{"targetPath":"pages/b.md","direction":"outgoing","relationType":"references","reason":"r"},{"targetPath":"pages/c.md"},{"targetPath":"pages/d.md","direction":"incoming","relationType":"related","targetTitle":"D","extra":[1]}]}"#,
            r#"{"path":3,"relationships":"none"}"#,
            r#"{"path":"pages/a.md"}"#,
            r#"{"path":"pages/a.md","relationships":null}"#,
            r#"{"title":"caf\u00e9 \ud800","documents":[{"path":"pages/\udc00.md","title":"x\ud83d\ude00"}]}"#,
            r#"[{"title":"t"},[{"path":"pages/a.md"}]]"#,
            r#"["t",[{"path":"pages/a.md"}]]"#,
            r#"  {}  "#,
            r#"{"title":"t","documents":[{"path":"pages/a.md"}],}"#,
            r#"{"title":"t","documents":[{"path":"pages/a.md"}]} x"#,
            r#"{"title":"t","documents":[{"path":"pages/a.md","title":"\x"}]}"#,
            r#"{"title":"t""#,
            "",
            "null",
        ];
        for text in cases {
            for graph in [false, true] {
                let tree = parse_json(text).map(|v| RecordParts::of(&v, graph));
                assert_eq!(parse_record(text, graph), tree, "{text} (graph: {graph})");
            }
        }
        // The straight reading is what read the packet and the graph above (not the tree).
        let straight = |text: &str, graph: bool| {
            serde_json::from_str::<RawRecord<'_>>(text)
                .ok()
                .and_then(|raw| raw.parts(graph))
        };
        assert!(straight(cases[0], false).is_some_and(|p| p.documents.unwrap().0.len() == 4));
        assert!(straight(cases[6], true).is_some_and(|p| p.relationships.0.len() == 2));
        let nested = format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(
            parse_record(&nested, false),
            Err("JSON nests deeper than 100 levels".to_string())
        );
    }

    #[test]
    fn bad_items_are_reported_and_skipped() {
        let v = parse_json(r#"{"documents":[{"path":"pages/a.md"},{"title":"no path"}]}"#).unwrap();
        let (good, bad): (Vec<DocumentRecord>, _) = typed_items(&v, "documents");
        assert_eq!(good.len(), 1);
        assert_eq!(bad.len(), 1);
    }
}
