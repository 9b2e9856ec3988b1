//! Unit tests of the search index.

use super::*;

/// The segments `meta.json` of the index in `dir` lists, and the segment ids of its
/// files on disk (each file is `<segment id>.<extension>`).
fn segments_listed_and_on_disk(dir: &Path) -> (Vec<String>, Vec<String>) {
    let index = Index::open_in_dir(dir).unwrap();
    let mut listed: Vec<String> = index
        .searchable_segment_ids()
        .unwrap()
        .iter()
        .map(|id| id.uuid_string())
        .collect();
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.') && name != "meta.json")
        .map(|name| name.split('.').next().unwrap().to_string())
        .collect();
    on_disk.sort();
    on_disk.dedup();
    (listed, on_disk)
}

/// A merge leaves no file of the merged segments behind: an update that deletes most pages
/// of one segment of two merges it away.
#[test]
fn merges_leave_no_files_of_the_merged_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("search");
    std::fs::create_dir(&dir).unwrap();
    let brk = crate::ingest::markdown::SECTION_BREAK;
    let pages: Vec<(String, PageText)> = (0..400)
        .map(|i| {
            let body = format!(
                "page {i} about alpha{}{brk}{}{brk}{}",
                " word".repeat(80),
                format!("beta {i} ").repeat(60),
                format!("gamma {i} ").repeat(60),
            );
            let text = PageText {
                metadata: String::new(),
                body,
            };
            (format!("pages/p{i}.md"), text)
        })
        .collect();
    let add = |writer: &Writer, pages: &[(String, PageText)]| {
        for (path, text) in pages {
            let page = IndexedPage {
                key: page_key(path),
                path,
                title: path,
                text,
            };
            writer.add_one(&page).unwrap();
        }
    };
    let check = |segments: usize| {
        let (listed, on_disk) = segments_listed_and_on_disk(&dir);
        assert_eq!(listed.len(), segments);
        assert_eq!(listed, on_disk);
    };
    // Two sessions, a segment each.
    let writer = Writer::create(&dir, 1).unwrap();
    add(&writer, &pages[..200]);
    writer.finish().unwrap();
    let writer = Writer::update(&dir, &[], 1).unwrap();
    add(&writer, &pages[200..]);
    writer.finish().unwrap();
    check(2);
    let (before, _) = segments_listed_and_on_disk(&dir);
    // Most of the first segment deleted (more than a fifth): it is merged (rewritten
    // without them), beside the second and the new one; the segment it replaced leaves no
    // file.
    let deleted: Vec<u64> = pages[..150].iter().map(|(p, _)| page_key(p)).collect();
    let writer = Writer::update(&dir, &deleted, 1).unwrap();
    add(&writer, &pages[..1]);
    writer.finish().unwrap();
    let (listed, on_disk) = segments_listed_and_on_disk(&dir);
    assert_eq!(listed, on_disk);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(
        before.iter().filter(|s| listed.contains(s)).count(),
        1,
        "{before:?} {listed:?}"
    );
    let (pages_index, _) = Part::open(&dir).unwrap();
    assert_eq!(pages_index.reader.searcher().num_docs(), 251);
}
