//! The installable agent Skill `knowledge-base-tools` (`skill/knowledge-base-tools/` in the
//! repository), embedded in the binary: its files as (relative path, content) pairs, and
//! [`install`], which writes them under a skills folder such as `~/.claude/skills`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The Skill's folder name, as its `SKILL.md` frontmatter names it.
pub(crate) const SKILL_NAME: &str = "knowledge-base-tools";

/// The Skill's files: path relative to the Skill folder (with `/`), and content.
pub const FILES: [(&str, &str); 4] = [
    (
        "SKILL.md",
        include_str!("../skill/knowledge-base-tools/SKILL.md"),
    ),
    (
        "references/tool-contract.md",
        include_str!("../skill/knowledge-base-tools/references/tool-contract.md"),
    ),
    (
        "references/exploration-workflow.md",
        include_str!("../skill/knowledge-base-tools/references/exploration-workflow.md"),
    ),
    (
        "references/answer-style.md",
        include_str!("../skill/knowledge-base-tools/references/answer-style.md"),
    ),
];

/// The Skill's files as (path relative to the skills folder, content) pairs, e.g.
/// `knowledge-base-tools/SKILL.md`.
pub fn files() -> Vec<(PathBuf, &'static str)> {
    FILES
        .iter()
        .map(|(relative, content)| (relative_path(relative), *content))
        .collect()
}

fn relative_path(relative: &str) -> PathBuf {
    relative
        .split('/')
        .fold(PathBuf::from(SKILL_NAME), |path, part| path.join(part))
}

/// Why the Skill could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A file of the Skill already exists with other content, and `force` was not given.
    #[error(
        "{}: already exists with different content (it was edited or is from another version); \
         install with --force to overwrite it",
        .0.display()
    )]
    Modified(PathBuf),
    /// Something other than a regular file is in the way.
    #[error("{}: exists and is not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// Reading or writing a file or folder failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SkillError + '_ {
    move |source| SkillError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the Skill to `<dir>/knowledge-base-tools/…` (creating folders as needed) and returns
/// the paths of its files, in [`FILES`] order. A file that already holds exactly the Skill's
/// content is left as it is; one that holds something else is overwritten only with `force`.
/// Every file is checked before any is written, so a refusal changes nothing.
pub fn install(dir: &Path, force: bool) -> Result<Vec<PathBuf>, SkillError> {
    let planned: Vec<(PathBuf, &str)> = files()
        .into_iter()
        .map(|(relative, content)| (dir.join(relative), content))
        .collect();
    let mut to_write = Vec::new();
    for (path, content) in &planned {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => to_write.push((path, *content)),
            Err(e) => return Err(io_error(path)(e)),
            Ok(meta) if !meta.is_file() => return Err(SkillError::NotAFile(path.clone())),
            Ok(_) => {
                let existing = fs::read(path).map_err(io_error(path))?;
                if existing != content.as_bytes() {
                    if !force {
                        return Err(SkillError::Modified(path.clone()));
                    }
                    to_write.push((path, *content));
                }
            }
        }
    }
    for (path, content) in to_write {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        fs::write(path, content).map_err(io_error(path))?;
    }
    Ok(planned.into_iter().map(|(path, _)| path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_md_names_itself_in_its_frontmatter() {
        let (_, skill_md) = FILES[0];
        assert!(skill_md.starts_with("---\nname: knowledge-base-tools\ndescription: "));
    }

    #[test]
    fn files_live_under_the_skill_folder() {
        let paths: Vec<PathBuf> = files().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths[1],
            Path::new("knowledge-base-tools")
                .join("references")
                .join("tool-contract.md")
        );
        assert!(paths.iter().all(|p| p.starts_with(SKILL_NAME)));
    }
}
