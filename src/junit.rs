//! JUnit XML as CI systems read it (the shape of `junit-10.xsd`): suites of test cases, each
//! passed, failed, or passed with output to show. The one writer `kbtools check` and
//! `kbtools eval` report through.

use std::fmt::Write as _;

use crate::text::xml_escape;

/// A test suite: its name and its cases.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}

/// One test case.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// The group a CI system files the case under (`kbtools.check`, `kbtools.eval.hybrid`).
    pub classname: String,
    pub outcome: Outcome,
}

/// How a test case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// Passed, with text to show beside it (findings below the failing severity).
    PassedWithOutput(String),
    /// Failed: a one-line message, the failure's type, and the details.
    Failed {
        message: String,
        kind: String,
        text: String,
    },
}

impl Suite {
    fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
            .count()
    }
}

/// The report named `name` of `suites`, every text escaped.
pub fn write(name: &str, suites: &[Suite]) -> String {
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"0\">",
        xml_escape(name)
    );
    for suite in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"0\">",
            xml_escape(&suite.name),
            suite.cases.len(),
            suite.failures()
        );
        for case in &suite.cases {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"0\"",
                xml_escape(&case.name),
                xml_escape(&case.classname)
            );
            match &case.outcome {
                Outcome::Passed => out.push_str("/>\n"),
                Outcome::PassedWithOutput(text) => {
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>{}</system-out>\n    </testcase>",
                        xml_escape(text)
                    );
                }
                Outcome::Failed {
                    message,
                    kind,
                    text,
                } => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                        xml_escape(message),
                        xml_escape(kind),
                        xml_escape(text)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_escapes_every_case() {
        let case = |name: &str, outcome| Case {
            name: name.into(),
            classname: "kbtools.test".into(),
            outcome,
        };
        let suites = [
            Suite {
                name: "a & b".into(),
                cases: vec![
                    case("ok", Outcome::Passed),
                    case("shown", Outcome::PassedWithOutput("<note>".into())),
                ],
            },
            Suite {
                name: "second".into(),
                cases: vec![case(
                    "x >= 0.5",
                    Outcome::Failed {
                        message: "measured 0.4".into(),
                        kind: "threshold".into(),
                        text: "top \"3\"".into(),
                    },
                )],
            },
        ];
        let xml = write("kbtools <test>", &suites);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kbtools &lt;test&gt;\" tests=\"3\" failures=\"1\""), "{xml}");
        assert!(xml.contains("<testsuite name=\"a &amp; b\" tests=\"2\" failures=\"0\""));
        assert!(xml.contains("<testsuite name=\"second\" tests=\"1\" failures=\"1\""));
        assert!(xml.contains("<testcase name=\"ok\" classname=\"kbtools.test\" time=\"0\"/>"));
        assert!(xml.contains("<system-out>&lt;note&gt;</system-out>"));
        assert!(xml.contains(
            "<testcase name=\"x &gt;= 0.5\" classname=\"kbtools.test\" time=\"0\">\n      <failure message=\"measured 0.4\" type=\"threshold\">top &quot;3&quot;</failure>\n    </testcase>"
        ), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert!(xml.ends_with("  </testsuite>\n</testsuites>\n"));
    }
}
