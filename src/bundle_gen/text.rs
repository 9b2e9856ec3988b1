//! Text for the generator: the splitmix64 PRNG (a stream per page), the Zipf-weighted
//! English and Chinese vocabularies, and sentences of tokens rendered as English or Chinese.

use super::*;

/// The splitmix64 finalizer: a bijection of u64 that mixes every bit.
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64: small, fast and the same on every platform.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

/// Independent streams of one seed.
pub(super) const STREAM_PLAN: u64 = 1;
pub(super) const STREAM_PAGE: u64 = 2;

impl Rng {
    /// The `index`-th generator of stream `stream` of `seed`.
    pub(super) fn derive(seed: u64, stream: u64, index: u64) -> Rng {
        Rng(mix(mix(seed ^ mix(stream)) ^ index))
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(super) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub(super) fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A word list with Zipf (s = 1) frequencies, in integers so sampling is exact everywhere.
pub(super) struct WordList {
    pub(super) words: Vec<&'static str>,
    cdf: Vec<u64>,
}

impl WordList {
    pub(super) fn new(text: &'static str) -> WordList {
        let words: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        let mut total = 0u64;
        let cdf = (0..words.len())
            .map(|rank| {
                total += (1u64 << 32) / (rank as u64 + 2);
                total
            })
            .collect();
        WordList { words, cdf }
    }

    /// A rank drawn with Zipf frequencies.
    pub(super) fn zipf(&self, rng: &mut Rng) -> u16 {
        let total = *self.cdf.last().unwrap_or(&1);
        let x = rng.below(total as usize) as u64;
        self.cdf.partition_point(|&c| c <= x) as u16
    }

    /// A rank drawn uniformly past the `skip` most frequent words (a content word).
    pub(super) fn content(&self, rng: &mut Rng, skip: usize) -> u16 {
        (skip + rng.below(self.words.len() - skip)) as u16
    }
}

pub(super) struct Vocab {
    pub(super) en: WordList,
    pub(super) zh: WordList,
}

pub(super) fn vocab() -> &'static Vocab {
    static VOCAB: OnceLock<Vocab> = OnceLock::new();
    VOCAB.get_or_init(|| Vocab {
        en: WordList::new(WORDS_EN),
        zh: WordList::new(WORDS_ZH),
    })
}

/// English content words start past the function words at the top of the list.
pub(super) const EN_SKIP: usize = 60;
pub(super) const ZH_SKIP: usize = 20;

/// One token of generated text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Tok {
    En(u16),
    Zh(u16),
    Particle(u8),
    Comma,
}

impl Tok {
    pub(super) fn word(self, v: &Vocab) -> &'static str {
        match self {
            Tok::En(r) => v.en.words[r as usize],
            Tok::Zh(r) => v.zh.words[r as usize],
            Tok::Particle(i) => ZH_PARTICLES[i as usize],
            Tok::Comma => ",",
        }
    }
}

/// Words a page keeps coming back to (its own, and some of its directory's).
pub(super) fn topic(rng: &mut Rng, v: &Vocab, zh: bool, n: usize) -> Vec<Tok> {
    (0..n)
        .map(|_| {
            if zh {
                Tok::Zh(v.zh.content(rng, ZH_SKIP))
            } else {
                Tok::En(v.en.content(rng, EN_SKIP))
            }
        })
        .collect()
}

/// The tokens of one sentence.
pub(super) fn sentence(
    rng: &mut Rng,
    v: &Vocab,
    zh: bool,
    topic: &[Tok],
    mix_other: bool,
) -> Vec<Tok> {
    let mut out = Vec::new();
    if zh {
        let n = rng.range(5, 12);
        for i in 0..n {
            let tok = if !topic.is_empty() && rng.percent(20) {
                *rng.pick(topic)
            } else if mix_other && rng.percent(5) {
                Tok::En(v.en.content(rng, EN_SKIP))
            } else {
                Tok::Zh(v.zh.zipf(rng))
            };
            out.push(tok);
            if i + 1 < n {
                if rng.percent(10) {
                    out.push(Tok::Comma);
                } else if rng.percent(25) {
                    out.push(Tok::Particle(rng.below(ZH_PARTICLES.len()) as u8));
                }
            }
        }
    } else {
        let n = rng.range(7, 18);
        for i in 0..n {
            let tok = if !topic.is_empty() && rng.percent(18) {
                *rng.pick(topic)
            } else if mix_other && rng.percent(2) {
                Tok::Zh(v.zh.content(rng, ZH_SKIP))
            } else {
                Tok::En(v.en.zipf(rng))
            };
            out.push(tok);
            if i >= 2 && i + 2 < n && rng.percent(6) {
                out.push(Tok::Comma);
            }
        }
    }
    out
}

/// Renders a sentence: English words spaced, the first capitalized; Chinese words run
/// together, with a space around an English word.
pub(super) fn render_sentence(out: &mut String, toks: &[Tok], v: &Vocab, zh: bool) {
    if zh {
        let mut last_en = false;
        for (i, &t) in toks.iter().enumerate() {
            match t {
                Tok::En(_) => {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(t.word(v));
                    last_en = true;
                    continue;
                }
                Tok::Comma => out.push('，'),
                _ => {
                    if last_en {
                        out.push(' ');
                    }
                    out.push_str(t.word(v));
                }
            }
            last_en = false;
        }
        out.push('。');
    } else {
        for (i, &t) in toks.iter().enumerate() {
            match t {
                Tok::Comma => out.push(','),
                _ => {
                    if i > 0 {
                        out.push(' ');
                    }
                    let w = t.word(v);
                    if i == 0 {
                        push_capitalized(out, w);
                    } else {
                        out.push_str(w);
                    }
                }
            }
        }
        out.push('.');
    }
}

pub(super) fn push_capitalized(out: &mut String, word: &str) {
    let mut chars = word.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
}

pub(super) fn title_case(words: &[&str]) -> String {
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if i > 0 && SMALL_WORDS.contains(w) {
            out.push_str(w);
        } else {
            push_capitalized(&mut out, w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rng_is_splitmix64_and_its_streams_are_stable() {
        // The reference sequence of splitmix64 from state 0.
        let mut reference = Rng(0);
        assert_eq!(reference.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(reference.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut rng = Rng::derive(7, STREAM_PAGE, 3);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        let mut again = Rng::derive(7, STREAM_PAGE, 3);
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        assert_ne!(
            Rng::derive(7, STREAM_PAGE, 4).next_u64(),
            Rng::derive(7, STREAM_PAGE, 3).next_u64()
        );
    }

    #[test]
    fn zipf_favours_the_top_of_the_list() {
        let v = vocab();
        assert_eq!(v.en.words.len(), 3000);
        assert_eq!(v.zh.words.len(), 3000);
        let mut rng = Rng::derive(1, 9, 0);
        let top = (0..10_000).filter(|_| v.en.zipf(&mut rng) < 10).count();
        // The 10 most frequent of 3,000 words carry about a third of the mass at s = 1.
        assert!((2_000..4_500).contains(&top), "{top}");
    }
}
