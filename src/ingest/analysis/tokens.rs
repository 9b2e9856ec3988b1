//! The token buffer an analysis fills, kept per thread between analyses.

use std::cell::RefCell;

use tantivy::tokenizer::Token;

use super::runs::normalize_into;
use super::SECTION_MARK;

/// Tokens most kept for reuse by a thread (a longer analysis frees its excess).
pub(super) const SPARE_TOKENS: usize = 1 << 16;

thread_local! {
    /// The token buffer of this thread's last finished analysis.
    static SPARE: RefCell<Vec<Token>> = const { RefCell::new(Vec::new()) };
}

/// The tokens of one analysis, in a buffer taken over from the thread's last analysis: a slot
/// keeps its text's allocation, so analysing a page allocates nothing per token.
pub(super) struct Tokens {
    pub(super) slots: Vec<Token>,
    pub(super) len: usize,
}

impl Tokens {
    pub(super) fn new() -> Self {
        let slots = SPARE.with(|spare| std::mem::take(&mut *spare.borrow_mut()));
        Tokens { slots, len: 0 }
    }

    pub(super) fn next_position(&self) -> usize {
        self.as_slice().last().map_or(0, |t| t.position + 1)
    }

    pub(super) fn as_slice(&self) -> &[Token] {
        &self.slots[..self.len]
    }

    /// Adds `raw`, normalized, at the next position; nothing when it normalizes to nothing.
    pub(super) fn push(&mut self, raw: &str, from: usize, to: usize) {
        let position = self.next_position();
        self.push_at(raw, from, to, position);
    }

    /// The slot after the last token, its text emptied (its allocation kept).
    pub(super) fn free_slot(&mut self) -> &mut Token {
        if self.len == self.slots.len() {
            self.slots.push(Token::default());
        }
        let token = &mut self.slots[self.len];
        token.text.clear();
        token
    }

    /// Adds [`SECTION_MARK`] `skip` positions after the next one (at byte `at` of the text,
    /// spanning nothing).
    pub(super) fn push_mark(&mut self, at: usize, skip: usize) {
        let position = self.next_position() + skip;
        let token = self.free_slot();
        token.text.push_str(SECTION_MARK);
        token.offset_from = at;
        token.offset_to = at;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }

    /// Adds `raw`, normalized, at `position`; nothing when it normalizes to nothing.
    pub(super) fn push_at(&mut self, raw: &str, from: usize, to: usize, position: usize) {
        let token = self.free_slot();
        normalize_into(raw, &mut token.text);
        if token.text.is_empty() {
            return;
        }
        token.offset_from = from;
        token.offset_to = to;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }
}

impl Drop for Tokens {
    fn drop(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        slots.truncate(SPARE_TOKENS);
        // `try_with`: a stream dropped while the thread's locals are torn down frees its buffer.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if slots.len() > spare.len() {
                *spare = slots;
            }
        });
    }
}
