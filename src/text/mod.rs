//! Text shared by ingest, index, search, tools and the doors, a file per concept:
//! `normalize.rs` (Unicode normal forms, the query's normalization, exact-match keys),
//! `escape.rs` (URI components, XML, the terminal), `chars.rs` (character classes, truncation).
//! Callers name the items from here.

mod chars;
mod escape;
mod normalize;

pub use chars::truncate_chars;
pub(crate) use chars::{is_cjk, is_forbidden_path_char, is_han, is_normal_ideograph};
pub use escape::{encode_uri_component, percent_decode_once, terminal_safe_lines};
pub(crate) use escape::{terminal_safe, xml_escape};
pub(crate) use normalize::{
    collapse_whitespace, exact_key, is_nfc, is_nfkc, nfc, normalize_query_text,
};
