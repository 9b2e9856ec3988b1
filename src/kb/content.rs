//! A knowledge base's file contents: what a tool reads of a file (bounded by the read limit,
//! opened beneath the bundle root) and the text a search result's excerpt is made from (only
//! while it is what the index was built from).

use crate::error::{messages, ErrorCode, ToolError};
use crate::index::catalog::CatalogFile;
use crate::kb::KnowledgeBase;

impl KnowledgeBase {
    /// The text of a file, checked against the read limit; a path that resolves outside the bundle
    /// is not found.
    pub(crate) fn read_content(&self, file: &CatalogFile) -> Result<String, ToolError> {
        if let Some(content) = self.catalog.virtual_content(file) {
            return Ok(content);
        }
        self.read_bytes(file)
            .map(|bytes| self.without_excluded(file, lossy_text(bytes)))
    }

    /// The size of `file` as the tools serve it: a generated file of a bundle with exclusions
    /// is read (what it says of excluded files is not served, nor counted).
    pub(crate) fn served_size(&self, file: &CatalogFile) -> u64 {
        let generated = self.manifest.bundle_kind == crate::ingest::bundle::BundleKind::Focowiki
            && file.class != crate::ingest::bundle::paths::PathClass::Page
            && !file.is_virtual();
        if !generated || self.exclusions().is_none() || file.size > self.options.read_limit {
            return file.size;
        }
        self.read_content(file)
            .map_or(file.size, |content| content.len() as u64)
    }

    /// `content` of a bundle's generated `file` without what it says of the files the build
    /// left out (DECISIONS 26; [`crate::ingest::bundle::exclusions`]); a page's as it is.
    fn without_excluded(&self, file: &CatalogFile, content: String) -> String {
        let generated = self.manifest.bundle_kind == crate::ingest::bundle::BundleKind::Focowiki
            && file.class != crate::ingest::bundle::paths::PathClass::Page;
        match self.exclusions() {
            Some(rules) if generated => rules.filter(&file.path, file.class, content),
            _ => content,
        }
    }

    /// The text of a source file when it still is what the index was built from (same size and
    /// SHA-256), else `None`: an excerpt must come from the text that was searched, also when the
    /// bundle changed after the build (`--no-refresh`, a server without `--watch`).
    pub(crate) fn indexed_content(&self, file: &CatalogFile) -> Option<String> {
        if let Some(content) = self.catalog.virtual_content(file) {
            return Some(content);
        }
        let bytes = self.read_bytes(file).ok()?;
        file.is_indexed(&bytes).then(|| lossy_text(bytes))
    }

    /// The bytes of a file on disk, checked against the read limit.
    fn read_bytes(&self, file: &CatalogFile) -> Result<Vec<u8>, ToolError> {
        if file.size > self.options.read_limit {
            return Err(ToolError::new(
                ErrorCode::PayloadTooLarge,
                messages::PAYLOAD_TOO_LARGE,
            ));
        }
        let Some(relative) = &file.disk else {
            return Err(ToolError::not_found());
        };
        // Opened once, checked on what was opened (bundle::beneath): a directory swapped for a
        // link out of the bundle meanwhile leads nowhere. A published copy is read only through
        // the folder held open (never its name again, which a link may take).
        let opened = match &self.bundle_dir {
            Some(root) if self.is_published() || root.still_named(&self.bundle_root) => {
                root.open_file(relative)
            }
            _ if self.is_published() => return Err(ToolError::not_found()),
            _ => crate::ingest::bundle::beneath::open_under(&self.bundle_root, relative),
        };
        let handle = opened.map_err(|_| ToolError::not_found())?;
        let metadata = handle.metadata().map_err(|_| ToolError::not_found())?;
        if metadata.len() > self.options.read_limit {
            return Err(ToolError::new(
                ErrorCode::PayloadTooLarge,
                messages::PAYLOAD_TOO_LARGE,
            ));
        }
        // At most one byte past the limit: a file growing meanwhile is refused, not read on.
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        let read = std::io::Read::read_to_end(
            &mut std::io::Read::take(handle, self.options.read_limit + 1),
            &mut bytes,
        );
        read.map_err(|_| {
            ToolError::new(
                ErrorCode::DatabaseRepositoryUnavailable,
                messages::DATA_UNAVAILABLE,
            )
        })?;
        if bytes.len() as u64 > self.options.read_limit {
            return Err(ToolError::new(
                ErrorCode::PayloadTooLarge,
                messages::PAYLOAD_TOO_LARGE,
            ));
        }
        Ok(bytes)
    }
}

/// `bytes` as text, invalid UTF-8 replaced by U+FFFD (copied only when there is some).
fn lossy_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}
