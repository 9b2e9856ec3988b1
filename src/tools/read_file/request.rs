//! `read_file`'s input: a JSON input read into [`Params`] (the `segments` array item by item),
//! and every field's validation, in the order the API checks them, into a [`Request`]: what to
//! read (exactly one of `fileId` and `path`) and which part of it.

use serde_json::Value;

use super::{
    invalid, one_line, LineSearch, Params, ReadType, Segment, MAX_LABEL_CHARS, MAX_SEGMENTS,
};
use crate::error::{messages, ToolError};
use crate::ingest::bundle::paths;
use crate::text;
use crate::tools::fields::{self, Bounds};
use crate::tools::input::MAX_SAFE_INTEGER;
use crate::tools::{Malformed, Reader, ToolName};

/// What to read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Target {
    Id(String),
    Path(String),
}

fn target(params: &Params, m: &Malformed) -> Result<Target, ToolError> {
    let f = Params::WIRE;
    let id = m
        .check(f.file_id, params.file_id.as_deref())
        .map_err(|_| ToolError::invalid_field(messages::INPUT_INVALID, f.file_id))?
        .map(str::trim)
        .filter(|id| !id.is_empty());
    let path = m
        .check(f.path, params.path.as_deref())
        .map_err(|_| ToolError::invalid_field(messages::PATH_UNSUPPORTED, f.path))?;
    match (id, path) {
        (Some(_), Some(_)) | (None, None) => Err(ToolError::invalid_field(
            &format!("Provide exactly one of {} or {}.", f.file_id, f.path),
            f.file_id,
        )),
        (Some(id), None) => Ok(Target::Id(id.to_string())),
        (None, Some(path)) => {
            if paths::check_canonical(path).is_err() {
                return Err(ToolError::invalid_field(messages::PATH_UNSUPPORTED, f.path));
            }
            Ok(Target::Path(path.to_string()))
        }
    }
}

impl Params {
    /// A JSON input as `Params`, and the fields it gave in a form they cannot hold.
    pub(crate) fn from_json(value: &Value) -> Result<(Params, Malformed), ToolError> {
        let mut r = Reader::new(value, ToolName::ReadFile.fields())?;
        let f = Params::WIRE;
        let segments = read_segments(&mut r);
        let params = Params {
            file_id: r.string(f.file_id),
            path: r.string(f.path),
            read_type: r.choice(f.read_type),
            query: r.string(f.query),
            context_lines: r.integer(f.context_lines),
            max_matches: r.integer(f.max_matches),
            segments,
        };
        Ok((params, r.malformed))
    }
}

/// `segments` as given: an array's items (each read by [`read_segment`]); a blank string as
/// none given; anything else noted.
fn read_segments(r: &mut Reader<'_>) -> Option<Vec<Segment>> {
    let field = Params::WIRE.segments;
    match r.raw(field)? {
        Value::Array(items) => Some(
            items
                .iter()
                .enumerate()
                .map(|(index, item)| read_segment(&mut r.malformed, index, item))
                .collect(),
        ),
        Value::String(s) if s.trim().is_empty() => Some(Vec::new()),
        _ => {
            r.malformed.note(field);
            None
        }
    }
}

/// One item of `segments`; what does not fit a [`Segment`] is noted under `segments[index]`.
fn read_segment(malformed: &mut Malformed, index: usize, item: &Value) -> Segment {
    let (f, s) = (Params::WIRE, Segment::WIRE);
    let at = format!("{}[{index}]", f.segments);
    let Value::Object(map) = item else {
        malformed.note_error(
            &at,
            invalid(
                &format!(
                    "`{at}` must be an object such as {{\"{}\": 10, \"{}\": 20}}.",
                    s.start, s.end
                ),
                &at,
            ),
        );
        return Segment::default();
    };
    if let Some(unknown) = map
        .keys()
        .find(|k| !fields::field_names::<Segment>().contains(&k.as_str()))
    {
        let field = format!("{at}.{}", text::truncate_chars(unknown, 64));
        malformed.note_error(
            &at,
            invalid(
                &format!(
                    "Unknown field `{field}`. A segment takes {}, {} and {}.",
                    s.label, s.start, s.end
                ),
                &field,
            ),
        );
        return Segment::default();
    }
    let mut r = match Reader::new(item, fields::field_names::<Segment>()) {
        Ok(r) => r,
        Err(error) => {
            malformed.note_error(&at, error);
            return Segment::default();
        }
    };
    let start = r.integer::<u64>(s.start);
    let segment = Segment {
        label: r.string(s.label),
        start: start.unwrap_or_default(),
        end: r.integer(s.end),
    };
    for field in [s.start, s.end, s.label] {
        if r.malformed.has(field) {
            malformed.note(format!("{at}.{field}"));
        }
    }
    if start.is_none() && !r.malformed.has(s.start) {
        let field = format!("{at}.{}", s.start);
        malformed.note_error(
            &field,
            invalid(
                &format!("`{field}` is required: the first line to return, from 1."),
                &field,
            ),
        );
    }
    segment
}

/// A validated request: what to read, and which part of it.
#[derive(Debug)]
pub struct Request {
    pub(super) target: Target,
    pub(super) part: Part,
}

/// Validates typed parameters.
pub fn validate(params: &Params) -> Result<Request, ToolError> {
    validate_with(params, &Malformed::default())
}

/// Validates a read in the API's order; the first failure wins.
pub(super) fn validate_with(params: &Params, malformed: &Malformed) -> Result<Request, ToolError> {
    Ok(Request {
        target: target(params, malformed)?,
        part: part(params, malformed)?,
    })
}

/// A validated read request: the whole file, a line search, or line ranges.
#[derive(Debug)]
pub(super) enum Part {
    Whole,
    Search(LineSearch),
    Extract(Vec<LineRange>),
}

/// The fields of a read type other than `read`, each with whether the input holds something
/// there (not absent, a blank string or an empty array).
fn given_fields(params: &Params, m: &Malformed, owner: ReadType) -> Vec<(&'static str, bool)> {
    let f = Params::WIRE;
    let given = |field: &'static str, typed: bool| (field, typed || m.holds(field));
    match owner {
        ReadType::Search => vec![
            given(
                f.query,
                params
                    .query
                    .as_deref()
                    .is_some_and(|q| !q.trim().is_empty()),
            ),
            given(f.context_lines, params.context_lines.is_some()),
            given(f.max_matches, params.max_matches.is_some()),
        ],
        ReadType::Extract => vec![given(
            f.segments,
            params.segments.as_ref().is_some_and(|s| !s.is_empty()),
        )],
        ReadType::Read => Vec::new(),
    }
}

/// Refuses the fields of another read type, so a forgotten `type` does not read the whole file.
fn refuse_fields(
    params: &Params,
    m: &Malformed,
    read_type: ReadType,
    owner: ReadType,
) -> Result<(), ToolError> {
    match given_fields(params, m, owner)
        .into_iter()
        .find(|(_, given)| *given)
    {
        Some((field, _)) => Err(invalid(
            &format!(
                "`{field}` applies only to {} \"{}\"; this read has {} \"{}\".",
                Params::WIRE.read_type,
                owner.as_str(),
                Params::WIRE.read_type,
                read_type.as_str()
            ),
            field,
        )),
        None => Ok(()),
    }
}

fn part(params: &Params, m: &Malformed) -> Result<Part, ToolError> {
    let field = Params::WIRE.read_type;
    let read_type = m.check(field, params.read_type).map_err(|_| {
        invalid(
            &format!(
                "`{field}` must be \"{}\" (the whole file, the default), \"{}\" or \"{}\".",
                ReadType::Read,
                ReadType::Search,
                ReadType::Extract
            ),
            field,
        )
    })?;
    let read_type = read_type.unwrap_or_default();
    for owner in [ReadType::Search, ReadType::Extract] {
        if read_type != owner {
            refuse_fields(params, m, read_type, owner)?;
        }
    }
    Ok(match read_type {
        ReadType::Read => Part::Whole,
        ReadType::Search => Part::Search(LineSearch::from_params(params, m)?),
        ReadType::Extract => Part::Extract(line_ranges(params, m)?),
    })
}

/// An integer field within `bounds` (absent: their default).
pub(super) fn bounded(
    m: &Malformed,
    key: &str,
    given: Option<u8>,
    bounds: Bounds<u8>,
) -> Result<usize, ToolError> {
    match m.check(key, given).map(|given| bounds.check(given)) {
        Ok(Some(n)) => Ok(usize::from(n)),
        _ => {
            let Bounds { min, max, default } = bounds;
            Err(invalid(
                &format!("`{key}` must be an integer from {min} to {max} (default {default})."),
                key,
            ))
        }
    }
}

/// A validated segment of `type: "extract"`: 1-based, `start <= end`, not yet checked against
/// the file.
#[derive(Debug)]
pub(super) struct LineRange {
    /// Index in `segments`.
    pub(super) index: usize,
    pub(super) label: String,
    pub(super) start: u64,
    pub(super) end: u64,
}

fn line_ranges(params: &Params, m: &Malformed) -> Result<Vec<LineRange>, ToolError> {
    let (field, s) = (Params::WIRE.segments, Segment::WIRE);
    let items = match m.check(field, params.segments.as_deref()) {
        Ok(None) => {
            return Err(invalid(
                &format!(
                    "{} \"{}\" requires `{field}`: line ranges such as [{{\"{}\": 10, \"{}\": 20}}].",
                    Params::WIRE.read_type,
                    ReadType::Extract,
                    s.start,
                    s.end
                ),
                field,
            ))
        }
        Ok(Some(items)) if !items.is_empty() && items.len() <= MAX_SEGMENTS => items,
        _ => {
            return Err(invalid(
                &format!(
                    "`{field}` must be an array of 1 to {MAX_SEGMENTS} objects {{\"{}\"?: string, \"{}\": line, \"{}\"?: line}}.",
                    s.label, s.start, s.end
                ),
                field,
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(index, segment)| line_range(m, index, segment))
        .collect()
}

fn line_range(m: &Malformed, index: usize, segment: &Segment) -> Result<LineRange, ToolError> {
    let s = Segment::WIRE;
    let at = format!("{}[{index}]", Params::WIRE.segments);
    let start_field = format!("{at}.{}", s.start);
    if let Some(error) = m.error(&at).or_else(|| m.error(&start_field)) {
        return Err(error);
    }
    // Typed parameters hold any u64; a JSON number past JavaScript's safe integers is no line
    // number (`Input::integer`), so neither is a typed one.
    let start = match m.check(&start_field, segment.start) {
        Ok(n) if (1..=MAX_SAFE_INTEGER).contains(&n) => n,
        _ => {
            return Err(invalid(
                &format!("`{start_field}` must be a line number, 1 or more."),
                &start_field,
            ))
        }
    };
    let end_field = format!("{at}.{}", s.end);
    let end = match m.check(&end_field, segment.end) {
        Ok(None) => start,
        Ok(Some(n)) if n <= MAX_SAFE_INTEGER && n >= start => n,
        Ok(Some(n)) if (1..=MAX_SAFE_INTEGER).contains(&n) => {
            return Err(invalid(
                &format!("`{end_field}` ({n}) is before `{start_field}` ({start})."),
                &end_field,
            ))
        }
        _ => {
            return Err(invalid(
                &format!("`{end_field}` must be a line number, {start} (the start) or more."),
                &end_field,
            ))
        }
    };
    let label_field = format!("{at}.{}", s.label);
    let label = match m.check(&label_field, segment.label.as_deref()) {
        Ok(label) => label
            .map(one_line)
            .map(|l| {
                text::truncate_chars(&l, MAX_LABEL_CHARS)
                    .trim_end()
                    .to_string()
            })
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| format!("segment_{}", index + 1)),
        Err(_) => {
            return Err(invalid(
                &format!("`{label_field}` must be a string."),
                &label_field,
            ))
        }
    };
    Ok(LineRange {
        index,
        label,
        start,
        end,
    })
}
