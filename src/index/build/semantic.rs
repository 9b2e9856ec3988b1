//! A build's vector stages: which vectors the new generation has ([`super::super::Semantic`]),
//! the models that make them, and their files written beside the catalog: `vectors.bin` (the
//! semantic lane's, multilingual-e5) and `crossvectors.bin` (the cross-language lane's, USE
//! multilingual, made whenever the semantic lane's are and that model is installed).

/// Which vectors a stage makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Vectorizer {
    /// The semantic lane's (`content_vector`): required by `--semantic`.
    Content,
    /// The cross-language lane's: made when its model is installed.
    Cross,
}

impl Vectorizer {
    pub(super) fn file(self) -> &'static str {
        match self {
            Vectorizer::Content => VECTORS_FILE,
            Vectorizer::Cross => CROSS_VECTORS_FILE,
        }
    }

    fn recorded(self, manifest: &Manifest) -> Option<&SemanticManifest> {
        match self {
            Vectorizer::Content => manifest.semantic.as_ref(),
            Vectorizer::Cross => manifest.cross_language.as_ref(),
        }
    }
}

use std::path::Path;

use super::super::embed_cache::EmbedCache;
use super::super::vectors::{
    self, Embedder, SemanticManifest, SourcePage, Vectors, CROSS_VECTORS_FILE, VECTORS_FILE,
};
use super::super::{BuildOptions, Embedding, Manifest, Semantic, CATALOG_FILE};
use super::{index_fingerprint, Previous};
use crate::error::IndexError;

/// Whether the new generation has `which` vectors: the semantic lane's when asked for, or
/// kept from the previous one; the cross-language lane's beside them when its model is
/// installed or the previous generation had them.
pub(super) fn wanted(
    which: Vectorizer,
    options: &BuildOptions,
    previous: Option<&Previous>,
) -> bool {
    let had = previous.is_some_and(|p| p.manifest.semantic.is_some());
    let content = match options.semantic {
        Semantic::On => true,
        Semantic::Off => false,
        Semantic::Keep => had,
        Semantic::Auto => {
            !semantic_off(options, previous.map(|p| &p.manifest))
                && (had || content_installed(options))
        }
    };
    match which {
        Vectorizer::Content => content,
        Vectorizer::Cross => {
            content
                && (cross_installed(options)
                    || previous.is_some_and(|p| p.manifest.cross_language.is_some()))
        }
    }
}

/// Whether the generation a build with `options` makes is marked built without vectors: a
/// `--no-semantic` build, and later builds that are not `--semantic` (from `previous`).
pub(crate) fn semantic_off(options: &BuildOptions, previous: Option<&Manifest>) -> bool {
    match options.semantic {
        Semantic::Off => true,
        Semantic::On => false,
        Semantic::Keep | Semantic::Auto => previous.is_some_and(|m| m.semantic_off),
    }
}

/// Whether the semantic lane's model is installed and verified (its stamp read, not hashed).
#[cfg(feature = "semantic")]
fn content_installed(options: &BuildOptions) -> bool {
    let dir = crate::embed::install::model_dir(options.model_dir.as_deref());
    matches!(crate::embed::install::installed(&dir), Ok(Some(m)) if m.verified)
}

#[cfg(not(feature = "semantic"))]
fn content_installed(_: &BuildOptions) -> bool {
    false
}

/// Whether the cross-language model is installed and verified.
#[cfg(feature = "semantic")]
fn cross_installed(options: &BuildOptions) -> bool {
    let dir = crate::embed::install::model_dir(options.model_dir.as_deref());
    matches!(crate::embed::crosslingual::install::installed(&dir), Ok(Some(m)) if m.verified)
}

#[cfg(not(feature = "semantic"))]
fn cross_installed(_: &BuildOptions) -> bool {
    false
}

/// Whether a generation's vectors are what this build wants (so an unchanged bundle needs no
/// build).
pub(crate) fn fits(options: &BuildOptions, manifest: &Manifest) -> bool {
    let has = manifest.semantic.as_ref();
    // A deferred build leaves pages without vectors for a later one: their lack is no reason
    // to build again.
    let deferred = options.embedding == Embedding::Deferred;
    let complete =
        |s: &SemanticManifest, sha: &str| s.sha256 == sha && (deferred || s.pages_without == 0);
    let with_vectors = || {
        has.is_some_and(|s| complete(s, model_sha256()))
            && (!cross_installed(options)
                || manifest
                    .cross_language
                    .as_ref()
                    .is_some_and(|s| complete(s, cross_sha256())))
    };
    match options.semantic {
        Semantic::Keep => true,
        Semantic::Off => has.is_none() && manifest.semantic_off,
        Semantic::On => with_vectors() && !manifest.semantic_off,
        // Installed models want their vectors; else whatever the index has.
        Semantic::Auto => manifest.semantic_off || !content_installed(options) || with_vectors(),
    }
}

#[cfg(feature = "semantic")]
fn cross_sha256() -> &'static str {
    crate::embed::crosslingual::install::SHA256
}

#[cfg(not(feature = "semantic"))]
fn cross_sha256() -> &'static str {
    ""
}

#[cfg(feature = "semantic")]
fn model_sha256() -> &'static str {
    crate::embed::install::MODEL_SHA256
}

#[cfg(not(feature = "semantic"))]
fn model_sha256() -> &'static str {
    ""
}

#[cfg(feature = "semantic")]
struct ModelEmbedder {
    model: std::sync::Arc<crate::embed::Model>,
    threads: usize,
}

#[cfg(feature = "semantic")]
impl Embedder for ModelEmbedder {
    fn windows(&self, title: &str, text: &str) -> Vec<Vec<u32>> {
        self.model
            .passage_windows(title, text, vectors::MAX_PASSAGE_TOKENS)
    }
    fn embed(&self, windows: &[Vec<u32>]) -> Vec<Vec<f32>> {
        self.model.embed_windows(windows, self.threads, &|_| {})
    }
    fn dim(&self) -> usize {
        self.model.dim()
    }
}

#[cfg(feature = "semantic")]
struct CrossEmbedder {
    model: std::sync::Arc<crate::embed::crosslingual::CrossModel>,
}

/// A section is one window, whole: the model has no window limit, and a page's vector is its
/// best section's.
#[cfg(feature = "semantic")]
impl Embedder for CrossEmbedder {
    fn windows(&self, title: &str, text: &str) -> Vec<Vec<u32>> {
        vec![self.model.tokens(&format!("{title}\n{text}"))]
    }
    fn embed(&self, windows: &[Vec<u32>]) -> Vec<Vec<f32>> {
        self.model.embed_ids(windows)
    }
    fn dim(&self) -> usize {
        self.model.dim()
    }
}

/// The installed model's name and checksum, read from its stamp without loading it (a
/// deferred build's vectors are recorded as that model's).
#[cfg(feature = "semantic")]
fn installed_identity(which: Vectorizer, options: &BuildOptions) -> Option<(String, String)> {
    let dir = crate::embed::install::model_dir(options.model_dir.as_deref());
    match which {
        Vectorizer::Content => crate::embed::install::installed(&dir)
            .ok()
            .flatten()
            .filter(|m| m.verified)
            .map(|m| (m.name.to_string(), m.sha256)),
        Vectorizer::Cross => crate::embed::crosslingual::install::installed(&dir)
            .ok()
            .flatten()
            .filter(|m| m.verified)
            .map(|m| (m.name.to_string(), m.sha256)),
    }
}

#[cfg(not(feature = "semantic"))]
fn installed_identity(_: Vectorizer, _: &BuildOptions) -> Option<(String, String)> {
    None
}

/// The window size a vectorizer's sections are cut at (0: a section is one window): the
/// embedding cache's records are valid for that size only.
fn window_tokens(which: Vectorizer) -> u32 {
    match which {
        #[cfg(feature = "semantic")]
        Vectorizer::Content => vectors::MAX_PASSAGE_TOKENS as u32,
        #[cfg(not(feature = "semantic"))]
        Vectorizer::Content => 0,
        Vectorizer::Cross => 0,
    }
}

/// An embedder with the model's name and checksum.
type Loaded = (Box<dyn Embedder>, String, String);

/// The model, its name and checksum; an error when the build asked for vectors (`--semantic`)
/// and it is missing, `None` (said on `progress`) when it only keeps them.
#[cfg(feature = "semantic")]
fn embedder(
    which: Vectorizer,
    options: &BuildOptions,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<Loaded>, IndexError> {
    let dir = crate::embed::install::model_dir(options.model_dir.as_deref());
    if which == Vectorizer::Cross {
        return match crate::embed::crosslingual::install::shared(&dir) {
            Ok((model, installed)) => Ok(Some((
                Box::new(CrossEmbedder { model }),
                installed.name.to_string(),
                installed.sha256,
            ))),
            Err(e) => {
                progress(&format!(
                    "{e}: the pages that changed have no cross-language vectors until it is installed"
                ));
                Ok(None)
            }
        };
    }
    match crate::embed::shared(&dir) {
        Ok((model, installed)) => Ok(Some((
            Box::new(ModelEmbedder { model, threads }),
            installed.name.to_string(),
            installed.sha256,
        ))),
        Err(e) if options.semantic == Semantic::On => Err(IndexError::Semantic(e.to_string())),
        Err(e) => {
            progress(&format!(
                "{e}: the pages that changed have no vectors until it is installed"
            ));
            Ok(None)
        }
    }
}

#[cfg(not(feature = "semantic"))]
fn embedder(
    _which: Vectorizer,
    options: &BuildOptions,
    _threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<Loaded>, IndexError> {
    let why = "this kbtools was built without the semantic feature";
    if options.semantic == Semantic::On {
        return Err(IndexError::Semantic(why.to_string()));
    }
    progress(&format!("{why}: the pages that changed have no vectors"));
    Ok(None)
}

/// The source pages of the generation in `dir` that get vectors.
fn source_pages(dir: &Path) -> Result<Vec<SourcePage>, IndexError> {
    let catalog = super::stream::open_written_catalog(&dir.join(CATALOG_FILE))?;
    Ok(catalog
        .iter_files()
        .enumerate()
        .filter(|(i, f)| catalog.is_source(*i as u32) && f.index_key.is_some())
        .filter_map(|(i, f)| {
            let title = f.title.clone().unwrap_or_default();
            Some(SourcePage {
                position: i as u32,
                key: index_fingerprint(&f.path, &f.sha256, &title),
                disk: f.disk.clone()?,
                path: f.path.clone(),
                title,
            })
        })
        .collect())
}

/// Makes the new generation's `which` vectors in `tmp` (whose catalog is written), reusing the
/// previous generation's where the model is the same, and the embedding cache of the index
/// folder (`tmp`'s parent); a deferred build loads no model and embeds nothing. Returns the
/// manifest's record and the file's CRC-32.
pub(super) fn stage(
    which: Vectorizer,
    bundle_root: &Path,
    tmp: &Path,
    previous: Option<&Previous>,
    options: &BuildOptions,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<(SemanticManifest, u32, vectors::VectorWork), IndexError> {
    let pages = source_pages(tmp)?;
    let embedder = match options.embedding {
        Embedding::Now => embedder(which, options, threads, progress)?,
        Embedding::Deferred => None,
    };
    let (name, sha) = match &embedder {
        Some((_, name, sha)) => (name.clone(), sha.clone()),
        None => installed_identity(which, options)
            .or_else(|| {
                previous
                    .and_then(|p| which.recorded(&p.manifest))
                    .map(|s| (s.model.clone(), s.sha256.clone()))
            })
            .unwrap_or_default(),
    };
    // The previous vectors, when they come from this same model.
    let before = previous
        .filter(|p| which.recorded(&p.manifest).is_some_and(|s| s.sha256 == sha))
        .and_then(|p| Vectors::read(&p.generation.join(which.file())).ok());
    let index_dir = tmp.parent().unwrap_or(tmp);
    let dim = embedder.as_ref().map(|(e, _, _)| e.dim());
    let mut cache =
        (!sha.is_empty()).then(|| EmbedCache::open(index_dir, &sha, dim, window_tokens(which)));
    let counter = match which {
        Vectorizer::Content => options.embed_progress.as_deref(),
        Vectorizer::Cross => None,
    };
    let sources = vectors::Sources {
        previous: before.as_ref(),
        cache: cache.as_mut(),
        embedder: embedder.as_ref().map(|(e, _, _)| e.as_ref()),
        counter,
    };
    let (vectors, work) = vectors::build(bundle_root, &pages, sources, progress);
    if let Some(Err(e)) = cache.as_mut().map(|c| c.keep_within(&vectors)) {
        progress(&format!("cannot rewrite the embedding cache ({e})"));
    }
    let bytes = vectors.encode();
    let crc = crc32fast::hash(&bytes);
    super::super::write_file(&tmp.join(which.file()), &bytes)?;
    let manifest = SemanticManifest {
        model: name,
        sha256: sha,
        dim: vectors.dim as u32,
        pages: vectors.pages.len() as u64,
        windows: vectors.windows() as u64,
        pages_without: (pages.len() - vectors.pages.len()) as u64,
    };
    Ok((manifest, crc, work))
}
