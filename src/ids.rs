//! Identifiers (rules#knowledge-base-id, rules#file-ids): the knowledge-base id, file ids of
//! source-backed pages and of generated files, directory ids, and the host-relative
//! `readActions` templates (rules#read-actions).

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text::encode_uri_component;

/// The fixed namespace of every name-based UUID kbtools makes (uuid v5 of the URL
/// `kbtools:knowledge-base` in the URL namespace), so ids are the same on every machine.
fn namespace() -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, b"kbtools:knowledge-base")
}

/// `knowledge-base-<uuid v5 of the knowledge-base name>`.
pub fn knowledge_base_id(name: &str) -> String {
    format!(
        "knowledge-base-{}",
        Uuid::new_v5(&namespace(), name.as_bytes())
    )
}

/// `source-file-<uuid v5 of "<kbId>:<path>">` for a source-backed page.
pub fn source_file_id(kb_id: &str, path: &str) -> String {
    let name = format!("{kb_id}:{path}");
    format!(
        "source-file-{}",
        Uuid::new_v5(&namespace(), name.as_bytes())
    )
}

fn md5_hex(kb_id: &str, path: &str) -> String {
    let mut hasher = Md5::new();
    hasher.update(kb_id.as_bytes());
    hasher.update(b":");
    hasher.update(path.as_bytes());
    hex::encode(hasher.finalize())
}

/// `generated-<md5 hex of "<kbId>:<path>">` for every file that is not a source-backed page.
pub(crate) fn generated_file_id(kb_id: &str, path: &str) -> String {
    format!("generated-{}", md5_hex(kb_id, path))
}

/// `generated-directory-<md5 hex of "<kbId>:<path>">` for a directory tree entry.
pub(crate) fn generated_directory_id(kb_id: &str, path: &str) -> String {
    format!("generated-directory-{}", md5_hex(kb_id, path))
}

/// The six `readActions` links of a file (docs/rules.md#read-actions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadActions {
    pub file_detail_by_id: Option<String>,
    pub file_content_by_id: Option<String>,
    pub file_content_by_path: String,
    pub related_files_by_id: Option<String>,
    pub graph_expansion_by_file_id: Option<String>,
    /// Always `null` offline: kbtools serves no source-file status endpoint (rules#read-actions).
    pub source_file_status_by_id: Option<String>,
}

impl ReadActions {
    /// The links of a file; `related` and `graph` links only for source-backed pages.
    pub(crate) fn for_file(kb_id: &str, file_id: &str, path: &str, source_backed: bool) -> Self {
        let base = format!("/openapi/v2/knowledge-bases/{kb_id}");
        ReadActions {
            file_detail_by_id: Some(format!("{base}/files/{file_id}")),
            file_content_by_id: Some(format!("{base}/files/{file_id}/content")),
            file_content_by_path: format!(
                "{base}/files/content?path={}",
                encode_uri_component(path)
            ),
            related_files_by_id: source_backed.then(|| format!("{base}/files/{file_id}/related")),
            graph_expansion_by_file_id: source_backed
                .then(|| format!("{base}/graph/expand?fileId={file_id}")),
            source_file_status_by_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_shaped() {
        let kb = knowledge_base_id("Focowiki Docs");
        assert!(kb.starts_with("knowledge-base-"));
        assert_eq!(kb, knowledge_base_id("Focowiki Docs"));
        assert_ne!(kb, knowledge_base_id("Other"));
        let generated = generated_file_id(&kb, "index.md");
        assert_eq!(generated.len(), "generated-".len() + 32);
        assert!(source_file_id(&kb, "pages/a.md").starts_with("source-file-"));
    }

    #[test]
    fn read_actions_encode_the_path_only() {
        let actions = ReadActions::for_file("kb", "generated-x", "pages/a b.md", false);
        assert_eq!(
            actions.file_content_by_path,
            "/openapi/v2/knowledge-bases/kb/files/content?path=pages%2Fa%20b.md"
        );
        assert_eq!(actions.related_files_by_id, None);
    }
}
