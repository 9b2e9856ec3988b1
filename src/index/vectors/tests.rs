//! Unit tests of `vectors.rs`: the file format, scripts, and how a build lays out windows.

use super::*;

/// Two pages, three windows of two dimensions (the vector lanes' tests read it too).
pub(crate) fn sample() -> Vectors {
    Vectors {
        dim: 2,
        pages: vec![
            PageVectors {
                position: 3,
                first: 0,
                count: 2,
                key: [1; 16],
                script: Script::Cjk,
            },
            PageVectors {
                position: 7,
                first: 2,
                count: 1,
                key: [2; 16],
                script: Script::Other,
            },
        ],
        sections: vec![0, 1, 0],
        section_keys: vec![10, 11, 12],
        data: vec![1.0, 0.0, 0.6, 0.8, 0.0, 1.0],
    }
}

fn page(position: u32) -> SourcePage {
    SourcePage {
        position,
        key: [position as u8; 16],
        disk: format!("p{position}.md"),
        path: format!("pages/p{position}.md"),
        title: "T".into(),
    }
}

/// Each window of a layout, as "section:where index".
fn described(layouts: &HashMap<u32, Layout>, position: u32) -> Vec<String> {
    layouts[&position]
        .1
        .iter()
        .map(|(section, _, w)| match w {
            Window::Fresh(i) => format!("{section}:fresh {i}"),
            Window::Kept(i) => format!("{section}:kept {i}"),
            Window::Cached(i) => format!("{section}:cached {i}"),
        })
        .collect()
}

/// A window repeated within a page and across pages is embedded once; each place that
/// holds it points at that one vector, and each is a record of the embedding cache.
#[test]
fn identical_windows_are_embedded_once() {
    let pages = [page(0), page(1)];
    let changed: Vec<&SourcePage> = pages.iter().collect();
    let (a, b, c) = (vec![1, 2, 3], vec![4, 5], vec![6]);
    let read = vec![
        Some((
            Script::Other,
            vec![
                (0, 10, Found::New(vec![a.clone(), b.clone()])),
                (1, 11, Found::New(vec![a.clone()])),
            ],
        )),
        Some((
            Script::Other,
            vec![
                (0, 12, Found::New(vec![b.clone(), c.clone()])),
                (1, 13, Found::Previous(vec![4])),
            ],
        )),
    ];
    let mut work = VectorWork::default();
    let (to_embed, layouts) = lay_out(&changed, read, &mut work);
    assert_eq!(to_embed.windows, vec![a, b, c]);
    assert_eq!(
        to_embed.owners,
        vec![
            vec![(10, 0, 2), (11, 0, 1)],
            vec![(10, 1, 2), (12, 0, 2)],
            vec![(12, 1, 2)]
        ]
    );
    assert_eq!(
        described(&layouts, 0),
        ["0:fresh 0", "0:fresh 1", "1:fresh 0"]
    );
    assert_eq!(
        described(&layouts, 1),
        ["0:fresh 1", "0:fresh 2", "1:kept 4"]
    );
    assert_eq!(work.pages_read, 2);
}

/// A deferred build: a page whose every section is in the cache gets its vectors; a page
/// with a section nowhere is left without, counted.
#[test]
fn a_page_with_a_pending_section_is_left_without_vectors() {
    let pages = [page(0), page(1)];
    let changed: Vec<&SourcePage> = pages.iter().collect();
    let read = vec![
        Some((Script::Other, vec![(0, 10, Found::Cached(vec![0, 1]))])),
        Some((
            Script::Other,
            vec![(0, 11, Found::Cached(vec![2])), (1, 12, Found::Pending)],
        )),
    ];
    let mut work = VectorWork::default();
    let (to_embed, layouts) = lay_out(&changed, read, &mut work);
    assert!(to_embed.windows.is_empty());
    assert_eq!(described(&layouts, 0), ["0:cached 0", "0:cached 1"]);
    assert!(!layouts.contains_key(&1));
    assert_eq!(
        (work.pages_read, work.pages_without, work.windows_cached),
        (1, 1, 2)
    );
}

#[test]
fn encode_then_decode_is_the_same() {
    let v = sample();
    let back = Vectors::decode(&v.encode()).expect("decodes");
    assert_eq!(back.pages, v.pages);
    assert_eq!(back.sections, v.sections);
    assert_eq!(back.section_keys, v.section_keys);
    assert_eq!(back.data, v.data);
    let mut cut = v.encode();
    cut.pop();
    assert!(Vectors::decode(&cut).is_none());
    assert_eq!(back.script(3), Script::Cjk);
    assert_eq!(back.script(7), Script::Other);
    assert_eq!(back.script(5), Script::Unknown);
}

#[test]
fn the_format_before_scripts_is_read() {
    let v = sample();
    let mut old = MAGIC_1.to_vec();
    for n in [v.dim, v.windows(), v.pages.len()] {
        old.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for p in &v.pages {
        for n in [p.position, p.first, p.count] {
            old.extend_from_slice(&n.to_le_bytes());
        }
        old.extend_from_slice(&p.key);
    }
    for (s, k) in v.sections.iter().zip(&v.section_keys) {
        old.extend_from_slice(&s.to_le_bytes());
        old.extend_from_slice(&k.to_le_bytes());
    }
    for x in &v.data {
        old.extend_from_slice(&x.to_le_bytes());
    }
    let back = Vectors::decode(&old).expect("decodes");
    assert_eq!(back.data, v.data);
    assert!(back.pages.iter().all(|p| p.script == Script::Unknown));
}

#[test]
fn a_page_is_cjk_when_its_cjk_characters_outnumber_its_words() {
    assert_eq!(Script::of("组件的属性 props 用法"), Script::Cjk);
    assert_eq!(
        Script::of("Use `v-model` on a component (组件)."),
        Script::Other
    );
    assert_eq!(Script::of("1234 --- !!"), Script::Other);
}
