//! `kbtools help [COMMAND | text-format]`: clap's long help of a command, or a topic.

use anyhow::{anyhow, Result};
use clap::CommandFactory;

use crate::output::print_text;
use crate::Cli;

/// `kbtools help [COMMAND | text-format]`.
pub(crate) fn run(topic: &[String]) -> Result<i32> {
    let mut command = Cli::command();
    match topic.first().map(String::as_str) {
        None => print_text(command.render_long_help().to_string())?,
        Some("text-format") => {
            print_text(include_str!("../../../docs/text-format.md").to_string())?;
        }
        Some(name) => {
            let mut sub = command
                .find_subcommand_mut(name)
                .ok_or_else(|| {
                    anyhow!(
                        "no command or help topic {name:?}; commands: {}; topics: text-format",
                        Cli::command()
                            .get_subcommands()
                            .filter(|c| !c.is_hide_set())
                            .map(|c| c.get_name().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?
                .clone();
            sub = sub.bin_name(format!("kbtools {name}"));
            print_text(sub.render_long_help().to_string())?;
        }
    }
    Ok(0)
}
