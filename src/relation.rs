//! The direction of a relation, as the bundle format and the output contract spell it
//! (`outgoing`, `incoming`, `bidirectional`: the contract's enum), seen from the relation's
//! source page. It is written and read as that word, so the files that store it (the catalog, the
//! ingest cache) hold the same bytes as when it was a string.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A relation's direction. Ordered as its word is (`bidirectional` < `incoming` < `outgoing`),
/// so relations sort as they did by their text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Bidirectional,
    Incoming,
    Outgoing,
}

impl Direction {
    pub const ALL: [Direction; 3] = [
        Direction::Outgoing,
        Direction::Incoming,
        Direction::Bidirectional,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Direction::Outgoing => "outgoing",
            Direction::Incoming => "incoming",
            Direction::Bidirectional => "bidirectional",
        }
    }

    /// The direction of `word`, if it is one.
    pub fn parse(word: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.as_str() == word)
    }

    /// The same relation seen from its target.
    pub const fn flipped(self) -> Direction {
        match self {
            Direction::Outgoing => Direction::Incoming,
            Direction::Incoming => Direction::Outgoing,
            Direction::Bidirectional => Direction::Bidirectional,
        }
    }

    /// Two relations between the same pages taken as one: the same one-way direction stays,
    /// anything else is both ways.
    pub const fn merged(self, other: Direction) -> Direction {
        match (self, other) {
            (Direction::Outgoing, Direction::Outgoing) => Direction::Outgoing,
            (Direction::Incoming, Direction::Incoming) => Direction::Incoming,
            _ => Direction::Bidirectional,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Direction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Direction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Direction::parse(&word).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown direction `{}`: expected outgoing, incoming or bidirectional",
                crate::text::truncate_chars(&word, 64)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_order_flips_and_merges() {
        for d in Direction::ALL {
            assert_eq!(Direction::parse(d.as_str()), Some(d));
            assert_eq!(d.flipped().flipped(), d);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{d}\""));
            assert_eq!(serde_json::from_str::<Direction>(&json).unwrap(), d);
            // Stored as its word: the same bytes as the string.
            assert_eq!(
                postcard::to_allocvec(&d).unwrap(),
                postcard::to_allocvec(d.as_str()).unwrap()
            );
        }
        let mut sorted = Direction::ALL;
        sorted.sort();
        let mut words = Direction::ALL.map(Direction::as_str);
        words.sort();
        assert_eq!(sorted.map(Direction::as_str), words);
        assert_eq!(
            Direction::Outgoing.merged(Direction::Incoming),
            Direction::Bidirectional
        );
        assert_eq!(
            Direction::Incoming.merged(Direction::Incoming),
            Direction::Incoming
        );
        let bad = serde_json::from_str::<Direction>("\"sideways\"").unwrap_err();
        assert!(bad
            .to_string()
            .contains("expected outgoing, incoming or bidirectional"));
    }
}
