//! A JSON document that keeps its keys in file order, so adding a server to a person's config
//! file changes only that server's entry (serde_json's own map sorts keys unless its
//! `preserve_order` feature is on, which this crate does not enable). Whitespace and layout are
//! not kept; a file with comments is not JSON and is refused before it is read here.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// One JSON value, objects as ordered key/value lists.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Doc {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

impl Doc {
    /// A string value.
    pub(crate) fn string(s: impl Into<String>) -> Self {
        Self::String(s.into())
    }

    /// The value of `key` in an object.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Doc> {
        match self {
            Self::Object(fields) => fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key` in an object: in place when it is there, else at the end.
    pub(crate) fn set(&mut self, key: &str, value: Doc) {
        if let Self::Object(fields) = self {
            match fields.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => fields.push((key.to_owned(), value)),
            }
        }
    }

    /// Takes `key` out of an object; whether it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        match self {
            Self::Object(fields) => {
                let before = fields.len();
                fields.retain(|(k, _)| k != key);
                fields.len() != before
            }
            _ => false,
        }
    }

    /// Gives the key `from` of an object the name `to`, in place; whether it was there.
    pub(crate) fn rename(&mut self, from: &str, to: &str) -> bool {
        match self {
            Self::Object(fields) => match fields.iter_mut().find(|(k, _)| k == from) {
                Some((k, _)) => {
                    *k = to.to_owned();
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// The value of `key` in an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Doc> {
        match self {
            Self::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether an object has `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        matches!(self, Self::Object(fields) if fields.iter().any(|(k, _)| k == key))
    }

    /// The document as pretty-printed JSON text, ending with a newline.
    pub(crate) fn to_pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl Serialize for Doc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => s.serialize_unit(),
            Self::Bool(b) => s.serialize_bool(*b),
            Self::Number(n) => n.serialize(s),
            Self::String(t) => s.serialize_str(t),
            Self::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Self::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_none<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Doc, E> {
        Ok(Doc::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Doc, E> {
        serde_json::Number::from_f64(v).map(Doc::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Doc, E> {
        Ok(Doc::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Doc, E> {
        Ok(Doc::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Doc::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut fields = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Doc>()? {
            fields.push((k, v));
        }
        Ok(Doc::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_numbers_their_value() {
        let text = r#"{"zeta": 1, "alpha": {"b": 2.5, "a": [true, null, -3]}, "mid": "x"}"#;
        let mut doc: Doc = serde_json::from_str(text).unwrap();
        doc.set("new", Doc::string("y"));
        doc.set("alpha", Doc::Null);
        let back: serde_json::Value = serde_json::from_str(&doc.to_pretty()).unwrap();
        assert_eq!(back, serde_json::json!({"zeta": 1, "alpha": null, "mid": "x", "new": "y"}));
        let keys: Vec<&str> = match &doc {
            Doc::Object(f) => f.iter().map(|(k, _)| k.as_str()).collect(),
            _ => unreachable!(),
        };
        assert_eq!(keys, ["zeta", "alpha", "mid", "new"]);
        let again: Doc = serde_json::from_str(r#"{"b": 2.5, "a": [true, null, -3]}"#).unwrap();
        assert_eq!(serde_json::to_string(&again).unwrap(), r#"{"b":2.5,"a":[true,null,-3]}"#);
    }
}
