//! OKF signals (docs/rules.md#okf): lifecycle status, trust tier, staleness, generation
//! and verification instants, and source count, computed from a page's frontmatter. "Today" is
//! passed in, so a test can pin it.

use serde::Serialize;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, UtcOffset};

crate::wire::wire_enum! {
    /// A page's lifecycle status (frontmatter `status`; the `okfStatus` filter).
    pub enum OkfStatus {
        Draft = "draft",
        Stable = "stable",
        Deprecated = "deprecated",
    }
}

crate::wire::wire_enum! {
    /// How a page was verified (frontmatter `verified`; the `okfTrustTier` filter).
    pub enum TrustTier {
        Unverified = "unverified",
        MachineConfirmed = "machine-confirmed",
        HumanReviewed = "human-reviewed",
    }
}

crate::wire::wire_enum! {
    /// Whether a page is past its `stale_after` date (the `okfFreshness` filter).
    pub enum Freshness {
        Fresh = "fresh",
        Stale = "stale",
    }
}

crate::wire::wire_enum! {
    /// Where `generatedAt` was read: the frontmatter's `generated.at`, or its older
    /// `timestamp`.
    pub enum GeneratedAtSource {
        Generated = "generated",
        LegacyTimestamp = "legacy_timestamp",
    }
}

/// `OkfSignals` of the contract: eight required, nullable fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OkfSignals {
    pub effective_status: Option<OkfStatus>,
    pub trust_tier: Option<TrustTier>,
    pub is_stale: Option<bool>,
    pub stale_after: Option<String>,
    pub generated_at: Option<String>,
    pub generated_at_source: Option<GeneratedAtSource>,
    pub latest_verified_at: Option<String>,
    pub source_count: Option<u64>,
}

const DATE_FORMAT: &[time::format_description::FormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// Parses `YYYY-MM-DD`.
pub fn parse_date(text: &str) -> Option<Date> {
    if text.len() != 10 {
        return None;
    }
    Date::parse(text, DATE_FORMAT).ok()
}

/// Parses an RFC 3339 instant with `Z` or an offset and renders it as
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (JavaScript's `toISOString`).
fn iso_instant(value: &Value) -> Option<(OffsetDateTime, String)> {
    let text = value.as_str()?.trim();
    let instant = OffsetDateTime::parse(text, &Rfc3339)
        .ok()?
        .to_offset(UtcOffset::UTC);
    let rendered = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        instant.year(),
        u8::from(instant.month()),
        instant.day(),
        instant.hour(),
        instant.minute(),
        instant.second(),
        instant.millisecond()
    );
    Some((instant, rendered))
}

fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn trust(frontmatter: &Map<String, Value>) -> (Option<TrustTier>, Option<String>) {
    let entries: Vec<&Value> = match frontmatter.get("verified") {
        None => return (Some(TrustTier::Unverified), None),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        Some(_) => return (None, None),
    };
    if entries.is_empty() {
        return (Some(TrustTier::Unverified), None);
    }
    let mut human = false;
    let mut latest: Option<(OffsetDateTime, String)> = None;
    for entry in entries {
        let Some(by) = non_empty_str(entry.get("by")) else {
            return (None, None);
        };
        let Some(at) = entry.get("at").and_then(iso_instant) else {
            return (None, None);
        };
        human |= by.trim().starts_with("human:");
        if latest.as_ref().is_none_or(|(t, _)| at.0 > *t) {
            latest = Some(at);
        }
    }
    let tier = if human {
        TrustTier::HumanReviewed
    } else {
        TrustTier::MachineConfirmed
    };
    (Some(tier), latest.map(|(_, s)| s))
}

fn source_count(frontmatter: &Map<String, Value>) -> Option<u64> {
    let sources = match frontmatter.get("sources") {
        None => return Some(0),
        Some(Value::Array(items)) => items,
        Some(_) => return None,
    };
    let mut ids = std::collections::BTreeSet::new();
    for source in sources {
        let id = non_empty_str(source.get("id"))?;
        non_empty_str(source.get("resource"))?;
        if !ids.insert(id.to_string()) {
            return None;
        }
        if let Some(count) = source.get("usage_count") {
            count.as_u64()?;
        }
        if let Some(modified) = source.get("last_modified") {
            let text = modified.as_str()?;
            if iso_instant(modified).is_none() && parse_date(text).is_none() {
                return None;
            }
        }
    }
    Some(sources.len() as u64)
}

impl OkfSignals {
    /// The page's freshness, when it has a `stale_after` date.
    pub fn freshness(&self) -> Option<Freshness> {
        self.is_stale.map(|stale| {
            if stale {
                Freshness::Stale
            } else {
                Freshness::Fresh
            }
        })
    }

    /// Computes the signals of `frontmatter` as of `today` (UTC date).
    pub(crate) fn compute(frontmatter: &Map<String, Value>, today: Date) -> Self {
        let effective_status = match frontmatter.get("status") {
            None => Some(OkfStatus::Stable),
            Some(Value::String(s)) => OkfStatus::parse(s),
            Some(_) => None,
        };
        let (trust_tier, latest_verified_at) = trust(frontmatter);
        let stale_date = frontmatter
            .get("stale_after")
            .and_then(Value::as_str)
            .and_then(parse_date);
        let generated = frontmatter.get("generated").and_then(|g| {
            g.as_object()?;
            non_empty_str(g.get("by"))?;
            g.get("at").and_then(iso_instant)
        });
        let (generated_at, generated_at_source) = match generated {
            Some((_, at)) => (Some(at), Some(GeneratedAtSource::Generated)),
            None => match frontmatter.get("timestamp").and_then(iso_instant) {
                Some((_, at)) => (Some(at), Some(GeneratedAtSource::LegacyTimestamp)),
                None => (None, None),
            },
        };
        OkfSignals {
            effective_status,
            trust_tier,
            is_stale: stale_date.map(|d| d <= today),
            stale_after: stale_date.map(|d| d.format(DATE_FORMAT).unwrap_or_default()),
            generated_at,
            generated_at_source,
            latest_verified_at,
            source_count: source_count(frontmatter),
        }
    }
}

/// Today's UTC date.
pub fn utc_today() -> Date {
    OffsetDateTime::now_utc().date()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signals(v: Value) -> OkfSignals {
        OkfSignals::compute(v.as_object().unwrap(), parse_date("2026-06-01").unwrap())
    }

    #[test]
    fn defaults_for_empty_frontmatter() {
        let s = signals(json!({}));
        assert_eq!(s.effective_status, Some(OkfStatus::Stable));
        assert_eq!(s.trust_tier, Some(TrustTier::Unverified));
        assert_eq!(s.is_stale, None);
        assert_eq!(s.source_count, Some(0));
    }

    #[test]
    fn verified_and_stale() {
        let s = signals(json!({
            "status": "draft",
            "verified": [{"by": "human:ana", "at": "2026-01-02T03:04:05+01:00"}, {"by": "bot", "at": "2025-01-01T00:00:00Z"}],
            "stale_after": "2026-06-01",
            "generated": {"by": "x", "at": "2026-07-13T00:00:00Z"},
            "sources": [{"id": "a", "resource": "r"}]
        }));
        assert_eq!(s.effective_status, Some(OkfStatus::Draft));
        assert_eq!(s.trust_tier, Some(TrustTier::HumanReviewed));
        assert_eq!(
            s.latest_verified_at.as_deref(),
            Some("2026-01-02T02:04:05.000Z")
        );
        assert_eq!(s.is_stale, Some(true));
        assert_eq!(s.generated_at.as_deref(), Some("2026-07-13T00:00:00.000Z"));
        assert_eq!(s.generated_at_source, Some(GeneratedAtSource::Generated));
        assert_eq!(s.source_count, Some(1));
    }

    #[test]
    fn malformed_values_give_null() {
        let s = signals(json!({"status": "gone", "verified": {"by": ""}, "sources": "x"}));
        assert_eq!(s.effective_status, None);
        assert_eq!(s.trust_tier, None);
        assert_eq!(s.source_count, None);
    }
}
