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
    let code = match run(Cli::parse()) {
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
