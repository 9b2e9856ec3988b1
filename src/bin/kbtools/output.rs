//! What a command prints on stdout: JSON (compact or indented) and text, a closed pipe ignored.

use std::io::Write;

use anyhow::Result;
use serde_json::Value;

/// Prints `value` as JSON, indented when `pretty`.
pub(crate) fn print_json(value: &Value, pretty: bool) -> Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        serde_json::to_string(value)?
    };
    print_text(text)
}

/// Prints `bytes` on stdout as they are (a page's Markdown, piped).
pub(crate) fn print_raw(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Prints `text` on stdout, ending with one newline (none added when it already ends with one,
/// so a file read as text prints byte for byte).
pub(crate) fn print_text(mut text: String) -> Result<()> {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`kbtools … | head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e.into()),
    }
}
