//! The `kbtools` command: a thin clap front door over the library.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
