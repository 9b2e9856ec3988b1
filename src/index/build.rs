//! Building an index generation: ingest (reusing the ingest cache), the catalog, the ingest
//! cache for the next build, the full-text index, then the swap.
//!
//! Two ways to the catalog:
//!
//! - **assembly** (a full build, or a change that touches the bundle's structure): every file's
//!   parse (read, or decoded from the ingest cache) goes through the bundle-wide steps
//!   ([`bundle::assemble`]) and the catalog is written block by block from it;
//! - **patch** (only files that shape nothing but themselves changed — a page's text, say):
//!   the previous catalog is copied, each block as stored, except the blocks of the changed
//!   files, which are decoded, updated and encoded again. The ingest cache records what the
//!   assembly depended on ([`assembly_key`]), so a patch is taken only when an assembly would
//!   give the same result.
//!
//! A full build indexes each page as it is read, with the text of the same parse: the search
//! index writer's threads work during the reading instead of after it (at 100,000 pages:
//! 17.5 s -> 14.9 s). The pages' segments are then written, and the writer's arenas freed,
//! before the other files (the records) are read and the catalog made, so that the arenas and
//! those parses are not held together. A page is indexed under the
//! title its document record (the document packets are read first) or its own text gives it;
//! once the bundle-wide steps have decided, a page indexed under another path or title, or
//! that is no source page, is deleted, and the source pages not indexed so are read again and
//! indexed ([`finish_streamed`]). An update (or a full build over
//! [`BuildOptions::streamed_bytes`]) reads page texts again when it indexes the pages, a batch at
//! a time, so a large bundle's texts are never all held.
//!
//! This file plans and runs a build; the assembly is [`assemble`], the patch [`patch`], and the
//! search index's pages, streamed or updated, [`stream`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::cache::{self, Cache, Entry, Sha};
use super::generations::BuildingGeneration;
use super::manifest::{manifest_bytes, record_files};
use super::search_index;
use super::{
    erased, last_revision, remove_leftovers, sync_dir, write_file, BuildOptions, BuildReport,
    BuildWork, Counts, Manifest, Previous, Verify, BUILD_LOCK, CATALOG_FILE, INDEX_FORMAT_VERSION,
};
use crate::error::IndexError;
use crate::ids;
use crate::ingest::bundle::paths::PathClass;
use crate::ingest::bundle::{self, BundleKind, Code, Diagnostic, Job, ReadFile};

mod assemble;
mod patch;
mod prepare;
mod publish;
mod semantic;
mod stream;

use assemble::{all_files, assemble, create_generation};
use patch::{patch, patch_plan};
use prepare::{begin, scan, split_by_cache, Begun, Scanned, Start};
use publish::{crash_point, publish};
use stream::{finish_streamed, incremental_search, index_pages, pages_of_catalog, read_and_index};

/// Modification times this close before the cache was made are not trusted (ns).
const RACY_WINDOW_NS: i128 = 2_000_000_000;
/// Source pages whose texts are read and indexed at once (by file size).
const BATCH_BYTES: u64 = 64 << 20;

/// A source page to index.
struct Page {
    key: u64,
    /// [`index_fingerprint`].
    fingerprint: [u8; 16],
    path: String,
    title: String,
    disk: Option<String>,
    size: u64,
}

/// What the full-text index holds of a page: its path, content and title. A page whose
/// fingerprint changed is indexed again.
fn index_fingerprint(path: &str, sha256: &str, title: &str) -> [u8; 16] {
    let mut hasher = Sha256::new();
    for part in [path, sha256, title] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize()[..16]);
    out
}

/// What the bundle-wide steps of a bundle depend on besides the files' own titles: every
/// file's paths, class and whether it parsed, and the content of every record file (routers,
/// document packets, per-file graphs), and the [`super::DERIVATION_VERSION`] of the steps.
/// Equal keys give equal source pages, relations, rendered
/// relation records (when the titles are equal too), catalog positions and diagnostics.
fn assembly_key<'a>(
    kind: BundleKind,
    files: impl Iterator<Item = (&'a str, &'a str, PathClass, Sha<'a>, bool)>,
) -> String {
    let mut hasher = bundle::walk::BufferedSha256::new();
    hasher.update(format!("{kind:?}\n{}\n", super::DERIVATION_VERSION).as_bytes());
    for (path, disk, class, sha256, parsed) in files {
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
        hasher.update(disk.as_bytes());
        hasher.update(&[0, cache::class_code(class), u8::from(parsed)]);
        if bundle::is_record_class(class) {
            sha256.with_text(|text| hasher.update(text.as_bytes()));
        }
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// A file of this build: its previous entry (unchanged, not read) or its fresh read.
enum Got {
    Cached(u32),
    Fresh(usize),
}

/// The files of this build and where each one's parse is.
struct Files<'c> {
    jobs: Vec<Job>,
    got: Vec<Got>,
    fresh: Vec<ReadFile>,
    cache: Option<&'c Cache>,
}

impl Files<'_> {
    fn sha256(&self, i: usize) -> Sha<'_> {
        match self.got[i] {
            Got::Cached(e) => self.entry(e).sha256,
            Got::Fresh(f) => Sha::of(&self.fresh[f].sha256),
        }
    }

    fn parsed(&self, i: usize) -> bool {
        match self.got[i] {
            Got::Cached(e) => self.entry(e).parsed,
            Got::Fresh(f) => self.fresh[f].detail.parsed,
        }
    }

    fn entry(&self, e: u32) -> Entry<'_> {
        self.cache
            .expect("a cached file has a cache")
            .entry(e as usize)
    }

    fn content_fingerprint(&self, kind: BundleKind) -> String {
        let mut hasher = bundle::ContentHasher::new(kind);
        for (i, job) in self.jobs.iter().enumerate() {
            self.sha256(i)
                .with_text(|sha256| hasher.add(job.path(), sha256));
        }
        hasher.finish()
    }

    fn assembly_key(&self, kind: BundleKind) -> String {
        assembly_key(
            kind,
            (0..self.jobs.len()).map(|i| {
                let job = &self.jobs[i];
                (
                    job.path(),
                    job.file.relative.as_str(),
                    job.class,
                    self.sha256(i),
                    self.parsed(i),
                )
            }),
        )
    }
}

/// What a build wrote besides the search index, and what indexing needs.
struct Written {
    name: String,
    /// The knowledge base's id.
    kb_id: String,
    /// Catalog files (listed or not).
    total_files: u64,
    content_fingerprint: String,
    revision: u64,
    revision_changed: bool,
    diagnostics: Vec<Diagnostic>,
    counts: Counts,
    /// (key, fingerprint) of every indexed page (for the search index: which pages changed).
    indexed: Vec<(u64, [u8; 16])>,
    /// Every indexed page (assembly), or the pages whose fingerprint changed (patch).
    pages: Vec<Page>,
    all_pages: bool,
    /// The CRC-32 of the files written (the catalog and the ingest cache), made as they were
    /// written: the manifest records them without reading the files again.
    crcs: Vec<(&'static str, u32)>,
}

/// What a generation records beside its files, whichever way they are written (assembled or
/// patched): the scan's diagnostics, the content fingerprint, the revision and whether it
/// changed, when the build started reading, and the folder being written.
struct Stamp<'a> {
    scan_diagnostics: Vec<Diagnostic>,
    content_fingerprint: String,
    revision: u64,
    revision_changed: bool,
    made_ns: i128,
    tmp: &'a Path,
    /// The rules of the files the walk left out (records that name them are not reported).
    exclusions: Option<bundle::exclusions::Exclusions>,
}

/// What the revision and the generation folder depend on.
struct Naming<'a> {
    index_dir: &'a Path,
    previous: Option<&'a Previous>,
    kb_id: String,
}

impl Naming<'_> {
    /// (revision, changed) for content with this fingerprint.
    fn revision(&self, content_fingerprint: &str) -> (u64, bool) {
        match self.previous {
            Some(p)
                if p.manifest.content_fingerprint == content_fingerprint
                    && p.manifest.knowledge_base_id == self.kb_id =>
            {
                (p.manifest.active_content_revision, false)
            }
            Some(p) => (p.manifest.active_content_revision + 1, true),
            // An index of another format (or a damaged one) still tells the last revision, so
            // that cursors issued against it are refused after the rebuild.
            None => (last_revision(self.index_dir).map_or(1, |r| r + 1), true),
        }
    }
}

/// The keys of the pages a build listed but could not read again for indexing (removed or
/// replaced during the build), when there are any.
const UNINDEXED_FILE: &str = "unindexed.json";

/// A page that could not be read again for indexing: its key and its file.
type Unread = (u64, String);

pub(crate) use semantic::fits as semantic_fits;

/// What every step of one build reads: where it reads and writes, how, the live generation it
/// starts from, and what the scan found.
struct Build<'a> {
    bundle_root: &'a Path,
    canonical_root: PathBuf,
    index_dir: &'a Path,
    options: &'a BuildOptions,
    /// The live generation, its files checked.
    previous: Option<Previous>,
    /// Files read from here on are not trusted next time if modified within the racy window
    /// before this instant.
    made_ns: i128,
    /// The exclusions the build applies (and the manifest records).
    exclude: Vec<String>,
    kind: BundleKind,
    stat_fingerprint: String,
    /// The search index writer's threads.
    threads: usize,
    /// The suffix of this build's generation folder (`gen-<revision>-<id>`).
    id: String,
}

/// The generation folder being written, its lock, and the name it is published under.
struct Generation {
    tmp: PathBuf,
    live_name: String,
    lock: Option<BuildingGeneration>,
}

/// A full build's search index, written while the pages are read (module docs).
/// What [`Build::read`] gives: where each file's parse is, the files read, and a full build's
/// search index written meanwhile.
struct Read {
    got: Vec<Got>,
    fresh: Vec<ReadFile>,
    streamed: Option<Streamed>,
}

/// Its generation folder is named for revision 0 ([`Build::read`]).
struct Streamed {
    writer: search_index::Writer,
    added: Vec<stream::Added>,
}

/// The previous search index brought up to date: pages indexed, pages removed, pages that
/// could not be read again (`None`: no previous one to update).
type SearchUpdate = Option<Result<(u64, u64, Vec<Unread>), IndexError>>;

/// Builds (or rebuilds) the index of `bundle_root` in `index_dir`, checking the live generation
/// at `verify` first; see [`super::build`]. The steps: [`begin`] (the walk, the lock, the live
/// generation), [`scan`], [`Build::read`] (the files the ingest cache does not answer),
/// [`Build::write_catalog`] (patch or assembly), [`Build::index_search`], [`Build::finish`]
/// (vectors, manifest, publish).
pub(crate) fn build(
    bundle_root: &Path,
    index_dir: &Path,
    options: &BuildOptions,
    verify: Verify,
    progress: &mut dyn FnMut(&str),
) -> Result<BuildReport, IndexError> {
    let start = match begin(bundle_root, index_dir, options, verify, progress)? {
        Begun::Unchanged(report) => return Ok(report),
        Begun::Started(start) => start,
    };
    // What killed builds left behind goes before this build adds its own folder, and the
    // generations older than the live one go meanwhile (module docs of `index`).
    let cleanup = {
        let index_dir = index_dir.to_path_buf();
        let in_use = start.previous.as_ref().map(|p| p.generation.clone());
        std::thread::spawn(move || remove_leftovers(&index_dir, true, in_use.as_deref()))
    };
    let writing = start.writing;
    let (b, scanned) = scan(Start {
        writing: None,
        ..start
    })?;
    let Scanned {
        jobs,
        scan_diagnostics,
        cache,
        reuse,
        indexed_before,
    } = scanned;
    let reuse = cache.as_ref().filter(|_| reuse);
    let mut lock = None;
    let Read {
        got,
        fresh,
        streamed,
    } = b.read(&jobs, reuse, &mut lock)?;
    let files = Files {
        jobs,
        got,
        fresh,
        cache: reuse,
    };
    let files_read = files.fresh.len() as u64;
    let before = indexed_before.as_ref();
    let (written, mut generation, searched) = b.write_catalog(
        files,
        cache.as_ref(),
        scan_diagnostics,
        lock,
        before,
        progress,
    )?;
    drop(cache);
    if searched.is_none() {
        progress(&read_summary(b.kind, files_read, &written));
    }
    let searched = searched.unwrap_or_else(|| {
        b.update_search(before, &written, &generation.tmp.join("search"), progress)
    });
    let work = BuildWork {
        files_read,
        ..BuildWork::default()
    };
    let (work, unread) = b.index_search(
        &written,
        &generation.tmp,
        searched,
        streamed,
        work,
        progress,
    )?;
    let report = b.finish(written, &mut generation, work, unread, progress)?;
    let _ = cleanup.join();
    drop(writing);
    Ok(report)
}

impl Build<'_> {
    fn generation_name(&self, revision: u64) -> String {
        format!("gen-{revision}-{}", self.id)
    }

    /// The folder a generation for `revision` is written in before it is published.
    fn tmp_path(&self, revision: u64) -> PathBuf {
        self.index_dir
            .join(format!("{}.tmp", self.generation_name(revision)))
    }

    /// A new generation folder named for `revision`, locked (into `lock`) until `CURRENT`
    /// names it.
    fn create_tmp(
        &self,
        revision: u64,
        lock: &mut Option<BuildingGeneration>,
    ) -> Result<PathBuf, IndexError> {
        let tmp = self.tmp_path(revision);
        *lock = Some(create_generation(&tmp)?);
        Ok(tmp)
    }

    /// Which files the ingest cache answers, and the others read in parallel. A full build
    /// indexes each page as it is read (module docs): its generation folder, named for
    /// revision 0 until the revision is known, and its search index writer come first.
    fn read(
        &self,
        jobs: &[Job],
        reuse: Option<&Cache>,
        lock: &mut Option<BuildingGeneration>,
    ) -> Result<Read, IndexError> {
        let (got, to_read) = split_by_cache(jobs, reuse);
        let bytes_to_read: u64 = to_read.iter().map(|job| job.file.size).sum();
        let stream = reuse.is_none()
            && self
                .options
                .streamed_bytes
                .is_none_or(|most| bytes_to_read <= most);
        if !stream {
            let fresh = bundle::read_files(self.kind, &to_read);
            return Ok(Read {
                got,
                fresh,
                streamed: None,
            });
        }
        let tmp = self.create_tmp(0, lock)?;
        let search_dir = tmp.join("search");
        std::fs::create_dir_all(&search_dir).map_err(|e| IndexError::io(&search_dir, e))?;
        let mut writer = search_index::Writer::create(&search_dir, self.threads)?;
        let (fresh, added) = read_and_index(self.kind, &to_read, &mut writer)?;
        let streamed = Some(Streamed { writer, added });
        Ok(Read {
            got,
            fresh,
            streamed,
        })
    }

    /// The previous search index brought up to date into `search_dir`.
    fn update_search(
        &self,
        indexed_before: Option<&HashMap<u64, [u8; 16]>>,
        written: &Written,
        search_dir: &Path,
        progress: &mut dyn FnMut(&str),
    ) -> SearchUpdate {
        let p = self.previous.as_ref()?;
        let before = indexed_before?;
        Some(incremental_search(
            self.bundle_root,
            before,
            written,
            &p.generation.join("search"),
            search_dir,
            self.threads,
            progress,
        ))
    }

    /// The catalog and the ingest cache, patched from the live generation's (an update that
    /// touches no file's structure) or assembled from every file's parse, in the generation
    /// folder; with a patch, the search index's update made meanwhile. `cache`: the previous
    /// build's, whether or not `files` reuse it (an assembly keeps page revisions from it);
    /// `lock`: the generation folder a full build's streamed pages are in, if any.
    fn write_catalog(
        &self,
        files: Files<'_>,
        cache: Option<&Cache>,
        scan_diagnostics: Vec<Diagnostic>,
        mut lock: Option<BuildingGeneration>,
        indexed_before: Option<&HashMap<u64, [u8; 16]>>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Written, Generation, Option<SearchUpdate>), IndexError> {
        let kind = self.kind;
        let files_read = files.fresh.len() as u64;
        let mut naming = Naming {
            index_dir: self.index_dir,
            previous: self.previous.as_ref(),
            kb_id: String::new(),
        };
        // An update's plan and its content fingerprint (each a pass over every file) side by
        // side.
        let (plan, update_fingerprint) = match files.cache.zip(self.previous.as_ref()) {
            Some((c, p)) => rayon::join(
                || {
                    let (root, canonical) = (self.bundle_root, &self.canonical_root);
                    patch_plan(&files, c, p, root, canonical, self.options)
                },
                || Some(files.content_fingerprint(kind)),
            ),
            None => (None, None),
        };
        if let Some((plan, content_fingerprint)) = plan.zip(update_fingerprint) {
            naming.kb_id = plan.previous.manifest.knowledge_base_id.clone();
            let (revision, revision_changed) = naming.revision(&content_fingerprint);
            let tmp = self.create_tmp(revision, &mut lock)?;
            let search_dir = tmp.join("search");
            let fingerprint = (content_fingerprint, revision, revision_changed);
            let stamp = self.stamp(scan_diagnostics, fingerprint, &tmp);
            let (written, searched) = patch(&files, plan, stamp, |written| {
                progress(&read_summary(kind, files_read, written));
                self.update_search(indexed_before, written, &search_dir, progress)
            })?;
            // Every file's stat and path: freed meanwhile, not waited for.
            let Files {
                jobs, got, fresh, ..
            } = files;
            drop_later((jobs, got, fresh));
            let live_name = self.generation_name(revision);
            let generation = Generation {
                tmp,
                live_name,
                lock,
            };
            return Ok((written, generation, Some(searched)));
        }
        let reuse = files.cache;
        let read = all_files(files, kind);
        let name = bundle::knowledge_base_name(self.bundle_root, &read);
        naming.kb_id = self
            .options
            .knowledge_base_id
            .clone()
            .unwrap_or_else(|| ids::knowledge_base_id(&name));
        let content_fingerprint = bundle::content_fingerprint(
            kind,
            read.iter().map(|r| (r.path.as_str(), r.sha256.as_str())),
        );
        let (revision, revision_changed) = naming.revision(&content_fingerprint);
        // A full build that streamed its pages has its folder already, named for revision 0.
        let tmp = if lock.is_some() {
            self.tmp_path(0)
        } else {
            self.create_tmp(revision, &mut lock)?
        };
        let fingerprint = (content_fingerprint, revision, revision_changed);
        let stamp = self.stamp(scan_diagnostics, fingerprint, &tmp);
        let previous = self.previous.as_ref();
        let written = assemble(
            read,
            kind,
            name,
            &naming.kb_id,
            (cache, reuse),
            previous,
            stamp,
        )?;
        // The parse of every file is gone: its memory goes back before indexing.
        crate::memory::release_free();
        let live_name = self.generation_name(revision);
        let generation = Generation {
            tmp,
            live_name,
            lock,
        };
        Ok((written, generation, None))
    }

    /// What the generation records beside its files: `(content fingerprint, revision,
    /// whether it changed)`.
    fn stamp<'t>(
        &self,
        scan_diagnostics: Vec<Diagnostic>,
        (content_fingerprint, revision, revision_changed): (String, u64, bool),
        tmp: &'t Path,
    ) -> Stamp<'t> {
        Stamp {
            scan_diagnostics,
            content_fingerprint,
            revision,
            revision_changed,
            made_ns: self.made_ns,
            tmp,
            exclusions: bundle::exclusions::Exclusions::new(
                &self.canonical_root,
                &self.exclude,
                &mut Vec::new(),
            ),
        }
    }

    /// The search index: the previous one brought up to date when the ingest cache was used
    /// (`searched`), else built anew (a full build finishes the one written while reading).
    /// The pages that could not be read again for indexing (deleted or replaced during the
    /// build) are listed in the generation, for the next build.
    fn index_search(
        &self,
        written: &Written,
        tmp: &Path,
        searched: SearchUpdate,
        streamed: Option<Streamed>,
        mut work: BuildWork,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(BuildWork, Vec<Unread>), IndexError> {
        let search_dir = tmp.join("search");
        let mut unread = Vec::new();
        let mut incremental_done = false;
        match searched {
            Some(Ok((indexed, removed, not_read))) => {
                unread = not_read;
                work.incremental = true;
                work.pages_indexed = indexed;
                work.pages_removed = removed;
                incremental_done = true;
            }
            Some(Err(e)) => {
                progress(&format!(
                    "cannot update the previous search index ({e}); building it anew"
                ));
                let _ = std::fs::remove_dir_all(&search_dir);
            }
            None => {}
        }
        if !incremental_done {
            std::fs::create_dir_all(&search_dir).map_err(|e| IndexError::io(&search_dir, e))?;
            let catalog_pages;
            let pages: &[Page] = if written.all_pages {
                &written.pages
            } else {
                catalog_pages = pages_of_catalog(&tmp.join(CATALOG_FILE))?;
                &catalog_pages
            };
            progress(&format!("indexing {} pages", pages.len()));
            (work.pages_indexed, unread) = match streamed {
                Some(Streamed { writer, added }) => {
                    finish_streamed(self.bundle_root, writer, added, pages)?
                }
                None => {
                    let pages: Vec<&Page> = pages.iter().collect();
                    index_pages(
                        self.bundle_root,
                        &search_dir,
                        true,
                        &[],
                        &pages,
                        self.threads,
                    )?
                }
            };
        }
        if !unread.is_empty() {
            // The ingest cache counts those pages as indexed: the next build takes this list's
            // word over it and indexes them.
            let keys: Vec<u64> = unread.iter().map(|(key, _)| *key).collect();
            write_file(
                &tmp.join(UNINDEXED_FILE),
                &serde_json::to_vec(&keys).unwrap_or_default(),
            )?;
        }
        Ok((work, unread))
    }

    /// The vectors of the semantic lanes, the diagnostics and the manifest written, the
    /// generation synced and published.
    fn finish(
        &self,
        written: Written,
        generation: &mut Generation,
        mut work: BuildWork,
        unread: Vec<Unread>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<BuildReport, IndexError> {
        let Written {
            name,
            kb_id,
            content_fingerprint,
            revision,
            revision_changed,
            mut diagnostics,
            counts,
            mut crcs,
            ..
        } = written;
        diagnostics.extend(unread.into_iter().map(|(_, path)| {
            Diagnostic::new(
                Code::Unreadable,
                path,
                None,
                "cannot read again for indexing (removed or replaced during the build): listed \
                 but not searchable until the next build"
                    .into(),
            )
        }));
        let counts = Counts {
            diagnostics: diagnostics.len() as u64,
            ..counts
        };
        let tmp = &generation.tmp;
        let previous = self.previous.as_ref();
        let mut vector_stage = |which: semantic::Vectorizer, work: &mut BuildWork| {
            if !semantic::wanted(which, self.options, previous) {
                return Ok(None);
            }
            let (record, crc, vector_work) = semantic::stage(
                which,
                self.bundle_root,
                tmp,
                previous,
                self.options,
                self.threads,
                progress,
            )?;
            crcs.push((which.file(), crc));
            match which {
                semantic::Vectorizer::Content => work.vectors = vector_work,
                semantic::Vectorizer::Cross => work.cross_vectors = vector_work,
            }
            Ok::<_, IndexError>(Some(record))
        };
        let semantic = vector_stage(semantic::Vectorizer::Content, &mut work)?;
        let cross_language = vector_stage(semantic::Vectorizer::Cross, &mut work)?;
        let json = |v: &dyn erased::Json| v.to_json();
        write_file(&tmp.join("diagnostics.json"), &json(&diagnostics))?;
        let files = record_files(tmp, previous, &crcs)?;
        let manifest = Manifest {
            format_version: INDEX_FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            derivation_version: super::DERIVATION_VERSION,
            semantic_off: semantic::semantic_off(self.options, previous.map(|p| &p.manifest)),
            exclude: self.exclude.clone(),
            knowledge_base_id: kb_id,
            knowledge_base_name: name,
            bundle_kind: self.kind,
            bundle_root: self.canonical_root.to_string_lossy().into_owned(),
            active_content_revision: revision,
            content_fingerprint,
            stat_fingerprint: self.stat_fingerprint.clone(),
            counts,
            semantic,
            cross_language,
            files,
        };
        write_file(&tmp.join("manifest.json"), &manifest_bytes(&manifest))?;
        sync_dir(&tmp.join("search"));
        sync_dir(tmp);
        crash_point("written");
        let live = publish(
            self.index_dir,
            tmp,
            &generation.live_name,
            &mut generation.lock,
        )?;
        let _ = std::fs::remove_file(live.join(BUILD_LOCK));
        generation.lock = None;
        progress(&format!(
            "index ready at {} (revision {revision})",
            live.display()
        ));
        Ok(BuildReport {
            manifest,
            diagnostics,
            revision_changed,
            work,
        })
    }
}

/// The progress line once every file is read and the catalog made. A plain folder's count is
/// its pages, as its user counts them (the relation records kbtools renders for each are no
/// files of theirs).
fn read_summary(kind: BundleKind, files_read: u64, written: &Written) -> String {
    if kind == BundleKind::PlainFolder {
        return format!(
            "read {} of {} pages ({} relations, {} diagnostics)",
            files_read,
            written.counts.source_pages,
            written.counts.relations,
            written.diagnostics.len()
        );
    }
    format!(
        "read {} of {} files ({} source pages, {} relations, {} diagnostics)",
        files_read,
        written.total_files,
        written.counts.source_pages,
        written.counts.relations,
        written.diagnostics.len()
    )
}

/// Drops `value` on a thread of its own: freeing the lists of a large bundle's files takes tens
/// of milliseconds that a build need not wait for (a command exits without waiting for it).
fn drop_later<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value));
}
