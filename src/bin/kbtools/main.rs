//! The `kbtools` command: clap's grammar (`args.rs`) and a file per command over the library.
//! Exit codes: 0 success, 1 tool error (the error envelope, or its text form, is printed on
//! stdout), 2 usage, I/O or index problems (a message on stderr).

use anyhow::Result;
use clap::Parser;

mod args;
mod call;
mod check;
mod eval;
#[cfg(feature = "gen-bundle")]
mod gen_bundle;
mod help;
mod human;
mod index;
#[cfg(feature = "semantic")]
mod model;
mod open;
mod output;
/// `serve` and `mcp` (the `server` feature).
#[cfg(feature = "server")]
mod server;
mod skill;
mod tool_flags;

use args::{Cli, Command, RenderArgs, Source};

/// mimalloc instead of the system allocator: indexing makes millions of small, short-lived
/// allocations (tokens, terms, parsed records), where glibc's malloc spent about a sixth of a
/// 100k-page build.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    kbtools::no_transparent_huge_pages();
    let code = match run(parse()) {
        Ok(code) => code,
        Err(e) => {
            // Errors quote paths and inputs, anyone's text: escaped for the terminal.
            let text = format!("{e:#}");
            eprintln!("kbtools: {}", kbtools::text::terminal_safe_lines(&text));
            2
        }
    };
    kbtools::memory::keep_freed_memory();
    std::process::exit(code);
}

/// The command line, or its usage error (with a hint where one helps) and exit.
fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| {
        let args: Vec<String> = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let hint = match e.kind() {
            clap::error::ErrorKind::UnknownArgument => bundle_hint(&args),
            _ => None,
        };
        // Help and version go to stdout with exit 0, errors to stderr with exit 2.
        let _ = e.print();
        if let Some(hint) = hint {
            eprintln!("\n{}", kbtools::text::terminal_safe_lines(&hint));
        }
        std::process::exit(e.exit_code())
    })
}

/// The commands that answer from `--bundle` and take no folder of their own.
const TOOL_COMMANDS: [&str; 7] = [
    "search", "read", "tree", "file", "related", "expand", "call",
];

/// Options whose value is the next argument, among those given before a folder.
const OPTIONS_WITH_A_FOLDER: [&str; 5] =
    ["-b", "--bundle", "--index", "--model-dir", "--audit-log"];

/// For a tool command given a folder as an argument (`kbtools search FOLDER "q"`): the same
/// command with the folder as `--bundle`.
fn bundle_hint(args: &[String]) -> Option<String> {
    let command = args
        .iter()
        .position(|a| TOOL_COMMANDS.contains(&a.as_str()))?;
    let folder = (command + 1..args.len()).find(|&i| {
        !args[i].starts_with('-')
            && !OPTIONS_WITH_A_FOLDER.contains(&args[i - 1].as_str())
            && std::path::Path::new(&args[i]).is_dir()
    })?;
    let quoted = |a: &String| match a
        .chars()
        .any(|c| c.is_whitespace() || "'\"$`\\".contains(c))
    {
        true => format!("'{}'", a.replace('\'', "'\\''")),
        false => a.clone(),
    };
    let mut fixed: Vec<String> = args.iter().map(quoted).collect();
    fixed.insert(folder, "--bundle".into());
    Some(format!(
        "hint: `kbtools {}` answers from the folder that --bundle (or -b, or KBTOOLS_BUNDLE) names: kbtools {}",
        args[command],
        fixed.join(" ")
    ))
}

/// Runs one command; its exit code.
fn run(cli: Cli) -> Result<i32> {
    let source = cli.source;
    match cli.command {
        Command::Index {
            bundle_path,
            threads,
            full,
            semantic,
            no_semantic,
            publish,
            keep,
        } => index::run(
            bundle_path,
            threads,
            full,
            (semantic, no_semantic),
            publish.map(|dir| (dir, keep)),
            &source,
        ),
        Command::Check {
            bundle_path,
            format,
            strict,
            allow,
            codes,
        } => check::check(bundle_path, &source, format, strict, &allow, codes),
        #[cfg(feature = "semantic")]
        Command::Model(command) => model::run(command, &source),
        Command::Help { topic } => help::run(&topic),
        Command::Call {
            tool,
            input,
            render,
        } => call::call(&source, &tool, input.as_deref(), &render.into()),
        Command::Search {
            query,
            input,
            render,
            explain,
        } => {
            let (tool, input) = input.with("query", Some(query));
            if explain {
                return call::explain_search(&source, &render, &input);
            }
            call::answer(&source, &render, tool, input)
        }
        #[cfg(feature = "server")]
        Command::Serve(args) => server::serve_command(&source, args),
        #[cfg(feature = "server")]
        Command::Mcp {
            bundle_path,
            result_format,
            text_budget,
            audit_log,
            watch,
        } => server::mcp_stdio(
            source,
            bundle_path,
            result_format,
            text_budget,
            audit_log,
            watch,
        ),
        Command::Eval(args) => eval::run(&source, args),
        Command::Read {
            target,
            input,
            render,
        } => {
            let key = if call::looks_like_id(&target) {
                "fileId"
            } else {
                "path"
            };
            let (tool, input) = input.with(key, Some(target));
            call::answer(&source, &render, tool, input)
        }
        Command::Tree {
            parent,
            input,
            render,
        } => {
            let (tool, input) = input.with("parentPath", parent);
            call::answer(&source, &render, tool, input)
        }
        Command::File {
            target,
            input,
            render,
        } => call::on_file(&source, &render, target, input),
        Command::Related {
            target,
            input,
            render,
        } => call::on_file(&source, &render, target, input),
        Command::Skill { action } => skill::run(action, &source),
        #[cfg(feature = "gen-bundle")]
        Command::GenBundle(args) => gen_bundle::run(args, &source),
        Command::Expand {
            target,
            input,
            render,
        } => call::on_file(&source, &render, target, input),
    }
}

#[cfg(test)]
mod tests;
