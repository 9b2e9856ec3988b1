//! The semantic lane's vectors (`vectors.bin` in a generation): one vector per passage window
//! of every source page, and how a build makes them.
//!
//! A page's passages are its heading sections ([`crate::ingest::markdown::sections`], the passage
//! lane's units, so a vector hit names the section its excerpt comes from), each under its
//! page's title and cut into windows of at most `MAX_PASSAGE_TOKENS` tokens. Generated
//! navigation pages have none.
//!
//! Incremental: a page whose path, content and title are unchanged keeps its vectors without
//! being read; a changed page is read and only the sections whose text (with the title) is new
//! are embedded again, keyed by a hash of that text.
//!
//! The file (little endian): magic `KBVEC002`, `u32` dimension, windows, pages; per page `u32`
//! catalog position, first window, window count, its 16-byte key, then `u32` script (0 not
//! known, 1 CJK, 2 other: [`Script`]); per window `u32` section and `u64` section key; then the
//! vectors (`f32` × dimension × windows). `KBVEC001` (no script) is read too. The vector lanes
//! score them (`crate::search::cosine`); this file only stores them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::embed_cache::{EmbedCache, Record};
use crate::error::IndexError;

pub(crate) const VECTORS_FILE: &str = "vectors.bin";
/// The cross-language lane's vectors: the same format, a window per section.
pub(crate) const CROSS_VECTORS_FILE: &str = "crossvectors.bin";
const MAGIC: &[u8; 8] = b"KBVEC002";
/// The format before pages had a script.
const MAGIC_1: &[u8; 8] = b"KBVEC001";

/// What a page is written in, by its letters: CJK when most of them are CJK characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Script {
    /// Made before the script was recorded.
    #[default]
    Unknown,
    Cjk,
    Other,
}

impl Script {
    /// The script of `text`: CJK when CJK characters are at least as many as the other
    /// letters' words (a CJK character carries about a word's meaning).
    pub fn of(text: &str) -> Script {
        let (mut cjk, mut words, mut in_word) = (0usize, 0usize, false);
        for c in text.chars() {
            if crate::text::is_cjk(c) {
                cjk += 1;
                in_word = false;
            } else if c.is_alphabetic() {
                words += usize::from(!in_word);
                in_word = true;
            } else {
                in_word = false;
            }
        }
        if cjk > 0 && cjk >= words {
            Script::Cjk
        } else {
            Script::Other
        }
    }

    fn code(self) -> u32 {
        match self {
            Script::Unknown => 0,
            Script::Cjk => 1,
            Script::Other => 2,
        }
    }

    fn from_code(code: u32) -> Script {
        match code {
            1 => Script::Cjk,
            2 => Script::Other,
            _ => Script::Unknown,
        }
    }
}

/// Tokens of a passage window (title included), as the prototype measured best: a section
/// longer than this is cut into equal windows.
#[cfg(feature = "semantic")]
pub(crate) const MAX_PASSAGE_TOKENS: usize = 320;

/// What the manifest records of a generation's vectors.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SemanticManifest {
    /// The model's name and its file's SHA-256: the lane runs only with that same model.
    pub model: String,
    pub sha256: String,
    pub dim: u32,
    pub pages: u64,
    pub windows: u64,
    /// Source pages that have no vectors (changed while the model was missing): the lane is
    /// then `degraded`.
    pub pages_without: u64,
}

/// One page's windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageVectors {
    pub position: u32,
    pub first: u32,
    pub count: u32,
    pub key: [u8; 16],
    pub script: Script,
}

/// The vectors of a generation.
#[derive(Debug, Default, Clone)]
pub struct Vectors {
    pub dim: usize,
    pub pages: Vec<PageVectors>,
    /// Per window: its section, and the section's key.
    pub sections: Vec<u32>,
    pub section_keys: Vec<u64>,
    pub data: Vec<f32>,
}

fn corrupt(path: &Path, reason: &str) -> IndexError {
    IndexError::Corrupt {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl Vectors {
    pub fn window(&self, w: usize) -> &[f32] {
        &self.data[w * self.dim..(w + 1) * self.dim]
    }

    pub fn windows(&self) -> usize {
        self.sections.len()
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + self.pages.len() * 32 + self.data.len() * 4);
        out.extend_from_slice(MAGIC);
        for n in [self.dim, self.windows(), self.pages.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        for p in &self.pages {
            for n in [p.position, p.first, p.count] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            out.extend_from_slice(&p.key);
            out.extend_from_slice(&p.script.code().to_le_bytes());
        }
        for (s, k) in self.sections.iter().zip(&self.section_keys) {
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(&k.to_le_bytes());
        }
        for v in &self.data {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn read(path: &Path) -> Result<Vectors, IndexError> {
        let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
        Self::decode(&bytes)
            .ok_or_else(|| corrupt(path, "the vectors file is truncated or damaged"))
    }

    fn decode(bytes: &[u8]) -> Option<Vectors> {
        let (rest, page_size) = match bytes.strip_prefix(MAGIC) {
            Some(rest) => (rest, 32),
            None => (bytes.strip_prefix(MAGIC_1)?, 28),
        };
        let u32_at = |b: &[u8], i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
        };
        let dim = u32_at(rest, 0)? as usize;
        let windows = u32_at(rest, 4)? as usize;
        let pages = u32_at(rest, 8)? as usize;
        let mut at = 12;
        let page_bytes = pages.checked_mul(page_size)?;
        let window_bytes = windows.checked_mul(12)?;
        let data_bytes = windows.checked_mul(dim)?.checked_mul(4)?;
        if rest.len() != at + page_bytes + window_bytes + data_bytes {
            return None;
        }
        let mut out = Vectors {
            dim,
            ..Vectors::default()
        };
        for _ in 0..pages {
            let p = PageVectors {
                position: u32_at(rest, at)?,
                first: u32_at(rest, at + 4)?,
                count: u32_at(rest, at + 8)?,
                key: rest.get(at + 12..at + 28)?.try_into().ok()?,
                script: match page_size {
                    32 => Script::from_code(u32_at(rest, at + 28)?),
                    _ => Script::Unknown,
                },
            };
            if p.first as usize + p.count as usize > windows {
                return None;
            }
            out.pages.push(p);
            at += page_size;
        }
        for _ in 0..windows {
            out.sections.push(u32_at(rest, at)?);
            out.section_keys.push(u64::from_le_bytes(
                rest.get(at + 4..at + 12)?.try_into().ok()?,
            ));
            at += 12;
        }
        out.data = rest[at..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(out)
    }

    /// The script of the page at catalog `position`, when it has vectors.
    pub fn script(&self, position: u32) -> Script {
        self.pages
            .binary_search_by_key(&position, |p| p.position)
            .map_or(Script::Unknown, |i| self.pages[i].script)
    }
}

/// A source page a build gives vectors to.
pub struct SourcePage {
    pub position: u32,
    pub key: [u8; 16],
    pub disk: String,
    pub path: String,
    pub title: String,
}

/// The key of a page's section: its title and text.
pub(crate) fn section_key(title: &str, text: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(title.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().unwrap_or_default())
}

/// What a build did to the vectors.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorWork {
    /// Pages whose vectors were kept unread.
    pub pages_kept: u64,
    /// Pages read for their sections.
    pub pages_read: u64,
    /// Windows whose vectors came from the embedding cache (a build cut short before).
    pub windows_cached: u64,
    /// Windows embedded, and their tokens.
    pub windows_embedded: u64,
    pub tokens_embedded: u64,
    /// Pages left without vectors (no model, unreadable, or left for later: a deferred build).
    pub pages_without: u64,
}

/// How far a build's embedding has come, read by another thread (a server's health): windows
/// and tokens embedded of those to embed, and the time left at the rate so far.
#[derive(Debug)]
pub struct EmbedProgress {
    pub windows_done: AtomicU64,
    pub windows_total: AtomicU64,
    pub tokens_done: AtomicU64,
    pub tokens_total: AtomicU64,
    /// Seconds left, estimated after each chunk (`u64::MAX`: not known yet).
    pub seconds_left: AtomicU64,
}

impl Default for EmbedProgress {
    fn default() -> Self {
        EmbedProgress {
            windows_done: AtomicU64::new(0),
            windows_total: AtomicU64::new(0),
            tokens_done: AtomicU64::new(0),
            tokens_total: AtomicU64::new(0),
            seconds_left: AtomicU64::new(u64::MAX),
        }
    }
}

/// Embeds passage windows: the model behind a closure, so that the index does not depend on
/// the encoder (a build without feature `semantic` keeps what it can).
pub trait Embedder: Sync {
    /// The windows of a section under its page's title.
    fn windows(&self, title: &str, text: &str) -> Vec<Vec<u32>>;
    /// Unit vectors of `windows`, in order.
    fn embed(&self, windows: &[Vec<u32>]) -> Vec<Vec<f32>>;
    fn dim(&self) -> usize;
}

/// Tokens embedded per call of [`Embedder::embed`], between two progress lines (and two
/// appends to the embedding cache).
const PROGRESS_TOKENS: usize = 24_576;

/// [`PROGRESS_TOKENS`], or with feature `testing` `KBTOOLS_EMBED_CHUNK_TOKENS`: a test sees
/// progress lines (and appends to the embedding cache) within seconds in a debug build.
fn chunk_tokens() -> usize {
    #[cfg(feature = "testing")]
    if let Some(n) = std::env::var("KBTOOLS_EMBED_CHUNK_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    PROGRESS_TOKENS
}

/// Where a build's vectors come from besides the pages kept whole: the previous generation's
/// sections, the embedding cache, and the model (`None`: nothing is embedded, as in a deferred
/// build or without the model).
pub(crate) struct Sources<'a> {
    pub previous: Option<&'a Vectors>,
    pub cache: Option<&'a mut EmbedCache>,
    pub embedder: Option<&'a dyn Embedder>,
    /// Told how far embedding has come.
    pub counter: Option<&'a EmbedProgress>,
}

/// A page's window: kept (its index in the previous vectors), from the embedding cache (its
/// index there) or new (its index in the windows embedded now).
enum Window {
    Kept(usize),
    Cached(usize),
    Fresh(usize),
}

/// Where a section's windows are.
enum Found {
    /// In the previous vectors.
    Previous(Vec<usize>),
    /// In the embedding cache.
    Cached(Vec<usize>),
    /// Nowhere: its windows' tokens, to embed.
    New(Vec<Vec<u32>>),
    /// Nowhere, and not embedded by this build (no model loaded).
    Pending,
}

/// A changed page read: its script and, per section, its number, key and windows.
type Sections = (Script, Vec<(u32, u64, Found)>);

/// A changed page laid out: its script, and per window its section, section key and vector.
type Layout = (Script, Vec<(u32, u64, Window)>);

/// Each window to embed, and the sections' windows it is (section key, window of the section,
/// windows of the section): the records it makes in the embedding cache.
struct ToEmbed {
    windows: Vec<Vec<u32>>,
    owners: Vec<Vec<(u64, u32, u32)>>,
}

/// The vectors of `pages` (in position order), reusing the previous vectors by page and by
/// section and the embedding cache by section, embedding the rest when `sources` has a model.
pub(crate) fn build(
    bundle_root: &Path,
    pages: &[SourcePage],
    sources: Sources<'_>,
    progress: &mut dyn FnMut(&str),
) -> (Vectors, VectorWork) {
    let Sources {
        previous,
        mut cache,
        embedder,
        counter,
    } = sources;
    let known_dim = embedder.map(|e| e.dim()).or(previous.map(|p| p.dim));
    let previous = previous.filter(|p| Some(p.dim) == known_dim);
    // A page kept from a file that did not record scripts is read again for its script (its
    // sections' vectors are still kept, by their keys).
    let by_page: HashMap<[u8; 16], &PageVectors> = previous
        .map(|p| {
            p.pages
                .iter()
                .filter(|v| v.script != Script::Unknown)
                .map(|v| (v.key, v))
                .collect()
        })
        .unwrap_or_default();
    let mut work = VectorWork::default();
    let changed: Vec<&SourcePage> = pages
        .iter()
        .filter(|p| !by_page.contains_key(&p.key))
        .collect();
    // The cache is read only when a page may need it.
    if let Some(cache) = cache.as_deref_mut().filter(|_| !changed.is_empty()) {
        cache.load();
    }
    let dim = known_dim
        .or(cache.as_deref().map(|c| c.dim()).filter(|d| *d > 0))
        .unwrap_or(0);
    let usable_cache = cache.as_deref().filter(|c| !c.is_empty() && c.dim() == dim);
    let read = match (embedder, usable_cache) {
        (None, None) => changed.iter().map(|_| None).collect(),
        _ => read_sections(bundle_root, &changed, previous, usable_cache, embedder),
    };
    let (to_embed, layouts) = lay_out(&changed, read, &mut work);
    let fresh = match embedder.filter(|_| !to_embed.windows.is_empty()) {
        Some(embedder) => {
            let cache = cache.as_deref_mut();
            embed_all(embedder, &to_embed, cache, counter, &mut work, progress)
        }
        None => Vec::new(),
    };
    let cache = cache.as_deref();
    let mut out = Vectors {
        dim,
        ..Vectors::default()
    };
    let push = |out: &mut Vectors, section: u32, key: u64, v: &[f32]| {
        out.sections.push(section);
        out.section_keys.push(key);
        out.data.extend_from_slice(v);
    };
    for p in pages {
        let first = out.windows() as u32;
        let script;
        if let Some(kept) = by_page.get(&p.key) {
            script = kept.script;
            let prev = previous.expect("kept pages come from the previous vectors");
            for w in kept.first as usize..(kept.first + kept.count) as usize {
                push(
                    &mut out,
                    prev.sections[w],
                    prev.section_keys[w],
                    prev.window(w),
                );
            }
            work.pages_kept += 1;
        } else if let Some((page_script, layout)) = layouts.get(&p.position) {
            script = *page_script;
            for (section, key, window) in layout {
                let vector = match window {
                    Window::Kept(w) => previous
                        .expect("kept sections come from the previous vectors")
                        .window(*w),
                    Window::Cached(i) => cache.expect("cached sections have a cache").vector(*i),
                    Window::Fresh(i) => &fresh[*i],
                };
                push(&mut out, *section, *key, vector);
            }
        } else {
            continue;
        }
        let count = out.windows() as u32 - first;
        if count > 0 {
            out.pages.push(PageVectors {
                position: p.position,
                first,
                count,
                key: p.key,
                script,
            });
        }
    }
    (out, work)
}

/// The changed pages' sections, read in parallel (`None`: a page not read): each section's
/// windows found in `previous` or the `cache` by its key, else its windows to embed (or
/// pending, without an `embedder`).
fn read_sections(
    bundle_root: &Path,
    changed: &[&SourcePage],
    previous: Option<&Vectors>,
    cache: Option<&EmbedCache>,
    embedder: Option<&dyn Embedder>,
) -> Vec<Option<Sections>> {
    use rayon::prelude::*;
    // Section key → its windows in `previous`.
    let mut by_section: HashMap<u64, Vec<usize>> = HashMap::new();
    if let Some(p) = previous {
        for (w, k) in p.section_keys.iter().enumerate() {
            by_section.entry(*k).or_default().push(w);
        }
    }
    changed
        .par_iter()
        .map(|p| {
            let text = crate::ingest::bundle::read_page_text(bundle_root, &p.disk, &p.path)?;
            let body = &text.body;
            Some((
                Script::of(body),
                crate::ingest::markdown::sections(body)
                    .into_iter()
                    .enumerate()
                    .map(|(i, range)| {
                        let section = &body[range];
                        let key = section_key(&p.title, section);
                        let found = if let Some(kept) = by_section.get(&key) {
                            Found::Previous(kept.clone())
                        } else if let Some(cached) = cache.and_then(|c| c.section(key)) {
                            Found::Cached(cached)
                        } else if let Some(embedder) = embedder {
                            Found::New(embedder.windows(&p.title, section))
                        } else {
                            Found::Pending
                        };
                        (i as u32, key, found)
                    })
                    .collect(),
            ))
        })
        .collect()
}

/// Every distinct window to embed, in page order, and each changed page's layout by position
/// (a page with a pending section has none: it is left without vectors). A window whose
/// tokens are another's (a section repeated within or across pages under the same title) is
/// embedded once and shared: the model gives both the same vector.
fn lay_out(
    changed: &[&SourcePage],
    read: Vec<Option<Sections>>,
    work: &mut VectorWork,
) -> (ToEmbed, HashMap<u32, Layout>) {
    let mut to_embed = ToEmbed {
        windows: Vec::new(),
        owners: Vec::new(),
    };
    let mut seen: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut layouts: HashMap<u32, Layout> = HashMap::new();
    for (p, sections) in changed.iter().zip(read) {
        let Some((script, sections)) = sections else {
            work.pages_without += 1;
            continue;
        };
        if sections.iter().any(|(_, _, f)| matches!(f, Found::Pending)) {
            work.pages_without += 1;
            continue;
        }
        work.pages_read += 1;
        let mut layout = Vec::new();
        for (section, key, found) in sections {
            match found {
                Found::Previous(kept) => {
                    layout.extend(kept.into_iter().map(|w| (section, key, Window::Kept(w))));
                }
                Found::Cached(cached) => {
                    work.windows_cached += cached.len() as u64;
                    layout.extend(
                        cached
                            .into_iter()
                            .map(|i| (section, key, Window::Cached(i))),
                    );
                }
                Found::New(new) => {
                    let count = new.len() as u32;
                    for (window, w) in new.into_iter().enumerate() {
                        let at = *seen.entry(w).or_insert_with_key(|w| {
                            to_embed.windows.push(w.clone());
                            to_embed.owners.push(Vec::new());
                            to_embed.windows.len() - 1
                        });
                        to_embed.owners[at].push((key, window as u32, count));
                        layout.push((section, key, Window::Fresh(at)));
                    }
                }
                Found::Pending => unreachable!("a page with a pending section has no layout"),
            }
        }
        layouts.insert(p.position, (script, layout));
    }
    (to_embed, layouts)
}

/// The vectors of `to_embed`, in order, embedded a few thousand tokens at a time with a
/// progress line after each, each chunk's appended to the embedding cache.
fn embed_all(
    embedder: &dyn Embedder,
    to_embed: &ToEmbed,
    mut cache: Option<&mut EmbedCache>,
    counter: Option<&EmbedProgress>,
    work: &mut VectorWork,
    progress: &mut dyn FnMut(&str),
) -> Vec<Vec<f32>> {
    let windows = &to_embed.windows;
    let mut fresh: Vec<Vec<f32>> = Vec::with_capacity(windows.len());
    let total: usize = windows.iter().map(|w| w.len() + 2).sum();
    let from_cache = match work.windows_cached {
        0 => String::new(),
        n => format!("; {n} windows from the embedding cache"),
    };
    progress(&format!(
        "embedding {} passage windows ({total} tokens) of {} pages{from_cache}",
        windows.len(),
        work.pages_read
    ));
    let count = |counter: &AtomicU64, n: usize| counter.store(n as u64, Ordering::Relaxed);
    if let Some(c) = counter {
        count(&c.windows_total, windows.len());
        count(&c.tokens_total, total);
        count(&c.windows_done, 0);
        count(&c.tokens_done, 0);
        c.seconds_left.store(u64::MAX, Ordering::Relaxed);
    }
    let started = std::time::Instant::now();
    let chunk = chunk_tokens();
    let mut done = 0usize;
    let mut start = 0;
    while start < windows.len() {
        let mut end = start;
        let mut tokens = 0;
        while end < windows.len() && (end == start || tokens < chunk) {
            tokens += windows[end].len() + 2;
            end += 1;
        }
        fresh.extend(embedder.embed(&windows[start..end]));
        if let Some(cache) = cache.as_deref_mut() {
            let records: Vec<Record<'_>> = (start..end)
                .flat_map(|i| {
                    let vector = &fresh[i][..];
                    to_embed.owners[i]
                        .iter()
                        .map(move |&(key, window, count)| (key, window, count, vector))
                })
                .collect();
            if let Err(e) = cache.append(&records) {
                progress(&format!(
                    "cannot write the embedding cache ({e}); embedding goes on without it"
                ));
            }
        }
        done += tokens;
        start = end;
        let secs = started.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let left = (total - done) as f64 / rate;
        if let Some(c) = counter {
            count(&c.windows_done, end);
            count(&c.tokens_done, done);
            c.seconds_left.store(left.round() as u64, Ordering::Relaxed);
        }
        progress(&format!(
            "embedded {done}/{total} tokens ({:.0} tokens/s, {:.1} pages/s, about {left:.0} s left)",
            rate,
            work.pages_read as f64 * done as f64 / total as f64 / secs,
        ));
    }
    work.windows_embedded = windows.len() as u64;
    work.tokens_embedded = total as u64;
    fresh
}

#[cfg(test)]
pub(crate) mod tests;
