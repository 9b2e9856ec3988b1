//! `_index/terms/**`: the term catalog, bucket routers and term routes.

use super::*;

#[derive(Serialize)]
pub(super) struct Posting<'a> {
    pub(super) path: &'a str,
    pub(super) fields: Vec<&'static str>,
}

#[derive(Serialize)]
pub(super) struct TermRecord<'a> {
    pub(super) term: &'a str,
    pub(super) postings: &'a [Posting<'a>],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TermBucketRouter {
    pub(super) format_version: u8,
    pub(super) title: String,
    pub(super) bucket: &'static str,
    pub(super) routes: Vec<TermRoute>,
}

#[derive(Serialize)]
pub(super) struct BucketRef {
    pub(super) bucket: &'static str,
    pub(super) path: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TermNormalization {
    pub(super) unicode_normalization: &'static str,
    pub(super) case_folding: &'static str,
    pub(super) tokenization: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TermCatalog {
    pub(super) format_version: u8,
    pub(super) title: &'static str,
    pub(super) normalization: TermNormalization,
    pub(super) buckets: Vec<BucketRef>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TermRoute {
    pub(super) path: String,
    pub(super) first_term: String,
    pub(super) last_term: String,
    pub(super) record_count: usize,
}

/// The bucket of a term: the class of its first character.
pub(super) fn bucket_of(term: &str) -> &'static str {
    match term.chars().next() {
        Some(c) if c.is_ascii_digit() => "number",
        Some(c) if c.is_ascii_alphabetic() => "latin",
        Some(c) if crate::text::is_han(c) => "han",
        _ => "other",
    }
}

/// The records of `term` with its `postings`: one, or several when they alone pass `budget`
/// bytes (halved until a record fits, or holds one posting).
fn term_records(term: &str, postings: &[Posting<'_>], budget: usize) -> Vec<(String, String)> {
    let mut records = Vec::new();
    let mut start = 0;
    while start < postings.len() {
        let mut end = postings.len();
        loop {
            let record = serde_json::to_string(&TermRecord {
                term,
                postings: &postings[start..end],
            })
            .unwrap_or_default();
            if record.len() <= budget || end - start == 1 {
                records.push((term.to_string(), record));
                break;
            }
            end = start + (end - start) / 2;
        }
        start = end;
    }
    records
}

pub(in crate::bundle_gen) fn index_terms(
    plan: &Plan,
    rendered: &[Rendered],
) -> Vec<(String, Vec<u8>)> {
    if plan.options.terms_per_page == 0 {
        return Vec::new();
    }
    // term → postings (page, fields), pages in path order.
    let mut by_term: HashMap<&str, Vec<(usize, u8)>> = HashMap::new();
    for &p in &plan.path_order {
        for (term, mask) in &rendered[p].terms {
            by_term.entry(term.as_str()).or_default().push((p, *mask));
        }
    }
    type Postings = Vec<(usize, u8)>;
    let mut buckets: BTreeMap<&'static str, Vec<(&str, Postings)>> = BTreeMap::new();
    for (term, postings) in by_term {
        buckets
            .entry(bucket_of(term))
            .or_default()
            .push((term, postings));
    }
    let mut out = Vec::new();
    let mut catalog_buckets = Vec::new();
    let fields_of = |mask: u8| -> Vec<&'static str> {
        (0..8)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| TERM_FIELDS[i])
            .collect()
    };
    for (bucket, mut terms) in buckets {
        terms.sort_by(|a, b| a.0.cmp(b.0));
        let dir = format!("_index/terms/{bucket}");
        let prefix = format!(
            "{{\"formatVersion\":2,\"title\":\"{bucket} terms\",\"bucket\":\"{bucket}\",\"terms\":["
        );
        // A term whose postings alone pass the byte cap is split into several records.
        let budget = SHARD_BYTES - prefix.len() - 3;
        let records: Vec<(String, String)> = terms
            .par_iter()
            .flat_map_iter(|(term, postings)| {
                let postings: Vec<Posting<'_>> = postings
                    .iter()
                    .map(|&(p, mask)| Posting {
                        path: &plan.pages[p].path,
                        fields: fields_of(mask),
                    })
                    .collect();
                term_records(term, &postings, budget)
            })
            .collect();
        let (files, parts) = pack(&dir, &format!("{bucket}-terms"), &prefix, &records, true);
        let routes: Vec<TermRoute> = parts
            .into_iter()
            .map(|part| TermRoute {
                path: part.path,
                first_term: part.first_key,
                last_term: part.last_key,
                record_count: part.record_count,
            })
            .collect();
        let router = TermBucketRouter {
            format_version: 2,
            title: format!("{bucket} term routes"),
            bucket,
            routes,
        };
        let mut entries = vec![NavEntry::file("index.json", "index.json", "index.json")];
        for (path, _) in &files {
            let name = name_of(path);
            entries.push(NavEntry::file(name, name, name));
        }
        out.extend(files);
        out.push((
            format!("{dir}/index.json"),
            to_json_line(&router).into_bytes(),
        ));
        out.extend(navigation(plan, &dir, None, entries, true));
        catalog_buckets.push(BucketRef {
            bucket,
            path: format!("{dir}/index.json"),
        });
    }
    let entries: Vec<NavEntry> = catalog_buckets
        .iter()
        .map(|b| NavEntry::dir(b.bucket))
        .chain([NavEntry::file("index.json", "index.json", "index.json")])
        .collect();
    let catalog = TermCatalog {
        format_version: 2,
        title: "Term routes",
        normalization: TermNormalization {
            unicode_normalization: "NFKC",
            case_folding: "unicode",
            tokenization: "nodejieba-search-v1",
        },
        buckets: catalog_buckets,
    };
    out.push((
        "_index/terms/index.json".into(),
        to_json_line(&catalog).into_bytes(),
    ));
    out.extend(navigation(plan, "_index/terms", None, entries, true));
    out
}
