//! The field names of a tool's `Params`, read from its `Deserialize` impl: serde's derive passes
//! the struct's field names (rename rules applied, in declaration order) to
//! `Deserializer::deserialize_struct`, and a deserializer that only records them reads them
//! without any input. Every door's field list (the parser's known fields, the HTTP routes'
//! parameters, the CLI's flags) comes from here, so a field added to `Params` is in all of them.

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, Visitor};
use serde_json::Value;

/// What every door reads of a tool's input, taken from its `Params`: the field names in
/// declaration order, and the JSON Schema (types, bounds, enums, descriptions).
#[derive(Debug, Clone)]
pub struct ParamsDef {
    pub fields: &'static [&'static str],
    pub schema: Value,
}

impl ParamsDef {
    pub fn of<P: DeserializeOwned + schemars::JsonSchema>() -> Self {
        ParamsDef {
            fields: field_names::<P>(),
            schema: serde_json::to_value(schemars::schema_for!(P)).unwrap_or(Value::Null),
        }
    }

    /// The schema of field `name` (`null` when it has none).
    pub fn property(&self, name: &str) -> &Value {
        &self.schema["properties"][name]
    }
}

/// The field names `T`'s derived `Deserialize` accepts, in declaration order (empty for a type
/// that is not a struct with named fields).
pub(crate) fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut probe = Probe { fields: &[] };
    // The probe always answers with an error once it has the names; nothing is deserialized.
    let _ = T::deserialize(&mut probe);
    probe.fields
}

struct Probe {
    fields: &'static [&'static str],
}

impl<'de> Deserializer<'de> for &mut Probe {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.fields = fields;
        Err(de::Error::custom("field names read"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Example {
        first_field: u8,
        #[serde(rename = "type")]
        kind: Option<String>,
        last: Vec<u8>,
    }

    #[test]
    fn names_come_renamed_and_in_declaration_order() {
        assert_eq!(field_names::<Example>(), ["firstField", "type", "last"]);
        assert!(field_names::<u8>().is_empty());
    }
}
