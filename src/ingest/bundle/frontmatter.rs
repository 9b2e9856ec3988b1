//! Frontmatter: finding the block (YAML between `---` fences, or TOML between `+++` fences as
//! Hugo writes it) and turning it into JSON. This is the only module that touches `serde_yaml`
//! and `toml`. An invalid block is kept as raw text and reported, never fatal.

use std::cell::Cell;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::{Map, Number, Value};

/// Frontmatter larger than this is not parsed (it is reported and kept as raw text). Focowiki
/// itself caps frontmatter at 8 KiB of JSON.
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 256 * 1024;

/// A located frontmatter block.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter<'a> {
    /// The YAML between the fences.
    pub yaml: &'a str,
    /// Byte offset in the text where the body starts (after the closing fence line).
    pub body_start: usize,
    /// 1-based line number of the first YAML line.
    pub first_line: usize,
    /// TOML between `+++` fences (Hugo) rather than YAML.
    pub toml: bool,
}

/// Finds a leading `---` … `---` (or `...`) block. A block that never closes is not frontmatter.
pub fn locate(text: &str) -> Option<Frontmatter<'_>> {
    let text_no_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let offset = text.len() - text_no_bom.len();
    let first_end = text_no_bom.find('\n')?;
    let fence = text_no_bom[..first_end].trim_end_matches('\r').trim_end();
    let toml = match fence {
        "---" => false,
        "+++" => true,
        _ => return None,
    };
    let yaml_start = offset + first_end + 1;
    let mut line_start = yaml_start;
    while line_start <= text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let line = text[line_start..line_end].trim_end_matches('\r').trim_end();
        if (!toml && (line == "---" || line == "...")) || (toml && line == "+++") {
            let body_start = if line_end < text.len() {
                line_end + 1
            } else {
                line_end
            };
            return Some(Frontmatter {
                yaml: &text[yaml_start..line_start],
                body_start,
                first_line: 2,
                toml,
            });
        }
        if line_end >= text.len() {
            break;
        }
        line_start = line_end + 1;
    }
    None
}

/// A frontmatter parse failure with the 1-based line in the file, when known.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontmatterError {
    pub line: Option<usize>,
    pub message: String,
}

/// Parses the YAML (or TOML) of a block into a JSON object. An empty block gives `{}`.
pub fn parse(block: &Frontmatter<'_>) -> Result<Map<String, Value>, FrontmatterError> {
    if block.yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError {
            line: Some(block.first_line),
            message: format!(
                "frontmatter is {} bytes, more than the {} bytes kbtools parses",
                block.yaml.len(),
                MAX_FRONTMATTER_BYTES
            ),
        });
    }
    if block.yaml.trim().is_empty() {
        return Ok(Map::new());
    }
    if flow_depth_exceeds(block.yaml, MAX_FLOW_DEPTH) {
        return Err(FrontmatterError {
            line: Some(block.first_line),
            message: format!(
                "frontmatter nests deeper than {MAX_FLOW_DEPTH} levels of [ and {{; not parsed"
            ),
        });
    }
    if block.toml {
        // Dotted keys nest too (`a.b.c = 1`, `[a.b.c]`): as deep a bound as brackets have.
        let dotted_depth = block
            .yaml
            .lines()
            .map(|line| line.split('=').next().unwrap_or("").matches('.').count())
            .max()
            .unwrap_or(0);
        if dotted_depth > MAX_FLOW_DEPTH {
            return Err(FrontmatterError {
                line: Some(block.first_line),
                message: format!(
                    "frontmatter nests deeper than {MAX_FLOW_DEPTH} levels of dotted keys; not parsed"
                ),
            });
        }
        let table: toml::Table = toml::from_str(block.yaml).map_err(|e| FrontmatterError {
            line: e.span().map(|span| {
                block.first_line
                    + block
                        .yaml
                        .get(..span.start)
                        .unwrap_or(block.yaml)
                        .matches('\n')
                        .count()
            }),
            message: e.message().to_string(),
        })?;
        return Ok(table
            .into_iter()
            .map(|(k, v)| (k, toml_to_json(v)))
            .collect());
    }
    // Only an alias (`*name`) expands, so YAML without a `*` is not counted (the count was a
    // third of the time pages took to read).
    if block.yaml.contains('*') {
        count_expansion(block)?;
    }
    let value: serde_yaml::Value =
        serde_yaml::from_str(block.yaml).map_err(|e| located(block, e))?;
    match yaml_to_json(value, 0) {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(FrontmatterError {
            line: Some(block.first_line),
            message: format!("frontmatter is a {}, not a mapping", json_kind(&other)),
        }),
    }
}

/// A TOML value as JSON: dates and times as their TOML text (`2024-01-02T00:00:00Z`), as YAML
/// timestamps are kept; a float that JSON cannot hold (NaN, infinity) as null.
fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(k, v)| (k, toml_to_json(v)))
                .collect(),
        ),
    }
}

/// Counts what the YAML of `block` expands to, aliases replayed, without keeping it: a document
/// that expands past its budget ([`node_budget`], an alias bomb) is refused before it is built.
fn count_expansion(block: &Frontmatter<'_>) -> Result<(), FrontmatterError> {
    let budget = Cell::new(node_budget(block.yaml));
    serde_yaml::Deserializer::from_str(block.yaml)
        .next()
        .map_or(Ok(()), |document| Count(&budget).deserialize(document))
        .map_err(|e| {
            if budget.get() == 0 {
                FrontmatterError {
                    line: Some(block.first_line),
                    message: format!(
                        "frontmatter expands to more than {} values (YAML aliases); not parsed",
                        node_budget(block.yaml)
                    ),
                }
            } else {
                located(block, e)
            }
        })
}

/// A serde_yaml error at its line in the file.
fn located(block: &Frontmatter<'_>, e: serde_yaml::Error) -> FrontmatterError {
    FrontmatterError {
        line: e.location().map(|l| block.first_line + l.line() - 1),
        message: e.to_string(),
    }
}

/// Flow nesting (`[`, `{`) deeper than this is refused before parsing: the YAML parser's time
/// grows faster than linearly with it (10,000 levels took seconds, 100,000 over a minute), and
/// serde_yaml would refuse past 128 levels anyway.
const MAX_FLOW_DEPTH: usize = 128;

/// True when the brackets of `yaml`, outside quoted scalars and comments, nest deeper than
/// `max`. A conservative count (a `[` inside a plain scalar counts too), so it refuses only
/// what serde_yaml would, or a block with more than `max` unbalanced brackets in plain text.
fn flow_depth_exceeds(yaml: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut comment = false;
    let mut previous = b'\n';
    let bytes = yaml.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if comment {
            if b == b'\n' {
                comment = false;
            }
            previous = b;
            continue;
        }
        match quote {
            Some(b'"') => match b {
                b'\\' => i += 1,
                b'"' => quote = None,
                _ => {}
            },
            Some(_) => {
                if b == b'\'' {
                    quote = None;
                }
            }
            None => match b {
                // A quote opens a quoted scalar only where a token starts (not `it's`).
                b'"' | b'\'' if previous.is_ascii_whitespace() || b"[{,:-?".contains(&previous) => {
                    quote = Some(b);
                }
                b'#' if previous.is_ascii_whitespace() => comment = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        previous = b;
    }
    false
}

/// Values (scalars, sequences, mappings, keys included) a frontmatter block may expand to: a
/// document without aliases has fewer than one per byte, so only alias expansion reaches it.
fn node_budget(yaml: &str) -> usize {
    yaml.len() + 1024
}

/// Counts the values of a YAML document as serde_yaml replays them (aliases included), failing
/// when the budget in the cell runs out.
struct Count<'a>(&'a Cell<usize>);

impl Count<'_> {
    fn tick<E: de::Error>(&self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom("frontmatter expands past its budget")),
            left => {
                self.0.set(left - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.tick()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.tick()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.tick()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.tick()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.tick()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.tick()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.tick()
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.tick()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.tick()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.tick()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.tick()?;
        Count(self.0).deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.tick()?;
        Count(self.0).deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.tick()?;
        while seq.next_element_seed(Count(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.tick()?;
        while map.next_key_seed(Count(self.0))?.is_some() {
            map.next_value_seed(Count(self.0))?;
        }
        Ok(())
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag value`): the tag, then the value.
        self.tick()?;
        let ((), variant) = data.variant_seed(Count(self.0))?;
        variant.newtype_variant_seed(Count(self.0))
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "sequence",
        Value::Object(_) => "mapping",
    }
}

/// Deepest nesting kept; deeper values become `null` (serde_yaml already bounds recursion).
const MAX_DEPTH: usize = 64;

fn yaml_to_json(value: serde_yaml::Value, depth: usize) -> Value {
    use serde_yaml::Value as Y;
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map_or_else(|| Value::String(n.to_string()), Value::Number)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|v| yaml_to_json(v, depth + 1))
                .collect(),
        ),
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (k, v) in mapping {
                let key = match k {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".to_string(),
                    other => serde_yaml::to_string(&other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                map.insert(key, yaml_to_json(v, depth + 1));
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, depth + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugo_toml_frontmatter_parses_and_bad_toml_is_located() {
        let text = "+++\ntitle = \"Configuration\"\ndate = 2024-01-02T03:04:05Z\ntags = [\"a\", \"b\"]\n[params]\nweight = 3\n+++\n# Body";
        let block = locate(text).unwrap();
        assert!(block.toml);
        assert_eq!(&text[block.body_start..], "# Body");
        let map = parse(&block).unwrap();
        assert_eq!(map["title"], "Configuration");
        assert_eq!(map["tags"][1], "b");
        assert_eq!(map["params"]["weight"], 3);
        assert_eq!(map["date"], "2024-01-02T03:04:05Z");
        let bad = "+++\ntitle = \"x\"\nbroken = \n+++\n";
        let e = parse(&locate(bad).unwrap()).unwrap_err();
        assert_eq!(e.line, Some(3), "{e:?}");
        // `---` does not close a `+++` block.
        assert!(locate("+++\ntitle = 1\n---\n").is_none());
    }

    #[test]
    fn empty_block_is_empty_object() {
        let text = "---\n---\n# Title";
        let block = locate(text).unwrap();
        assert_eq!(&text[block.body_start..], "# Title");
        assert!(parse(&block).unwrap().is_empty());
    }

    #[test]
    fn json_flow_values_parse() {
        let text = "---\ngenerated: {\"by\":\"x\",\"at\":\"2026-07-13T00:00:00Z\"}\ntags:\n  - \"a\"\n---\nbody";
        let map = parse(&locate(text).unwrap()).unwrap();
        assert_eq!(map["generated"]["by"], "x");
        assert_eq!(map["tags"][0], "a");
    }

    #[test]
    fn invalid_yaml_reports_a_line() {
        let text = "---\ntitle: ok\nbad: [unclosed\n---\nbody";
        let err = parse(&locate(text).unwrap()).unwrap_err();
        assert!(err.line.unwrap() >= 2, "{err:?}");
    }

    #[test]
    fn unclosed_block_is_not_frontmatter() {
        assert!(locate("---\ntitle: x\nno close").is_none());
        assert!(locate("no frontmatter").is_none());
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut yaml = String::from("---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
        let mut prev = "a";
        for name in names {
            yaml.push_str(&format!("{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
            prev = name;
        }
        yaml.push_str("---\nbody");
        assert!(parse(&locate(&yaml).unwrap()).is_err());
    }

    fn block_of(yaml: &str) -> String {
        format!("---\n{yaml}\n---\nbody")
    }

    #[test]
    fn quadratic_alias_expansion_is_refused() {
        let keys: Vec<String> = (0..1000).map(|i| format!("k{i}: v")).collect();
        let mut yaml = format!("base: &base {{{}}}\nrefs:\n", keys.join(", "));
        for _ in 0..2000 {
            yaml.push_str("  - *base\n");
        }
        let text = block_of(&yaml);
        let err = parse(&locate(&text).unwrap()).unwrap_err();
        assert!(err.message.contains("YAML aliases"), "{err:?}");
        // A few aliases are fine.
        let text = block_of("a: &x [1, 2]\nb: *x\nc: *x");
        let map = parse(&locate(&text).unwrap()).unwrap();
        assert_eq!(map["c"], serde_json::json!([1, 2]));
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        let deep = format!("x: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        let text = block_of(&deep);
        let err = parse(&locate(&text).unwrap()).unwrap_err();
        assert!(err.message.contains("nests deeper"), "{err:?}");
        // Brackets in quoted scalars, comments and words do not count.
        let quoted = format!(
            "a: \"{0}\"\nb: '{0}'\n# {0}\nc: it's {1}",
            "[".repeat(200),
            "ok"
        );
        let text = block_of(&quoted);
        let map = parse(&locate(&text).unwrap()).unwrap();
        assert_eq!(map["c"], "it's ok");
        let nested = format!("x: {}1{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(&locate(&block_of(&nested)).unwrap()).is_ok());
    }

    #[test]
    fn yaml_without_aliases_stays_within_its_budget() {
        // `parse` counts only YAML with a `*`: the budget must hold every alias-free document,
        // the densest included.
        let dense = [
            "- - - - - - - - - - - - - - - - x",
            "[[],[],[],[],[],[],[],[],[],[],[],[]]",
            "{a: {b: {c: {}}}, d: [1,2,3,4,5,6,7,8,9]}",
            "? a\n? b\n? c\n? d\n? e",
            "a:\nb:\nc:\nd:\ne:\nf:",
        ];
        let mut counted = 0;
        for yaml in dense {
            // Thousands of values, far past the budget's slack (a comment between copies).
            let repeated = vec![yaml; 2000].join("\n#\n");
            for text in [block_of(yaml), block_of(&repeated)] {
                let block = locate(&text).unwrap();
                match count_expansion(&block) {
                    Ok(()) => counted += 1,
                    // Copies of a flow collection are no document: a syntax error, not a budget.
                    Err(e) => assert!(!e.message.contains("YAML aliases"), "{yaml}: {e:?}"),
                }
            }
        }
        assert!(counted >= 8, "{counted}");
        // The first pass and the parse name a syntax error alike, so skipping the first pass
        // changes no message.
        let text = block_of("a: [1, 2\nb: *x");
        let block = locate(&text).unwrap();
        let counted = count_expansion(&block).unwrap_err();
        let parsed = serde_yaml::from_str::<serde_yaml::Value>(block.yaml).unwrap_err();
        assert_eq!(counted, located(&block, parsed));
    }

    #[test]
    fn tagged_values_are_counted_and_kept() {
        let text = block_of("a: !custom [1, 2]\nb: !!str 5");
        let map = parse(&locate(&text).unwrap()).unwrap();
        assert_eq!(map["a"], serde_json::json!([1, 2]));
        assert_eq!(map["b"], "5");
    }
}
