//! Unit tests of the ingest cache.

use super::*;

fn problems(i: usize) -> Vec<Problem> {
    if i.is_multiple_of(5) {
        vec![Problem::new(
            Code::InvalidFrontmatter,
            Some(2),
            format!("bad {i}"),
        )]
    } else {
        Vec::new()
    }
}

fn entry<'a>(i: usize, disk: &'a str, sha: &'a str, problems: &'a [Problem]) -> Entry<'a> {
    Entry {
        disk,
        logical: (i % 7 == 3).then_some("pages/other.md"),
        class: CLASSES[i % CLASSES.len()],
        size: i as u64,
        mtime_ns: -7 * i as i128,
        sha256: Sha::of(sha),
        parsed: i.is_multiple_of(2),
        problems,
        position: i as u32 * 3,
        record_titled: i.is_multiple_of(3),
        resource_revision: (!i.is_multiple_of(4)).then_some(i as u64),
        indexed: (!i.is_multiple_of(6)).then_some((i as u64 * 11, [i as u8; 16])),
    }
}

fn detail(i: usize) -> Detail {
    Detail {
        own_title: Some(format!("Page {i}")),
        frontmatter: String::new(),
        parsed: true,
        links: Vec::new(),
        record: None,
        history: i % 7 == 3,
    }
}

#[test]
fn sha_digests_and_texts() {
    let hex = "00ff10a9".repeat(8);
    assert!(matches!(Sha::of(&hex), Sha::Digest(_)));
    assert_eq!(Sha::of(&hex).text(), hex);
    for text in ["unreadable", "", &hex.to_uppercase(), &hex[..62]] {
        assert_eq!(Sha::of(text), Sha::Text(text));
        assert_eq!(Sha::of(text).text(), text);
    }
}

#[test]
fn reads_back_what_it_wrote_and_finds_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.bin");
    let disks: Vec<String> = (0..3000).map(|i| format!("pages/p{i:05}é.md")).collect();
    let shas: Vec<String> = (0..3000)
        .map(|i: usize| {
            if i.is_multiple_of(9) {
                "unreadable".to_string()
            } else {
                format!("{i:064x}")
            }
        })
        .collect();
    let problems: Vec<_> = (0..3000).map(problems).collect();
    let entries: Vec<Entry<'_>> = (0..3000)
        .map(|i| entry(i, &disks[i], &shas[i], &problems[i]))
        .collect();
    let details: Vec<Detail> = (0..3000).map(detail).collect();
    let ranges = chunk_ranges(entries.iter().map(|e| e.disk));
    assert!(ranges.len() > 3, "{} chunks", ranges.len());
    let mut writer = Writer::create(&path).unwrap();
    for range in &ranges {
        let chunk: Vec<&Detail> = details[range.clone()].iter().collect();
        writer.chunk(range.len(), &encode_chunk(&chunk)).unwrap();
    }
    let derived = Derived {
        key: "k".into(),
        diagnostics: vec![(Code::UnrecordedPage, "a".into(), None, Some(4), "m".into())],
    };
    let finish = |writer: Writer| {
        writer
            .finish(
                BundleKind::Focowiki,
                42,
                || entries.iter().copied(),
                Some(derived.clone()),
            )
            .unwrap()
    };
    let crc = finish(writer);
    assert_eq!(crc, crc32fast::hash(&std::fs::read(&path).unwrap()));

    // A cache made of this one's chunks, copied (every other run) and encoded again, has
    // the same bytes, and its checksum counts the copied ones too.
    let cache = Cache::open(&path).unwrap();
    let copy = dir.path().join("copy.bin");
    let mut writer = Writer::create(&copy).unwrap();
    let mut c = 0;
    while c < ranges.len() {
        if c % 3 == 1 {
            let chunk: Vec<&Detail> = details[ranges[c].clone()].iter().collect();
            writer
                .chunk(ranges[c].len(), &encode_chunk(&chunk))
                .unwrap();
            c += 1;
        } else {
            let end = (c + 2).min(ranges.len());
            writer.copy_chunks(&cache, c..end).unwrap();
            c = end;
        }
    }
    let crc = finish(writer);
    let copied = std::fs::read(&copy).unwrap();
    assert_eq!(crc, crc32fast::hash(&copied));
    assert_eq!(copied, std::fs::read(&path).unwrap());
    drop(cache);

    let cache = Cache::open(&path).unwrap();
    assert_eq!(cache.entries().collect::<Vec<_>>(), entries);
    assert_eq!(cache.made_ns(), 42);
    assert_eq!(cache.kind(), BundleKind::Focowiki);
    assert_eq!(cache.derived(), Some(&derived));
    assert_eq!(cache.chunk_count(), ranges.len());
    for (c, range) in ranges.iter().enumerate() {
        assert_eq!(cache.chunk_range(c), range.clone());
        assert_eq!(cache.chunk_of(range.start), c);
        assert_eq!(cache.chunk_of(range.end - 1), c);
        assert_eq!(cache.chunk(c).unwrap(), details[range.clone()]);
    }
    drop(cache);

    // Damage anywhere is refused, never a panic: when opened, or when a chunk is read.
    let bytes = std::fs::read(&path).unwrap();
    for at in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x21;
        std::fs::write(&path, &damaged).unwrap();
        if let Ok(cache) = Cache::open(&path) {
            let bad = (0..cache.chunk_count()).filter(|&c| cache.chunk(c).is_err());
            assert_eq!(bad.count(), 1, "damage at {at} found");
        }
    }
    for len in [0, 8, 20, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        assert!(Cache::open(&path).is_err());
    }
}

#[test]
fn an_empty_cache_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.bin");
    let writer = Writer::create(&path).unwrap();
    writer
        .finish(BundleKind::PlainFolder, 1, std::iter::empty, None)
        .unwrap();
    let cache = Cache::open(&path).unwrap();
    assert_eq!((cache.len(), cache.chunk_count()), (0, 0));
    assert_eq!(cache.derived(), None);
}

#[test]
fn a_file_added_changes_one_chunk() {
    let paths: Vec<String> = (0..5000).map(|i| format!("pages/p{i:05}.md")).collect();
    let before = chunk_ranges(paths.iter().map(String::as_str));
    let mut with_one_more = paths.clone();
    with_one_more.insert(2500, "pages/p02500a.md".into());
    let after = chunk_ranges(with_one_more.iter().map(String::as_str));
    let firsts = |list: &[String], ranges: &[Range<usize>]| -> Vec<String> {
        ranges.iter().map(|r| list[r.start].clone()).collect()
    };
    let (a, b) = (firsts(&paths, &before), firsts(&with_one_more, &after));
    let common = a.iter().filter(|p| b.contains(p)).count();
    assert!(common + 1 >= a.len(), "{common} of {} chunks kept", a.len());
}
