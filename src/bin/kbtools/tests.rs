//! Unit tests of the command line.

use std::path::PathBuf;

use super::*;
use crate::open::one_bundle;
use clap::CommandFactory;

/// Every argument and option of every command a person sees has a description, and says its
/// default: clap shows one (`default_value`), the text says `[default: …]`, or it is a flag
/// (off unless given), a required argument, or repeatable.
#[test]
fn every_option_has_a_description_and_a_default() {
    fn walk(command: &clap::Command, path: &str, problems: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if help.trim().is_empty() {
                problems.push(format!("{path} {id}: no description"));
                continue;
            }
            let flag = matches!(
                arg.get_action(),
                clap::ArgAction::SetTrue | clap::ArgAction::Count
            );
            let repeatable = matches!(arg.get_action(), clap::ArgAction::Append);
            let has_default = !arg.get_default_values().is_empty()
                || help.contains("[default")
                || arg.is_required_set()
                || flag
                || repeatable;
            if !has_default {
                problems.push(format!("{path} {id}: no default stated"));
            }
        }
        for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
            if sub.get_about().is_none() {
                problems.push(format!("{path} {}: no description", sub.get_name()));
            }
            walk(sub, &format!("{path} {}", sub.get_name()), problems);
        }
    }
    let mut problems = Vec::new();
    walk(&Cli::command(), "kbtools", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The commands a person runs first show examples, and the global options are grouped apart.
#[test]
fn commands_show_examples_and_group_global_options() {
    let mut cli = Cli::command();
    cli.build();
    for name in [
        "index", "serve", "mcp", "call", "search", "read", "tree", "file", "related", "expand",
        "eval",
    ] {
        let sub = cli.find_subcommand_mut(name).unwrap();
        let help = sub.render_long_help().to_string();
        assert!(help.contains("Examples:"), "{name}: {help}");
        assert!(help.contains("Global options:"), "{name}: {help}");
    }
}

#[test]
fn the_bundle_is_named_once() {
    let a = Some(PathBuf::from("a"));
    assert_eq!(one_bundle(a.clone(), None).unwrap(), a);
    assert_eq!(one_bundle(None, a.clone()).unwrap(), a);
    assert_eq!(one_bundle(a.clone(), a.clone()).unwrap(), a);
    assert!(one_bundle(a, Some(PathBuf::from("b"))).is_err());
}
