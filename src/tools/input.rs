//! A tool's JSON input read into its typed `Params`. The wire is as lenient as the online API
//! (an integer may come as `"10"` or `10.0`, a flag as `"true"`, an empty string or `null`
//! means absent); a field whose value its `Params` field cannot hold is noted in
//! [`Malformed`], and the tool's `validate` answers that field's error when it reaches it. So
//! JSON and Rust callers share one validator, and the API's order (the first failing field
//! wins) holds for both.

use serde_json::{Map, Value};

use super::fields::Bounds;
use crate::error::ToolError;

/// An input field holds a value of the wrong type or form (each tool maps it to its own error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// A tool's JSON input: an object whose keys are all known to the tool.
pub struct Input<'a> {
    map: Option<&'a Map<String, Value>>,
}

/// The largest integer a JavaScript `Number` holds exactly (`Number.MAX_SAFE_INTEGER`): an
/// integer field past it is no integer, whether it arrives as JSON or as typed parameters.
pub(crate) const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

impl<'a> Input<'a> {
    /// Checks the input's shape: an object (or null, meaning no arguments) with known keys only
    /// (rules#tool-inputs).
    pub fn new(value: &'a Value, known: &[&str]) -> Result<Self, ToolError> {
        let map = match value {
            Value::Null => None,
            Value::Object(map) => Some(map),
            _ => {
                return Err(ToolError::invalid_field(
                    "Tool input must be a JSON object.",
                    "input",
                ))
            }
        };
        if let Some(map) = map {
            if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
                return Err(ToolError::invalid_field(
                    &format!(
                        "Unknown input field `{}`. Accepted fields: {}.",
                        crate::text::truncate_chars(unknown, 64),
                        known.join(", ")
                    ),
                    unknown,
                ));
            }
        }
        Ok(Input { map })
    }

    /// The raw value of `key`; `null` counts as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    /// A string field: absent → `None`; a non-string → `Err(WrongType)`.
    pub fn string(&self, key: &str) -> Result<Option<&'a str>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(WrongType),
        }
    }

    /// A trimmed string field where empty counts as absent.
    pub fn trimmed(&self, key: &str) -> Result<Option<&'a str>, WrongType> {
        Ok(self.string(key)?.map(str::trim).filter(|s| !s.is_empty()))
    }

    /// An integer with JavaScript `Number` semantics: a JSON integer, an integral float, or a
    /// string such as `" 5 "` or `"10.0"`. Absent or empty → `Ok(None)`.
    pub fn integer(&self, key: &str) -> Result<Option<i64>, WrongType> {
        let number = match self.get(key) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64().ok_or(WrongType)?,
            Some(Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() {
                    return Ok(None);
                }
                if !t
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
                {
                    return Err(WrongType);
                }
                t.parse::<f64>().map_err(|_| WrongType)?
            }
            Some(_) => return Err(WrongType),
        };
        if !number.is_finite() || number.fract() != 0.0 || number.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(WrongType);
        }
        Ok(Some(number as i64))
    }

    /// The `cursor` field: a string (empty counts as none).
    pub fn cursor(&self) -> Result<Option<&'a str>, ToolError> {
        match self.get("cursor") {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ToolError::cursor_invalid()),
        }
    }
}

/// A `limit` in `1..=max` (default `default`), with the API's `{field: "limit"}` error.
pub fn page_limit(input: &Input<'_>, default: u64, max: u64) -> Result<u64, ToolError> {
    match input.integer("limit") {
        Ok(None) => Ok(default),
        Ok(Some(n)) if n >= 1 && (n as u64) <= max => Ok(n as u64),
        _ => Err(ToolError::limit_invalid()),
    }
}

/// The fields of a JSON input that held a value of the wrong type or form, by their path
/// (`limit`, `segments[2].start`), each with the error to answer when the tool words it here
/// rather than in `validate`. Empty for typed input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Malformed(Vec<Noted>);

#[derive(Debug, Clone, PartialEq)]
struct Noted {
    field: String,
    error: Option<ToolError>,
    /// The value was an empty array: malformed, but nothing given.
    empty: bool,
}

impl Malformed {
    /// `field` held a value `Params` cannot hold; `validate` words the error.
    pub fn note(&mut self, field: impl Into<String>) {
        self.push(field.into(), None, false);
    }

    /// `field` held something only JSON can hold (such as an unknown key), answered by `error`.
    pub(crate) fn note_error(&mut self, field: impl Into<String>, error: ToolError) {
        self.push(field.into(), Some(error), false);
    }

    fn push(&mut self, field: String, error: Option<ToolError>, empty: bool) {
        self.0.push(Noted {
            field,
            error,
            empty,
        });
    }

    fn find(&self, field: &str) -> Option<&Noted> {
        self.0.iter().find(|n| n.field == field)
    }

    pub fn has(&self, field: &str) -> bool {
        self.find(field).is_some()
    }

    /// Whether `field` was malformed and held something (an empty array holds nothing).
    pub fn holds(&self, field: &str) -> bool {
        self.find(field).is_some_and(|n| !n.empty)
    }

    /// The error noted with `field`, if any.
    pub fn error(&self, field: &str) -> Option<ToolError> {
        self.find(field).and_then(|n| n.error.clone())
    }

    /// `value`, or `Err(WrongType)` when the input gave `field` in a form `Params` cannot hold.
    pub fn check<T>(&self, field: &str, value: T) -> Result<T, WrongType> {
        if self.has(field) {
            Err(WrongType)
        } else {
            Ok(value)
        }
    }
}

/// Reads a JSON input's fields into a tool's `Params`, noting each that does not fit.
pub struct Reader<'a> {
    input: Input<'a>,
    pub malformed: Malformed,
}

impl<'a> Reader<'a> {
    /// Checks the input's shape ([`Input::new`]).
    pub fn new(value: &'a Value, known: &[&str]) -> Result<Self, ToolError> {
        Ok(Reader {
            input: Input::new(value, known)?,
            malformed: Malformed::default(),
        })
    }

    /// The raw value of `key` (`null` counts as absent).
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        self.input.get(key)
    }

    fn noted<T>(&mut self, key: &str, value: Result<Option<T>, WrongType>) -> Option<T> {
        value.unwrap_or_else(|_| {
            let empty = matches!(self.raw(key), Some(Value::Array(items)) if items.is_empty());
            self.malformed.push(key.to_string(), None, empty);
            None
        })
    }

    /// A string field as given.
    pub fn string(&mut self, key: &str) -> Option<String> {
        let value = self.input.string(key).map(|s| s.map(str::to_string));
        self.noted(key, value)
    }

    /// One of a closed set's values, trimmed (empty: absent).
    pub fn choice<T: std::str::FromStr>(&mut self, key: &str) -> Option<T> {
        let value = match self.input.trimmed(key) {
            Ok(Some(text)) => text.parse().map(Some).map_err(|_| WrongType),
            other => other.map(|_| None),
        };
        self.noted(key, value)
    }

    /// An integer ([`Input::integer`]) that fits `T`.
    pub fn integer<T: TryFrom<i64>>(&mut self, key: &str) -> Option<T> {
        let value = self
            .input
            .integer(key)
            .and_then(|n| n.map(T::try_from).transpose().map_err(|_| WrongType));
        self.noted(key, value)
    }

    /// A flag: `true`, `false`, or those words as strings (empty: absent).
    pub fn flag(&mut self, key: &str) -> Option<bool> {
        let value = match self.input.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(WrongType),
        };
        self.noted(key, value)
    }

    /// A number, or a string that parses as one (blank: absent).
    pub fn number(&mut self, key: &str) -> Option<f64> {
        let value = match self.input.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_f64().map(Some).ok_or(WrongType),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| WrongType),
            Some(_) => Err(WrongType),
        };
        self.noted(key, value)
    }
}

/// A page limit within `bounds` (absent: their default), read from `field`, with the API's
/// `{field: "limit"}` error.
pub fn limit(
    malformed: &Malformed,
    field: &str,
    given: Option<u64>,
    bounds: Bounds<u64>,
) -> Result<u64, ToolError> {
    malformed
        .check(field, given)
        .ok()
        .and_then(|given| bounds.check(given))
        .ok_or_else(ToolError::limit_invalid)
}

/// A cursor read from `field` (empty: none); a non-string is the API's invalid-cursor error.
pub fn cursor(
    malformed: &Malformed,
    field: &str,
    given: Option<&str>,
) -> Result<Option<String>, ToolError> {
    match malformed.check(field, given) {
        Ok(cursor) => Ok(cursor.filter(|c| !c.is_empty()).map(str::to_string)),
        Err(_) => Err(ToolError::cursor_invalid()),
    }
}

#[cfg(test)]
mod tests {
    //! The reader's wire forms, and that a malformed field answers at its place in the order.
    use serde_json::json;

    use super::*;
    use crate::tools::search_files;

    #[test]
    fn the_reader_takes_the_wire_forms_and_notes_the_rest() {
        let input = json!({
            "limit": " 10.0 ", "depth": 300, "flag": "true", "mode": " file ",
            "empty": [], "word": 5, "blank": ""
        });
        let mut r = Reader::new(
            &input,
            &["limit", "depth", "flag", "mode", "empty", "word", "blank"],
        )
        .unwrap();
        assert_eq!(r.integer::<u64>("limit"), Some(10));
        assert_eq!(r.integer::<u8>("depth"), None);
        assert_eq!(r.flag("flag"), Some(true));
        assert_eq!(r.choice("mode"), Some(search_files::Mode::File));
        assert_eq!(r.integer::<u64>("empty"), None);
        assert_eq!(r.string("word"), None);
        assert_eq!(r.integer::<u64>("blank"), None);
        let m = r.malformed;
        assert!(m.has("depth") && m.holds("depth"));
        assert!(
            m.has("empty") && !m.holds("empty"),
            "an empty array holds nothing"
        );
        assert!(m.has("word") && !m.has("blank") && !m.has("limit"));
    }

    #[test]
    fn a_malformed_field_answers_only_when_validation_reaches_it() {
        let code = |input: Value| {
            let error = search_files::validate_json(&input).unwrap_err();
            error.details.unwrap()["code"].as_str().unwrap().to_string()
        };
        // The query comes first: its rule wins over a later field's wrong type.
        assert_eq!(
            code(json!({"query": "a", "scope": 5})),
            "FILE_SEARCH_QUERY_TOO_SHORT"
        );
        assert_eq!(
            code(json!({"query": "ab", "scope": 5, "limit": 0})),
            "INVALID_FILE_SEARCH_SCOPE"
        );
        assert_eq!(
            code(json!({"query": "ab", "graphDepth": 3, "limit": "x"})),
            "INVALID_FILE_SEARCH_GRAPH_DEPTH"
        );
        // Typed input meets the same rules.
        let typed = search_files::validate(&search_files::Params {
            query: "ab".into(),
            graph_depth: Some(3),
            ..Default::default()
        });
        assert_eq!(
            typed.unwrap_err().details.unwrap()["code"],
            "INVALID_FILE_SEARCH_GRAPH_DEPTH"
        );
    }
}
