//! The semantic lane (`content_vector`): whether it can run, and the query's embedding
//! (`"query: "` + the text, cached per process), which [`super::lexical`] scores against every
//! passage window of the index's vectors, a page counting at its best window. It runs in `hybrid` only (`file` stays lexical, as the issue that added the lane
//! decided; `graph` ranks by relations), when the index has vectors made by the installed model
//! (docs/rules.md#semantic-lane).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::embed::crosslingual::CrossModel;
use crate::embed::Model;
use crate::kb::KnowledgeBase;

/// Whether the lane can run on `kb`, and how [`super::SemanticState`] reports it.
pub fn state(kb: &KnowledgeBase) -> (super::SemanticState, Option<Arc<Model>>) {
    use super::SemanticState::*;
    // The vectors are read last: only when the model that made them is installed.
    let Some(recorded) = kb.manifest.semantic.as_ref() else {
        return (Unavailable, None);
    };
    if !kb.options.semantic {
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
pub(crate) fn cross_model(kb: &KnowledgeBase) -> Option<Arc<CrossModel>> {
    let recorded = kb.manifest.cross_language.as_ref()?;
    if !kb.options.semantic {
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
const CACHED: usize = 512;

struct Cache {
    vectors: HashMap<String, Arc<Vec<f32>>>,
    order: VecDeque<String>,
}

type Shared = Mutex<Option<Cache>>;

static CACHE: Shared = Mutex::new(None);
static CROSS_CACHE: Shared = Mutex::new(None);

/// The embedding of `text` as a query.
pub(crate) fn query_vector(model: &Model, text: &str) -> Arc<Vec<f32>> {
    cached(&CACHE, text, || {
        model.embed_query(text, rayon::current_num_threads())
    })
}

/// The cross-language model's embedding of `text`.
pub(crate) fn cross_query_vector(model: &CrossModel, text: &str) -> Arc<Vec<f32>> {
    cached(&CROSS_CACHE, text, || model.embed_one(text))
}

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
