//! The vector lanes' models: whether the semantic lane (`content_vector`) and the
//! cross-language lane can run, and the question's embeddings (`"query: "` + the text, cached
//! per process), which the lanes (`crate::search::lanes::content_vector`,
//! `cross_language`) score against every passage window of the index's vectors. They run in
//! `hybrid` only (`file` stays lexical, as the issue that added the lane decided; `graph` ranks
//! by relations), when the index has vectors made by the installed model
//! (docs/rules.md#semantic-lane). Without feature `semantic` neither can.

#[cfg(feature = "semantic")]
use std::collections::{HashMap, VecDeque};
#[cfg(feature = "semantic")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "semantic")]
use crate::embed::crosslingual::CrossModel;
#[cfg(feature = "semantic")]
use crate::embed::Model;
use crate::kb::KnowledgeBase;

/// Whether the semantic lane can run (`semanticStatus`, docs/rules.md#semantic-lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticState {
    /// The index has vectors of the installed model.
    Ready,
    /// Some pages have none (they changed while the model was missing, or are still being
    /// embedded): the lane runs over the rest.
    Degraded,
    /// No vectors (none made yet, or every page still waiting to be embedded), no model,
    /// another model's vectors, or turned off.
    Unavailable,
}

/// The semantic lane's model, when it can run.
#[cfg(feature = "semantic")]
pub(crate) type SemanticModel = Option<Arc<Model>>;
#[cfg(not(feature = "semantic"))]
pub(crate) type SemanticModel = Option<()>;

/// The cross-language lane's model, when it can run.
#[cfg(feature = "semantic")]
pub(crate) type CrossLanguageModel = Option<Arc<CrossModel>>;
#[cfg(not(feature = "semantic"))]
pub(crate) type CrossLanguageModel = Option<()>;

/// A question's embedding, shared with the embedding cache.
#[cfg(feature = "semantic")]
pub(crate) type QueryVector = Arc<Vec<f32>>;
#[cfg(not(feature = "semantic"))]
pub(crate) type QueryVector = std::sync::Arc<Vec<f32>>;

/// Whether the semantic lane can run on `kb`, and its model.
pub fn semantic(kb: &KnowledgeBase) -> (SemanticState, SemanticModel) {
    #[cfg(feature = "semantic")]
    {
        state(kb)
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = kb;
        (SemanticState::Unavailable, None)
    }
}

/// The cross-language lane's model, when it can run on `kb`.
pub(crate) fn cross_language(kb: &KnowledgeBase) -> CrossLanguageModel {
    #[cfg(feature = "semantic")]
    {
        cross_model(kb)
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = kb;
        None
    }
}

/// The embedding of `text` as a question for `model`, its products on `threads` threads of
/// the current pool.
pub(crate) fn question_vector(
    model: &SemanticModel,
    text: &str,
    threads: usize,
) -> Option<QueryVector> {
    #[cfg(feature = "semantic")]
    {
        model
            .as_ref()
            .map(|model| query_vector(model, text, threads))
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = (model, text, threads);
        None
    }
}

/// The cross-language model's embedding of `text`.
pub(crate) fn cross_question_vector(model: &CrossLanguageModel, text: &str) -> Option<QueryVector> {
    #[cfg(feature = "semantic")]
    {
        model.as_ref().map(|model| cross_query_vector(model, text))
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = (model, text);
        None
    }
}

/// Whether the lane can run on `kb`, and how [`SemanticState`] reports it.
#[cfg(feature = "semantic")]
fn state(kb: &KnowledgeBase) -> (SemanticState, Option<Arc<Model>>) {
    use SemanticState::*;
    // The vectors are read last: only when the model that made them is installed.
    let Some(recorded) = kb.manifest.semantic.as_ref() else {
        return (Unavailable, None);
    };
    // No page has vectors yet (all left for a later build): the model is not even loaded.
    if !kb.options.semantic || recorded.pages == 0 {
        return (Unavailable, None);
    }
    let dir = crate::embed::install::model_dir(kb.options.model_dir.as_deref());
    match crate::embed::shared(&dir) {
        Ok((model, installed)) if installed.sha256 == recorded.sha256 && kb.vectors().is_some() => {
            let state = if recorded.pages_without > 0 {
                Degraded
            } else {
                Ready
            };
            (state, Some(model))
        }
        _ => (Unavailable, None),
    }
}

/// The cross-language lane's model, when it can run on `kb`: the index has its vectors, made by
/// the installed model (the lane runs beside the semantic lane, in `hybrid`).
#[cfg(feature = "semantic")]
fn cross_model(kb: &KnowledgeBase) -> Option<Arc<CrossModel>> {
    let recorded = kb.manifest.cross_language.as_ref()?;
    if !kb.options.semantic || recorded.pages == 0 {
        return None;
    }
    let dir = crate::embed::install::model_dir(kb.options.model_dir.as_deref());
    crate::embed::crosslingual::install::shared(&dir)
        .ok()
        .filter(|(_, installed)| installed.sha256 == recorded.sha256)
        .filter(|_| kb.cross_vectors().is_some())
        .map(|(model, _)| model)
}

/// Query embeddings kept per process (a server answers the same questions again, paging among
/// them): the most recent [`CACHED`] of each model.
#[cfg(feature = "semantic")]
const CACHED: usize = 512;

#[cfg(feature = "semantic")]
struct Cache {
    vectors: HashMap<String, Arc<Vec<f32>>>,
    order: VecDeque<String>,
}

#[cfg(feature = "semantic")]
type Shared = Mutex<Option<Cache>>;

#[cfg(feature = "semantic")]
static CACHE: Shared = Mutex::new(None);
#[cfg(feature = "semantic")]
static CROSS_CACHE: Shared = Mutex::new(None);

/// The embedding of `text` as a query.
#[cfg(feature = "semantic")]
fn query_vector(model: &Model, text: &str, threads: usize) -> Arc<Vec<f32>> {
    cached(&CACHE, text, || model.embed_query(text, threads))
}

/// The cross-language model's embedding of `text`.
#[cfg(feature = "semantic")]
fn cross_query_vector(model: &CrossModel, text: &str) -> Arc<Vec<f32>> {
    cached(&CROSS_CACHE, text, || model.embed_one(text))
}

#[cfg(feature = "semantic")]
fn cached(cache: &Shared, text: &str, embed: impl FnOnce() -> Vec<f32>) -> Arc<Vec<f32>> {
    {
        let cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.as_ref().and_then(|c| c.vectors.get(text)) {
            return v.clone();
        }
    }
    let vector = Arc::new(embed());
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(|| Cache {
        vectors: HashMap::new(),
        order: VecDeque::new(),
    });
    if cache
        .vectors
        .insert(text.to_string(), vector.clone())
        .is_none()
    {
        cache.order.push_back(text.to_string());
        if cache.order.len() > CACHED {
            if let Some(old) = cache.order.pop_front() {
                cache.vectors.remove(&old);
            }
        }
    }
    vector
}
