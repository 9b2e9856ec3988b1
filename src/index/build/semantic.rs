//! A build's vector stage: which vectors the new generation has ([`super::super::Semantic`]),
//! the model that makes them, and `vectors.bin` written beside the catalog.

use std::path::Path;

use super::super::vectors::{self, Embedder, SemanticManifest, SourcePage, Vectors, VECTORS_FILE};
use super::super::{BuildOptions, Semantic, CATALOG_FILE};
use super::{index_fingerprint, Previous};
use crate::error::IndexError;

/// Whether the new generation has vectors: asked for, or kept from the previous one.
pub(super) fn wanted(options: &BuildOptions, previous: Option<&Previous>) -> bool {
    match options.semantic {
        Semantic::On => true,
        Semantic::Off => false,
        Semantic::Keep => previous.is_some_and(|p| p.manifest.semantic.is_some()),
    }
}

/// Whether a generation's vectors are what this build wants (so an unchanged bundle needs no
/// build).
pub(crate) fn fits(options: &BuildOptions, manifest: &crate::index::Manifest) -> bool {
    let has = manifest.semantic.as_ref();
    match options.semantic {
        Semantic::Keep => true,
        Semantic::Off => has.is_none(),
        Semantic::On => has.is_some_and(|s| s.sha256 == model_sha256() && s.pages_without == 0),
    }
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

/// An embedder with the model's name and checksum.
type Loaded = (Box<dyn Embedder>, String, String);

/// The model, its name and checksum; an error when the build asked for vectors (`--semantic`)
/// and it is missing, `None` (said on `progress`) when it only keeps them.
#[cfg(feature = "semantic")]
fn embedder(
    options: &BuildOptions,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<Loaded>, IndexError> {
    let dir = crate::embed::install::model_dir(options.model_dir.as_deref());
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

/// Makes the new generation's vectors in `tmp` (whose catalog is written), reusing the
/// previous generation's where the model is the same. Returns the manifest's record and the
/// file's CRC-32.
pub(super) fn stage(
    bundle_root: &Path,
    tmp: &Path,
    previous: Option<&Previous>,
    options: &BuildOptions,
    threads: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<(SemanticManifest, u32, vectors::VectorWork), IndexError> {
    let pages = source_pages(tmp)?;
    let embedder = embedder(options, threads, progress)?;
    let (name, sha) = match &embedder {
        Some((_, name, sha)) => (name.clone(), sha.clone()),
        None => previous
            .and_then(|p| p.manifest.semantic.as_ref())
            .map(|s| (s.model.clone(), s.sha256.clone()))
            .unwrap_or_default(),
    };
    // The previous vectors, when they come from this same model.
    let before = previous
        .filter(|p| {
            p.manifest
                .semantic
                .as_ref()
                .is_some_and(|s| s.sha256 == sha)
        })
        .and_then(|p| Vectors::read(&p.generation.join(VECTORS_FILE)).ok());
    let (vectors, work) = vectors::build(
        bundle_root,
        &pages,
        before.as_ref(),
        embedder.as_ref().map(|(e, _, _)| e.as_ref()),
        progress,
    );
    let bytes = vectors.encode();
    let crc = crc32fast::hash(&bytes);
    super::super::write_file(&tmp.join(VECTORS_FILE), &bytes)?;
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
