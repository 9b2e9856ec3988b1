//! `kbtools check`'s report in the forms people and CI systems read: text, JSON, JUnit XML,
//! GitHub Actions workflow commands and SARIF 2.1.0.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use super::Report;
use crate::ingest::bundle::{Code, Diagnostic, Severity};
use crate::text::terminal_safe;

crate::wire::wire_enum! {
    /// A report's form (`--format`).
    pub enum Format {
        Text = "text",
        Json = "json",
        Junit = "junit",
        Github = "github",
        Sarif = "sarif",
    }
}

/// What a report is written about: the folder as the user named it (findings' files are shown
/// under it, so that a CI system finds them from the repository's root) and the severity at
/// which the check fails.
pub struct Context<'a> {
    pub root: &'a Path,
    pub threshold: Severity,
}

impl Context<'_> {
    /// A finding's file as shown: under the folder as named.
    fn file(&self, d: &Diagnostic) -> String {
        let root = self.root.to_string_lossy();
        let root = root.trim_end_matches('/');
        if root.is_empty() || root == "." {
            d.path.clone()
        } else {
            format!("{root}/{}", d.path)
        }
    }
}

/// The report in `format`.
pub fn write(report: &Report, format: Format, cx: &Context<'_>) -> String {
    match format {
        Format::Text => text(report, cx),
        Format::Json => {
            let mut out = serde_json::to_string_pretty(&json_value(report, cx)).unwrap_or_default();
            out.push('\n');
            out
        }
        Format::Junit => junit(report, cx),
        Format::Github => github(report, cx),
        Format::Sarif => {
            let mut out = serde_json::to_string_pretty(&sarif(report, cx)).unwrap_or_default();
            out.push('\n');
            out
        }
    }
}

fn place(d: &Diagnostic) -> String {
    match (d.line, d.column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn summary(report: &Report, cx: &Context<'_>) -> String {
    let (errors, warnings, notes) = report.counts();
    let mut out = format!(
        "{}, {}, {} in {} ({})",
        plural(errors, "error"),
        plural(warnings, "warning"),
        plural(notes, "note"),
        plural(report.files, "file"),
        plural(report.pages, "page"),
    );
    if report.allowed > 0 {
        let _ = write!(out, "; {} allowed", report.allowed);
    }
    let verdict = if report.fails(cx.threshold) {
        "failed"
    } else {
        "passed"
    };
    let _ = write!(
        out,
        "; {verdict} (fails at {}{})",
        cx.threshold.as_str(),
        if cx.threshold == Severity::Error {
            ""
        } else {
            " and above"
        }
    );
    out
}

/// `file:line:column: severity[KB0xx]: message`, the fix hint under the first finding of each
/// code, and a summary line.
fn text(report: &Report, cx: &Context<'_>) -> String {
    let mut out = String::new();
    let mut hinted = std::collections::HashSet::new();
    for d in &report.findings {
        let _ = writeln!(
            out,
            "{}{}: {}[{}]: {}",
            terminal_safe(&cx.file(d)),
            place(d),
            d.severity().as_str(),
            d.code.as_str(),
            terminal_safe(&d.message)
        );
        if hinted.insert(d.code) {
            let _ = writeln!(out, "  hint: {}", d.code.hint());
        }
    }
    let _ = writeln!(out, "kbtools check: {}", summary(report, cx));
    out
}

fn json_value(report: &Report, cx: &Context<'_>) -> Value {
    let (errors, warnings, notes) = report.counts();
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|d| {
            json!({
                "code": d.code.as_str(),
                "severity": d.severity().as_str(),
                "path": d.path,
                "file": cx.file(d),
                "line": d.line,
                "column": d.column,
                "message": d.message,
                "title": d.code.title(),
                "hint": d.code.hint(),
            })
        })
        .collect();
    json!({
        "bundle": cx.root.to_string_lossy(),
        "kind": report.kind,
        "files": report.files,
        "pages": report.pages,
        "failsAt": cx.threshold.as_str(),
        "passed": !report.fails(cx.threshold),
        "counts": {"error": errors, "warning": warnings, "note": notes, "allowed": report.allowed},
        "findings": findings,
    })
}

/// One test case per code (a stable list, so that a CI dashboard follows each rule from run to
/// run): failing with its findings at or above the threshold, passing otherwise (findings below
/// it in the case's output).
/// The codes a report lists (a JUnit case, a SARIF rule each): those that apply to what was
/// checked, and any other it found.
fn listed_codes(report: &Report) -> Vec<Code> {
    Code::ALL
        .iter()
        .copied()
        .filter(|code| {
            code.applies_to(report.kind) || report.findings.iter().any(|d| d.code == *code)
        })
        .collect()
}

/// A test case per code that applies: failed when its findings reach the failing severity,
/// else passed (with the findings as output when there are any).
fn junit(report: &Report, cx: &Context<'_>) -> String {
    use crate::junit::{Case, Outcome, Suite};
    let cases = listed_codes(report)
        .into_iter()
        .map(|code| {
            let found: Vec<&Diagnostic> =
                report.findings.iter().filter(|d| d.code == code).collect();
            let lines: String = found
                .iter()
                .map(|d| format!("{}{}: {}\n", cx.file(d), place(d), d.message))
                .collect();
            let outcome = if found.is_empty() {
                Outcome::Passed
            } else if code.severity() >= cx.threshold {
                Outcome::Failed {
                    message: format!(
                        "{} {}",
                        plural(found.len(), code.severity().as_str()),
                        code.as_str()
                    ),
                    kind: code.as_str().to_string(),
                    text: format!("{lines}hint: {}", code.hint()),
                }
            } else {
                Outcome::PassedWithOutput(lines)
            };
            Case {
                name: format!("{} {}", code.as_str(), code.title()),
                classname: "kbtools.check".into(),
                outcome,
            }
        })
        .collect();
    let name = format!("kbtools check {}", cx.root.to_string_lossy());
    let suite = Suite {
        name: name.clone(),
        cases,
    };
    crate::junit::write(&name, &[suite])
}

/// GitHub Actions' escaping of a workflow command's message.
fn github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// …and of a property's value.
fn github_property(text: &str) -> String {
    github_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=…,line=…,col=…,title=…::message`, one per finding (annotations on the pull
/// request), then the summary as a plain line.
fn github(report: &Report, cx: &Context<'_>) -> String {
    let mut out = String::new();
    for d in &report.findings {
        let command = match d.severity() {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        // A CI log is shown on terminals too: control characters escaped before GitHub's own
        // escaping.
        let mut properties = format!("file={}", github_property(&terminal_safe(&cx.file(d))));
        if let Some(line) = d.line {
            let _ = write!(properties, ",line={line}");
            if let Some(column) = d.column {
                let _ = write!(properties, ",col={column}");
            }
        }
        let _ = write!(
            properties,
            ",title={}",
            github_property(&format!("{} {}", d.code.as_str(), d.code.title()))
        );
        let _ = writeln!(
            out,
            "::{command} {properties}::{}",
            github_data(&format!(
                "{} (hint: {})",
                terminal_safe(&d.message),
                d.code.hint()
            ))
        );
    }
    let _ = writeln!(out, "kbtools check: {}", summary(report, cx));
    out
}

/// A relative path as a URI reference (RFC 3986): each segment percent-encoded.
fn uri_reference(path: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let encoded: Vec<String> = path
        .split('/')
        .map(|s| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string())
        .collect();
    if path.starts_with('/') {
        format!("file://{}", encoded.join("/"))
    } else {
        encoded.join("/")
    }
}

/// SARIF 2.1.0: one run of the tool `kbtools`, a rule per code, a result per finding (SARIF's
/// levels are our severities' names).
fn sarif(report: &Report, cx: &Context<'_>) -> Value {
    let codes = listed_codes(report);
    let rules: Vec<Value> = codes
        .iter()
        .map(|code| {
            json!({
                "id": code.as_str(),
                "shortDescription": {"text": code.title()},
                "help": {"text": code.hint()},
                "defaultConfiguration": {"level": code.severity().as_str()},
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|d| {
            let mut location = json!({
                "physicalLocation": {
                    "artifactLocation": {"uri": uri_reference(&cx.file(d))},
                }
            });
            if let Some(line) = d.line {
                let mut region = json!({"startLine": line});
                if let Some(column) = d.column {
                    region["startColumn"] = json!(column);
                }
                location["physicalLocation"]["region"] = region;
            }
            json!({
                "ruleId": d.code.as_str(),
                "ruleIndex": codes.iter().position(|c| *c == d.code).unwrap_or(0),
                "level": d.severity().as_str(),
                "message": {"text": d.message},
                "locations": [location],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "kbtools",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_commands_escape_their_data_and_properties() {
        assert_eq!(github_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(github_property("a:b,c"), "a%3Ab%2Cc");
    }

    #[test]
    fn uris_encode_each_segment() {
        assert_eq!(
            uri_reference("pages/指南/a b.md"),
            "pages/%E6%8C%87%E5%8D%97/a%20b.md"
        );
        assert_eq!(uri_reference("/tmp/x.md"), "file:///tmp/x.md");
    }
}
