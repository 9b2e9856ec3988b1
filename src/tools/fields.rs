//! The field names of a tool's `Params`, read from its `Deserialize` impl: serde's derive passes
//! the struct's field names (rename rules applied, in declaration order) to
//! `Deserializer::deserialize_struct`, and a deserializer that only records them reads them
//! without any input. Every door's field list (the parser's known fields, the HTTP routes'
//! parameters, the CLI's flags) comes from here, so a field added to `Params` is in all of them.
//!
//! The code that reads and validates one field names it by its Rust name: `wire_names!` gives
//! each `Params` a `WIRE` constant whose members are the fields' wire names, spelled by serde's
//! `camelCase` rule from the field itself (a test compares them with serde's). A field's numeric
//! bounds are a [`Bounds`] constant, which the schema (`#[schemars(range(...))]`), validation and
//! the docs' test read.

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, Visitor};
use serde_json::Value;

/// What every door reads of a tool's input, taken from its `Params`: the field names in
/// declaration order, and the JSON Schema (types, bounds, enums, descriptions).
#[derive(Debug, Clone)]
pub struct ParamsDef {
    pub fields: &'static [&'static str],
    pub schema: Value,
}

impl ParamsDef {
    pub fn of<P: DeserializeOwned + schemars::JsonSchema>() -> Self {
        ParamsDef {
            fields: field_names::<P>(),
            schema: serde_json::to_value(schemars::schema_for!(P)).unwrap_or(Value::Null),
        }
    }

    /// The schema of field `name` (`null` when it has none).
    pub fn property(&self, name: &str) -> &Value {
        &self.schema["properties"][name]
    }
}

/// A numeric field's bounds and default, stated once: the schema's `minimum` and `maximum`
/// (`#[schemars(range(min = X.min, max = X.max))]`), validation and the docs read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds<T> {
    pub min: T,
    pub max: T,
    /// The value when the field is absent.
    pub default: T,
}

impl<T: PartialOrd + Copy> Bounds<T> {
    /// `given` when it is in bounds, the default when absent, `None` when out of bounds.
    pub fn check(&self, given: Option<T>) -> Option<T> {
        match given {
            None => Some(self.default),
            Some(value) if self.contains(value) => Some(value),
            Some(_) => None,
        }
    }

    /// Whether `value` is in bounds.
    pub fn contains(&self, value: T) -> bool {
        (self.min..=self.max).contains(&value)
    }
}

/// Declares `$names`, a struct of one `&'static str` per field of `$params` (in declaration
/// order), and `$params::WIRE`, each field's wire name: serde's `camelCase` of the field's Rust
/// name, or the literal after `=` for a field serde renames. Every field of `$params` must be
/// listed, and nothing else (a compile error otherwise); a unit test of `tools` checks the names
/// against serde's ([`field_names`]).
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        $vis:vis struct $names:ident for $params:ident {
            $( $field:ident $(= $wire:literal)? ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $names {
            $( pub $field: &'static str, )+
        }

        impl $names {
            /// The names in declaration order.
            #[allow(dead_code)]
            pub(crate) fn all(&self) -> Vec<&'static str> {
                vec![$( self.$field ),+]
            }
        }

        impl $params {
            /// Each field's name on the wire.
            pub const WIRE: $names = $names {
                $( $field: $crate::tools::fields::wire_name!($field $(= $wire)?), )+
            };
        }

        // Every field of `$params` is listed, and only its fields.
        const _: fn(&$params) = |params| {
            let $params { $( $field: _, )+ } = params;
        };
    };
}

/// The wire name of a field: the literal given, else serde's `camelCase` of its Rust name.
macro_rules! wire_name {
    ($field:ident = $wire:literal) => {
        $wire
    };
    ($field:ident) => {{
        const SNAKE: &str = stringify!($field);
        const BYTES: [u8; $crate::tools::fields::camel_len(SNAKE)] =
            $crate::tools::fields::camel_case(SNAKE);
        match std::str::from_utf8(&BYTES) {
            Ok(name) => name,
            Err(_) => panic!("a field name is ASCII"),
        }
    }};
}

pub(crate) use {wire_name, wire_names};

/// The length of [`camel_case`]`(snake)`: its bytes but the underscores.
pub(crate) const fn camel_len(snake: &str) -> usize {
    let bytes = snake.as_bytes();
    let (mut i, mut len) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'_' {
            len += 1;
        }
        i += 1;
    }
    len
}

/// serde's `rename_all = "camelCase"` of a `snake_case` field name (ASCII): each underscore
/// dropped and the letter after it upper-cased, the first letter lower-cased.
pub(crate) const fn camel_case<const N: usize>(snake: &str) -> [u8; N] {
    let bytes = snake.as_bytes();
    let mut out = [0u8; N];
    let (mut i, mut o, mut upper) = (0, 0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'_' {
            upper = true;
        } else {
            out[o] = if upper {
                b.to_ascii_uppercase()
            } else if o == 0 {
                b.to_ascii_lowercase()
            } else {
                b
            };
            upper = false;
            o += 1;
        }
        i += 1;
    }
    out
}

/// The field names `T`'s derived `Deserialize` accepts, in declaration order (empty for a type
/// that is not a struct with named fields).
pub(crate) fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut probe = Probe { fields: &[] };
    // The probe always answers with an error once it has the names; nothing is deserialized.
    let _ = T::deserialize(&mut probe);
    probe.fields
}

struct Probe {
    fields: &'static [&'static str],
}

impl<'de> Deserializer<'de> for &mut Probe {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.fields = fields;
        Err(de::Error::custom("field names read"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Example {
        first_field: u8,
        #[serde(rename = "type")]
        kind: Option<String>,
        last: Vec<u8>,
    }

    wire_names! {
        struct ExampleNames for Example { first_field, kind = "type", last }
    }

    #[test]
    fn names_come_renamed_and_in_declaration_order() {
        assert_eq!(field_names::<Example>(), ["firstField", "type", "last"]);
        assert!(field_names::<u8>().is_empty());
    }

    #[test]
    fn wire_names_are_serdes() {
        assert_eq!(Example::WIRE.all(), field_names::<Example>());
        assert_eq!(Example::WIRE.first_field, "firstField");
        const NAME: &str = wire_name!(rerank_top_k);
        assert_eq!(NAME, "rerankTopK");
    }

    #[test]
    fn every_tools_wire_names_are_serdes() {
        use crate::tools::*;
        assert_eq!(
            search_files::Params::WIRE.all(),
            field_names::<search_files::Params>()
        );
        assert_eq!(
            read_file::Params::WIRE.all(),
            field_names::<read_file::Params>()
        );
        assert_eq!(
            read_file::Segment::WIRE.all(),
            field_names::<read_file::Segment>()
        );
        assert_eq!(
            list_tree::Params::WIRE.all(),
            field_names::<list_tree::Params>()
        );
        assert_eq!(
            get_file::Params::WIRE.all(),
            field_names::<get_file::Params>()
        );
        assert_eq!(
            read_related::Params::WIRE.all(),
            field_names::<read_related::Params>()
        );
        assert_eq!(
            expand_graph::Params::WIRE.all(),
            field_names::<expand_graph::Params>()
        );
    }

    /// A bounded field: its tool, name, bounds and default as text.
    struct Bounded {
        tool: crate::tools::ToolName,
        field: &'static str,
        min: String,
        max: String,
        default: String,
    }

    fn bounded<T: std::fmt::Display>(
        tool: crate::tools::ToolName,
        field: &'static str,
        bounds: Bounds<T>,
    ) -> Bounded {
        Bounded {
            tool,
            field,
            min: bounds.min.to_string(),
            max: bounds.max.to_string(),
            default: bounds.default.to_string(),
        }
    }

    fn every_bounded_field() -> Vec<Bounded> {
        use crate::tools::*;
        use ToolName::*;
        let (search, read, expand) = (
            search_files::Params::WIRE,
            read_file::Params::WIRE,
            expand_graph::Params::WIRE,
        );
        vec![
            bounded(SearchFiles, search.graph_depth, search_files::GRAPH_DEPTH),
            bounded(SearchFiles, search.graph_fanout, search_files::GRAPH_FANOUT),
            bounded(SearchFiles, search.limit, search_files::LIMIT),
            bounded(SearchFiles, search.rerank_top_k, search_files::RERANK_TOP_K),
            bounded(
                SearchFiles,
                search.rerank_score_threshold,
                search_files::RERANK_SCORE_THRESHOLD,
            ),
            bounded(ReadFile, read.context_lines, read_file::CONTEXT_LINES),
            bounded(ReadFile, read.max_matches, read_file::MAX_MATCHES),
            bounded(ListTree, list_tree::Params::WIRE.limit, list_tree::LIMIT),
            bounded(
                ReadRelated,
                read_related::Params::WIRE.limit,
                read_related::LIMIT,
            ),
            bounded(ExpandGraph, expand.depth, expand_graph::DEPTH),
            bounded(ExpandGraph, expand.fanout, expand_graph::FANOUT),
            bounded(ExpandGraph, expand.limit, expand_graph::LIMIT),
        ]
    }

    /// Each field's description (what MCP, HTTP and the CLI's help show) states the bounds and
    /// default validation applies, and the schema's range is theirs.
    #[test]
    fn descriptions_state_the_bounds() {
        for b in every_bounded_field() {
            let params = b.tool.params();
            let property = params.property(b.field);
            let description = property["description"].as_str().unwrap();
            let at = format!("{} {}: {description}", b.tool.as_str(), b.field);
            assert!(
                description.contains(&format!("{}–{}", b.min, b.max)),
                "{at}"
            );
            assert!(description.contains("(default "), "{at}");
            assert!(description.contains(&format!("{})", b.default)), "{at}");
            if !property["maximum"].is_null() {
                assert_eq!(property["minimum"].to_string(), b.min, "{at}");
                assert_eq!(property["maximum"].to_string(), b.max, "{at}");
            }
        }
        use crate::tools::{read_file, search_files, ToolName};
        let search = ToolName::SearchFiles.params();
        let query = search.property(search_files::Params::WIRE.query);
        assert_eq!(query["minLength"], search_files::MIN_GRAPHEMES);
        assert_eq!(query["maxLength"], search_files::MAX_GRAPHEMES);
        let read = ToolName::ReadFile.params();
        let described = |field: &str| read.property(field)["description"].as_str().unwrap();
        let f = read_file::Params::WIRE;
        let max_query = format!("At most {} characters", read_file::MAX_QUERY_CHARS);
        assert!(described(f.query).contains(&max_query));
        let segments = format!("1–{} line ranges", read_file::MAX_SEGMENTS);
        assert!(described(f.segments).contains(&segments));
        let segment = serde_json::to_value(schemars::schema_for!(read_file::Segment)).unwrap();
        let label = segment["properties"][read_file::Segment::WIRE.label]["description"]
            .as_str()
            .unwrap();
        assert!(label.contains(&format!("up to {} characters", read_file::MAX_LABEL_CHARS)));
    }

    /// The section of `doc` under the heading `## {name}`, whitespace runs as one space.
    fn section(doc: &str, name: &str) -> String {
        let start = doc.find(&format!("\n## {name}\n")).unwrap();
        let rest = &doc[start + 1..];
        let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
        rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The docs state the bounds the code applies: the skill's tool reference and the rules.
    #[test]
    fn the_docs_state_the_bounds() {
        use crate::tools::{expand_graph, list_tree, read_file, read_related, search_files};
        let skill = include_str!("../../skill/knowledge-base-tools/references/tool-contract.md");
        let range = |b: Bounds<u64>| format!("{}–{}, default {}", b.min, b.max, b.default);
        let search = section(skill, "search_files");
        let query = format!(
            "({}–{} characters",
            search_files::MIN_GRAPHEMES,
            search_files::MAX_GRAPHEMES
        );
        assert!(search.contains(&query), "{search}");
        assert!(search.contains(&range(search_files::LIMIT)), "{search}");
        let read = section(skill, "read_file");
        let tune = format!(
            "`contextLines` (default {}) and `maxMatches` (default {})",
            read_file::CONTEXT_LINES.default,
            read_file::MAX_MATCHES.default
        );
        assert!(read.contains(&tune), "{read}");
        let tree = section(skill, "list_tree");
        assert!(tree.contains(&range(list_tree::LIMIT)), "{tree}");
        let related = section(skill, "read_related");
        assert!(related.contains(&range(read_related::LIMIT)), "{related}");
        let expand = section(skill, "expand_graph");
        let (depth, fanout) = (expand_graph::DEPTH, expand_graph::FANOUT);
        let walk = format!(
            "`depth` ({}–{}, default {}) and `fanout` (new relations per page, {}",
            depth.min,
            depth.max,
            depth.default,
            range(fanout)
        );
        assert!(expand.contains(&walk), "{expand}");

        let rules = section(include_str!("../../docs/rules.md"), "Listing and paging");
        let (related, limit) = (read_related::LIMIT, expand_graph::LIMIT);
        let stated = format!(
            "{} per page by default and {} at most. `expand_graph` walks {}–{} steps (default {}), \
             at most {}–{} new relations per explored page (default {}), {} relationships per \
             page by default ({} at most)",
            related.default,
            related.max,
            depth.min,
            depth.max,
            depth.default,
            fanout.min,
            fanout.max,
            fanout.default,
            limit.default,
            limit.max
        );
        assert!(rules.contains(&stated), "{rules}");
    }

    #[test]
    fn bounds_give_the_default_or_refuse() {
        let b = Bounds {
            min: 1u64,
            max: 50,
            default: 10,
        };
        assert_eq!(b.check(None), Some(10));
        assert_eq!(b.check(Some(50)), Some(50));
        assert_eq!(b.check(Some(0)), None);
        assert!(b.contains(1) && !b.contains(51));
    }
}
