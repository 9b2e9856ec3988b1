//! YAML frontmatter: finding the block and turning it into JSON. This is the only module that
//! touches `serde_yaml`. An invalid block is kept as raw text and reported, never fatal.

use serde_json::{Map, Number, Value};

/// Frontmatter larger than this is not parsed (it is reported and kept as raw text). Focowiki
/// itself caps frontmatter at 8 KiB of JSON.
pub const MAX_FRONTMATTER_BYTES: usize = 256 * 1024;

/// A located frontmatter block.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter<'a> {
    /// The YAML between the fences.
    pub yaml: &'a str,
    /// Byte offset in the text where the body starts (after the closing fence line).
    pub body_start: usize,
    /// 1-based line number of the first YAML line.
    pub first_line: usize,
}

/// Finds a leading `---` … `---` (or `...`) block. A block that never closes is not frontmatter.
pub fn locate(text: &str) -> Option<Frontmatter<'_>> {
    let text_no_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let offset = text.len() - text_no_bom.len();
    let first_end = text_no_bom.find('\n')?;
    if text_no_bom[..first_end].trim_end_matches('\r').trim_end() != "---" {
        return None;
    }
    let yaml_start = offset + first_end + 1;
    let mut line_start = yaml_start;
    while line_start <= text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let line = text[line_start..line_end].trim_end_matches('\r').trim_end();
        if line == "---" || line == "..." {
            let body_start = if line_end < text.len() {
                line_end + 1
            } else {
                line_end
            };
            return Some(Frontmatter {
                yaml: &text[yaml_start..line_start],
                body_start,
                first_line: 2,
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

/// Parses the YAML of a block into a JSON object. Empty YAML gives `{}`.
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
    let value: serde_yaml::Value =
        serde_yaml::from_str(block.yaml).map_err(|e| FrontmatterError {
            line: e.location().map(|l| block.first_line + l.line() - 1),
            message: e.to_string(),
        })?;
    match yaml_to_json(value, 0) {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(FrontmatterError {
            line: Some(block.first_line),
            message: format!("frontmatter is a {}, not a mapping", json_kind(&other)),
        }),
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
}
