//! Reading one file of a bundle: its bytes (at most [`MAX_PARSE_BYTES`]), hash and text, and
//! what its kind makes of it (a page's title, frontmatter and index text; a record parsed).

use std::io::Read;

use super::paths::PathClass;
use super::walk::{self, WalkedFile};
use super::{
    beneath, indexed_text, is_record_class, is_source_page, records, sha256_hex, split_page,
    string_field, with_read_buffer, BundleKind, Code, Detail, OnPage, PageText, ParsedRecord,
    Problem, ReadFile, SplitPage, MAX_PARSE_BYTES,
};
use crate::ingest::markdown;

/// What [`read_bytes`] read of a file.
pub(super) struct ReadBytes {
    /// SHA-256 of the bytes read: the whole file, or its first [`MAX_PARSE_BYTES`] when it is
    /// larger.
    pub(super) sha256: String,
    /// The file's size: the bytes read, or its size on disk when it is over the limit.
    pub(super) total: u64,
    /// The file's size or modification time changed between the walk and the end of the read.
    pub(super) changed: bool,
}

/// A file's bytes into `bytes`: at most the first [`MAX_PARSE_BYTES`] of it, and never past
/// that, so a huge (a sparse 100 GiB file) or a growing file costs no more time and memory than
/// a file of the limit. A larger file is hashed by that prefix. The file is opened inside the
/// bundle only ([`beneath`]).
pub(super) fn read_bytes(file: &WalkedFile, bytes: &mut Vec<u8>) -> std::io::Result<ReadBytes> {
    let mut handle = beneath::open_under(file.root(), &file.relative)?;
    bytes.clear();
    bytes.reserve(file.size.min(MAX_PARSE_BYTES) as usize);
    (&mut handle).take(MAX_PARSE_BYTES).read_to_end(bytes)?;
    let sha256 = sha256_hex(bytes);
    let after = handle.metadata()?;
    let read = bytes.len() as u64;
    let changed = after.len() != file.size
        || walk::mtime_ns(&after) != file.mtime_ns
        || (read < MAX_PARSE_BYTES && read != after.len());
    let total = if read == MAX_PARSE_BYTES {
        after.len().max(read)
    } else {
        read
    };
    Ok(ReadBytes {
        sha256,
        total,
        changed,
    })
}

/// The text of `bytes`, the first `MAX_PARSE_BYTES` of a file of `total` bytes: a character cut
/// at the end of a truncated prefix is dropped; any other invalid UTF-8 becomes U+FFFD, and
/// `Err(byte)` tells where the first one was.
pub(super) fn text_of(
    bytes: &mut Vec<u8>,
    total: u64,
) -> (std::borrow::Cow<'_, str>, Option<usize>) {
    if total > bytes.len() as u64 {
        if let Err(e) = std::str::from_utf8(bytes) {
            if e.error_len().is_none() {
                bytes.truncate(e.valid_up_to());
            }
        }
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), None),
        Err(e) => (String::from_utf8_lossy(bytes), Some(e.valid_up_to())),
    }
}

pub(super) fn read_one(
    file: &WalkedFile,
    path: String,
    class: PathClass,
    kind: BundleKind,
    on_page: Option<OnPage<'_>>,
) -> ReadFile {
    let out = ReadFile {
        path,
        disk: file.relative.clone(),
        class,
        size: file.size,
        mtime_ns: file.mtime_ns,
        sha256: String::new(),
        problems: Vec::new(),
        detail: Detail::default(),
    };
    // Only a file that can be a source page (a navigation page when a record lists it).
    let on_page = on_page.filter(|_| is_source_page(class, true));
    let mut text = None;
    let out =
        with_read_buffer(|bytes| read_parsed(file, out, bytes, kind, on_page.map(|_| &mut text)));
    if let (Some(on_page), Some(text)) = (on_page, text) {
        on_page(&out, text);
    }
    out
}

/// A bundle JSON file's text parsed into `out`: a record ingest reads is kept (as what ingest
/// takes from it); of the others (term postings can be megabytes) only the syntax is checked
/// and the title taken.
fn parse_json_file(out: &mut ReadFile, text: &str) {
    let parsed = if is_record_class(out.class) {
        let graph = out.class == PathClass::PerFileGraph;
        records::parse_record(text, graph).map(|mut parts| {
            out.detail.own_title = parts.title.take();
            out.detail.record = Some(Box::new(ParsedRecord::of(parts, out.class)));
        })
    } else {
        records::parse_title(text).map(|title| out.detail.own_title = title)
    };
    if let Err(e) = parsed {
        out.problems.push(Problem::new(
            Code::InvalidJson,
            None,
            format!("invalid JSON: {e}"),
        ));
    }
}

/// [`read_one`] of the file, read into `bytes`.
fn read_parsed(
    file: &WalkedFile,
    mut out: ReadFile,
    bytes: &mut Vec<u8>,
    kind: BundleKind,
    page_text: Option<&mut Option<PageText>>,
) -> ReadFile {
    let ReadBytes {
        sha256: sha,
        total,
        changed,
    } = match read_bytes(file, bytes) {
        Ok(x) => x,
        Err(e) => {
            out.problems.push(Problem::new(
                Code::Unreadable,
                None,
                format!("cannot read: {e}; skipped"),
            ));
            out.sha256 = "unreadable".into();
            return out;
        }
    };
    out.sha256 = sha;
    out.size = total;
    if changed {
        out.problems.push(Problem::new(
            Code::ChangedWhileRead,
            None,
            "changed while it was read; indexed as read (the next build reads it again)",
        ));
    }
    if total > MAX_PARSE_BYTES {
        if out.path.ends_with(".json") {
            out.problems.push(Problem::new(
                Code::TooLarge,
                None,
                format!(
                    "{total} bytes, more than the {MAX_PARSE_BYTES} bytes kbtools reads; listed but not parsed (its checksumSha256 covers the first {MAX_PARSE_BYTES} bytes)"
                ),
            ));
            return out;
        }
        out.problems.push(Problem::new(
            Code::TooLarge,
            None,
            format!(
                "{total} bytes, more than the {MAX_PARSE_BYTES} bytes kbtools reads; only the first {MAX_PARSE_BYTES} bytes are read, parsed, indexed and hashed (its checksumSha256 covers them)"
            ),
        ));
    }
    let (text, invalid_at) = text_of(bytes, total);
    if let Some(valid) = invalid_at {
        out.problems.push(Problem::new(
            Code::InvalidUtf8,
            None,
            format!("invalid UTF-8 at byte {valid}; read as text with U+FFFD replacements"),
        ));
    }
    if out.path.ends_with(".json") {
        parse_json_file(&mut out, &text);
        return out;
    }
    let SplitPage {
        frontmatter,
        invalid,
        body,
    } = split_page(&text);
    let mut raw_frontmatter = None;
    if let Some((e, raw)) = invalid {
        out.problems.push(Problem::new(
            Code::InvalidFrontmatter,
            e.line,
            format!("invalid frontmatter, kept as raw text: {}", e.message),
        ));
        raw_frontmatter = Some(raw);
    }
    let mut summary = markdown::summarize(body);
    if let Some(slot) = page_text {
        let plain_text = std::mem::take(&mut summary.plain_text);
        *slot = Some(indexed_text(
            frontmatter.clone(),
            raw_frontmatter,
            plain_text,
        ));
    }
    out.detail.parsed = true;
    out.detail.history = crate::ingest::aggregate::is_history(&summary.headings);
    out.detail.own_title = string_field(&frontmatter, "title").or(summary.first_h1);
    if kind == BundleKind::PlainFolder {
        // The links' lines count from the body; the file's lines count the frontmatter too.
        let body_start = (body.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        let above = text
            .get(..body_start)
            .map_or(0, |t| t.matches('\n').count()) as u32;
        for link in &mut summary.links {
            link.line = link.line.saturating_add(above);
        }
        out.detail.links = summary.links;
    }
    if !frontmatter.is_empty() {
        out.detail.frontmatter = serde_json::to_string(&frontmatter).unwrap_or_default();
    }
    out
}
