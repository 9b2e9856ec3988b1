//! Closed sets of names on the wire: an enum whose every value has one spelling in the
//! contract, the CLI or a report. `wire_enum!` declares the enum once; its spellings, its
//! parsing, its serde form and its JSON Schema (`{"type": "string", "enum": [...]}`) all come
//! from that one list, so a value added to it reaches every door.

/// Declares `enum $name { Variant = "spelling", ... }` with:
/// `ALL` and `NAMES` (declaration order), `as_str`, `parse` (exact spelling), `FromStr`
/// (an error that lists the spellings), `Display`, serde `Serialize`/`Deserialize` as the
/// spelling and a `schemars::JsonSchema` that is the string enum, inlined where it is used.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$( $name::$variant ),+];
            /// Every spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$( $text ),+];

            /// The value's spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The value spelled exactly `text`.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl $crate::wire::WireName for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // `pad`, so that a width (`{:<14}`) lays the spelling out as it would a `str`.
                f.pad(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::wire::UnknownName;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                $name::parse(text).ok_or_else(|| $crate::wire::UnknownName {
                    given: text.to_string(),
                    allowed: $name::NAMES,
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                $name::parse(&text)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&text, $name::NAMES))
            }
        }

        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": $name::NAMES })
            }
        }
    };
}

pub(crate) use wire_enum;

/// What every `wire_enum!` has, for code that takes any of them (the CLI's value parsers).
pub trait WireName: Copy + std::str::FromStr<Err = UnknownName> + Send + Sync + 'static {
    /// Every spelling, in declaration order.
    const NAMES: &'static [&'static str];

    /// The value's spelling.
    fn as_str(self) -> &'static str;
}

/// A spelling that names no value of a closed set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub given: String,
    pub allowed: &'static [&'static str],
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not one of: {}",
            crate::text::truncate_chars(&self.given, 64),
            self.allowed.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    wire_enum! {
        /// A test set.
        enum Fruit {
            Apple = "apple",
            BloodOrange = "blood-orange",
        }
    }

    #[test]
    fn every_form_comes_from_the_one_list() {
        assert_eq!(Fruit::NAMES, ["apple", "blood-orange"]);
        assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::BloodOrange]);
        for fruit in Fruit::ALL {
            assert_eq!(Fruit::parse(fruit.as_str()), Some(*fruit));
            assert_eq!(fruit.to_string(), fruit.as_str());
            assert_eq!(format!("{fruit:<14}|"), format!("{:<14}|", fruit.as_str()));
            let json = serde_json::to_value(fruit).unwrap();
            assert_eq!(json, fruit.as_str());
            assert_eq!(serde_json::from_value::<Fruit>(json).unwrap(), *fruit);
        }
        assert_eq!(Fruit::parse("Apple"), None);
        let error = "pear".parse::<Fruit>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "`pear` is not one of: apple, blood-orange"
        );
        let refused = serde_json::from_value::<Fruit>(serde_json::json!("pear")).unwrap_err();
        assert!(refused.to_string().contains("blood-orange"), "{refused}");
        let schema = serde_json::to_value(schemars::schema_for!(Fruit)).unwrap();
        assert_eq!(schema["type"], "string");
        assert_eq!(schema["enum"], serde_json::json!(["apple", "blood-orange"]));
    }
}
