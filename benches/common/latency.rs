//! Warm per-query latency shared by the benches: every input timed `rounds` times, each input's
//! median kept, nearest-rank percentiles over those medians.

use std::time::{Duration, Instant};

/// Whether the bench runs to measure (`cargo bench` passes `--bench`) rather than in criterion's
/// test mode (`cargo test --bench`, as CI runs it), which runs each benchmark once to check it.
/// Our own latency rounds are skipped in test mode, as criterion skips its sampling: figures of
/// a test-profile build mean nothing, and the rounds cost CI a minute and a half.
pub fn measuring() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// Times `run` on every input, `rounds` times over all inputs. Returns each input's median
/// (sorted) and every timed call (sorted).
pub fn warm_latencies<I>(
    inputs: &[I],
    rounds: usize,
    mut run: impl FnMut(&I),
) -> (Vec<Duration>, Vec<Duration>) {
    let mut times = vec![Vec::with_capacity(rounds); inputs.len()];
    for _ in 0..rounds {
        for (times, input) in times.iter_mut().zip(inputs) {
            let started = Instant::now();
            run(input);
            times.push(started.elapsed());
        }
    }
    let mut per_input: Vec<Duration> = times
        .iter_mut()
        .map(|t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect();
    per_input.sort();
    let mut all: Vec<Duration> = times.into_iter().flatten().collect();
    all.sort();
    (per_input, all)
}

/// Nearest-rank percentile of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
