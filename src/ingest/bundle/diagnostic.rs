//! What ingest (and `kbtools check`) reports of a bundle: findings with a stable code, a
//! severity, a place and a one-line fix hint. The codes are a public interface (CI jobs allow
//! them by name, `--allow KB013`): a code is never reused for another problem.

use serde::{Deserialize, Serialize};

/// How much a finding matters: an error breaks what a reader of the bundle gets (a page that
/// cannot be read, a record that lies about its page), a warning is likely a mistake, a note is
/// worth knowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($($(#[$attr:meta])* $variant:ident = $code:literal, $severity:ident, $title:literal, $hint:literal;)*) => {
        /// A kind of problem, by its stable code (`KB0xx`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub enum Code {
            $($(#[$attr])* $variant,)*
        }

        impl Code {
            /// Every code, in code order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// `KB0xx`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }

            /// What the code means, in a few words.
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$variant => $title,)*
                }
            }

            /// How to fix it, in one line.
            pub fn hint(self) -> &'static str {
                match self {
                    $(Code::$variant => $hint,)*
                }
            }
        }
    };
}

codes! {
    MissingNavigation = "KB001", Error, "required navigation file missing",
        "export the knowledge base again: the generator always writes index.md, log.md, pages/index.md, _index/index.md, _index/catalog.json and _graph/index.md";
    FormatVersion = "KB002", Error, "unsupported bundle formatVersion",
        "kbtools reads formatVersion 2 (Focowiki since 2026-08-18); export the knowledge base again";
    InvalidJson = "KB003", Error, "JSON file does not parse",
        "the generator writes one JSON document per file; restore the file from the export";
    RecordShape = "KB004", Error, "record misses a field or has one of the wrong type",
        "restore the record from the export (bundle-format: document packets, routers, per-file graphs)";
    Unreadable = "KB005", Error, "file cannot be read",
        "check the file's permissions and that it still exists";
    InvalidUtf8 = "KB006", Warning, "text is not valid UTF-8",
        "save the file as UTF-8 (invalid bytes are read as U+FFFD)";
    TooLarge = "KB007", Warning, "file larger than kbtools reads",
        "split the page: only its first 16 MiB are read, indexed and hashed";
    ChangedWhileRead = "KB008", Note, "file changed while it was read",
        "run again once the export has finished writing";
    NotServed = "KB009", Warning, "file is not served",
        "rename or move the file to a canonical bundle path (NFC, no `..`, a regular file inside the bundle)";
    MissingPage = "KB010", Error, "document record names a page that does not exist",
        "restore the page, or export again so that the records match pages/";
    ChecksumMismatch = "KB011", Error, "page does not match its record's checksumSha256",
        "the page changed after the export: export again (a bundle crawled through the Developer OpenAPI holds raw sources and never matches)";
    ByteCountMismatch = "KB012", Error, "page size does not match its record's byteCount",
        "the page changed after the export: export again";
    UnrecordedPage = "KB013", Warning, "page has no document record",
        "export again, or remove the page: without a record it has no generated metadata";
    MissingRouter = "KB014", Error, "document router missing or routing to a missing packet",
        "restore _index/pages/** from the export";
    UnroutedPacket = "KB015", Warning, "document packet not reached from the routers",
        "restore _index/pages/**/index.json from the export, or remove the stray packet";
    DanglingRelation = "KB020", Error, "relationship endpoint is not a page",
        "restore the page the relationship names, or export again so that _graph matches pages/";
    OrphanGraph = "KB021", Error, "per-file graph of a page that does not exist",
        "remove the per-file graph, or restore its page";
    MissingGraph = "KB022", Error, "graphPath names a per-file graph that does not exist",
        "restore _graph/by-file/** from the export";
    BrokenLink = "KB030", Warning, "page links to a file that does not exist",
        "fix the link's path (relative to the page, percent-encoded per segment) or restore the page; the generator keeps a source's broken links as written";
    BrokenNavigationLink = "KB031", Error, "navigation links to a file that does not exist",
        "export again: generated navigation must name existing files";
    UnresolvedLink = "KB032", Warning, "link does not resolve to a page of the folder",
        "fix the link's path, or leave it if it names a route of the site rather than a file";
    InvalidFrontmatter = "KB040", Error, "frontmatter does not parse",
        "fix the YAML (or TOML) between the fences at the top of the page";
    DuplicateTitle = "KB041", Warning, "pages share a title",
        "give the pages distinct titles so that search results and links tell them apart";
    Unreachable = "KB042", Warning, "page not reachable from index.md",
        "export again: every page is listed in its directory's navigation, reachable from index.md";
    SharedKey = "KB043", Note, "frontmatter key shared by several pages",
        "give each page a key of its own if links are to find it by that key";
    IndexCollision = "KB090", Warning, "page's index key collides with another's",
        "rename one of the pages (their paths differ only in a way the index does not keep)";
    /// Diagnostics of indexes built before codes existed read as this.
    #[default]
    Other = "KB099", Warning, "other problem",
        "read the message";
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        // A code this build does not know (a newer index) reads as `Other`, not as an error.
        Ok(Code::parse(&text).unwrap_or(Code::Other))
    }
}

impl Code {
    /// The code named `text` (`KB011`, any case).
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.as_str().eq_ignore_ascii_case(text.trim()))
    }

    /// Whether a check of a knowledge base of `kind` can report this code: a plain folder has
    /// no records, routers, graph files or navigation; a bundle's links and keys are checked
    /// against its records instead.
    pub fn applies_to(self, kind: super::BundleKind) -> bool {
        match kind {
            super::BundleKind::PlainFolder => matches!(
                self,
                Code::Unreadable
                    | Code::InvalidUtf8
                    | Code::TooLarge
                    | Code::ChangedWhileRead
                    | Code::NotServed
                    | Code::UnresolvedLink
                    | Code::InvalidFrontmatter
                    | Code::SharedKey
                    | Code::IndexCollision
                    | Code::Other
            ),
            super::BundleKind::Focowiki => !matches!(self, Code::UnresolvedLink | Code::SharedKey),
        }
    }
}

/// A problem of one file, before the file's path is attached (what reading a file finds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub code: Code,
    pub line: Option<usize>,
    pub message: String,
}

impl Problem {
    pub fn new(code: Code, line: Option<usize>, message: impl Into<String>) -> Self {
        Problem {
            code,
            line,
            message: message.into(),
        }
    }
}

/// A problem found in a bundle: which file, where, what, and its code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Diagnostics of indexes built before codes existed read as `KB099`.
    #[serde(default)]
    pub code: Code,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub column: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(code: Code, path: String, line: Option<usize>, message: String) -> Self {
        Diagnostic {
            code,
            path,
            line,
            column: None,
            message,
        }
    }

    pub fn at(mut self, column: Option<usize>) -> Self {
        self.column = column;
        self
    }

    pub fn severity(&self) -> Severity {
        self.code.severity()
    }
}

/// `path:line:column: severity[code]: message`, with control characters escaped (a file name
/// is anyone's text, and this is what a terminal shows).
impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A diagnostic of no file (a pattern of `--exclude`) starts with its severity.
        if !self.path.is_empty() {
            write!(f, "{}", crate::text::terminal_safe(&self.path))?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            write!(f, ": ")?;
        }
        write!(
            f,
            "{}[{}]: {}",
            self.severity().as_str(),
            self.code.as_str(),
            crate::text::terminal_safe(&self.message)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_ordered_and_parse_back() {
        let names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "codes must be unique and listed in order");
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(*code));
            assert_eq!(Code::parse(&code.as_str().to_lowercase()), Some(*code));
            assert!(!code.hint().is_empty() && !code.title().is_empty());
        }
        assert_eq!(Code::parse("KB999"), None);
    }

    #[test]
    fn a_diagnostic_without_a_code_reads_as_other() {
        let old: Diagnostic = serde_json::from_str(r#"{"path":"a.md","message":"m"}"#).unwrap();
        assert_eq!(old.code, Code::Other);
        let new: Diagnostic =
            serde_json::from_str(r#"{"code":"KB011","path":"a.md","line":3,"message":"m"}"#)
                .unwrap();
        assert_eq!(new.code, Code::ChecksumMismatch);
        assert_eq!(
            new.to_string(),
            "a.md:3: error[KB011]: m",
            "the display is path:line: severity[code]: message"
        );
        let of_no_file: Diagnostic =
            serde_json::from_str(r#"{"code":"KB099","path":"","message":"m"}"#).unwrap();
        assert_eq!(of_no_file.to_string(), "warning[KB099]: m");
    }
}
