//! The syntax a question's text carries beyond its words: double-quoted phrases. The query's
//! parsing reads it from here (its normalization is [`super::normalize`]'s).

/// The double-quoted phrases of a query (`"…"` or `“…”`), without the quotes; an unclosed
/// quote quotes nothing.
pub(crate) fn quoted_phrases(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for c in query.chars() {
        match (c, current.as_mut()) {
            ('"' | '“' | '”', None) => current = Some(String::new()),
            ('"' | '“' | '”', Some(text)) => {
                let phrase = text.trim().to_string();
                if !phrase.is_empty() {
                    out.push(phrase);
                }
                current = None;
            }
            (c, Some(text)) => text.push(c),
            (_, None) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_phrases_are_found() {
        assert_eq!(
            quoted_phrases(r#"a "renewal notice" b “续费通知”"#),
            vec!["renewal notice", "续费通知"]
        );
        assert!(quoted_phrases(r#"unclosed "quote"#).is_empty());
    }
}
