//! Publishing a generation: renamed into place, then `CURRENT` written and renamed to name it,
//! each step flushed, with the crash tests' hooks between them.

use std::path::{Path, PathBuf};

use crate::error::IndexError;
use crate::index::{sync_dir, write_file, BuildingGeneration};

/// A test hook for the crash tests (`tests/slow/crash_safety.rs`): with `KBTOOLS_CRASH_AT=<point>`
/// in the environment, the process aborts at that point of the publish step, as a crash there
/// would stop it. Compiled in only with the `testing` feature.
pub(super) fn crash_point(point: &str) {
    #[cfg(feature = "testing")]
    if std::env::var_os("KBTOOLS_CRASH_AT").is_some_and(|at| at == point) {
        std::process::abort();
    }
    #[cfg(not(feature = "testing"))]
    let _ = point;
}

/// The publish: the generation `tmp` under its name `live_name`, then `CURRENT` naming it (the
/// one moment the index changes), each flushed before the next step; the generation's folder.
pub(super) fn publish(
    index_dir: &Path,
    tmp: &Path,
    live_name: &str,
    lock: &mut Option<BuildingGeneration>,
) -> Result<PathBuf, IndexError> {
    let live = index_dir.join(live_name);
    std::fs::rename(tmp, &live).map_err(|e| IndexError::io(&live, e))?;
    if let Some(lock) = lock.as_mut() {
        lock.moved_to(&live);
    }
    sync_dir(index_dir);
    crash_point("renamed");
    let current_tmp = index_dir.join(format!("CURRENT.{live_name}.tmp"));
    let published = write_file(&current_tmp, live_name.as_bytes()).and_then(|()| {
        crash_point("current-written");
        std::fs::rename(&current_tmp, index_dir.join("CURRENT"))
            .map_err(|e| IndexError::io(index_dir.join("CURRENT"), e))
    });
    if let Err(e) = published {
        // The generation folder goes with `lock`; this file too (a full disk stays full else).
        let _ = std::fs::remove_file(&current_tmp);
        return Err(e);
    }
    if let Some(lock) = lock.as_mut() {
        lock.published();
    }
    sync_dir(index_dir);
    crash_point("published");
    Ok(live)
}
