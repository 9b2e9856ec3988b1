//! `kbtools skill install`: the agent Skill written into a folder; the paths on stderr.

use anyhow::Result;

use crate::args::SkillAction;
use crate::Source;

pub(crate) fn run(action: SkillAction, source: &Source) -> Result<i32> {
    let SkillAction::Install { dir, force } = action;
    for path in kbtools::skill::install(&dir, force)? {
        if !source.quiet {
            eprintln!("{}", path.display());
        }
    }
    Ok(0)
}
