//! The JSON a config file is read as (object keys in file order, duplicates kept) and the field
//! readers every format uses; each error names the field and says what was expected.

use std::collections::HashSet;
use std::fmt;

use super::spec::{check_header_name, check_header_unique, check_header_value};

pub(super) fn entry_object(value: &Json) -> Result<&[(String, Json)], String> {
    let Json::Object(fields) = value else {
        return Err(format!("the entry must be an object, found {}", value.describe()));
    };
    if let Some(key) = duplicate_key(fields) {
        return Err(format!("field {key:?} appears twice"));
    }
    Ok(fields)
}

pub(super) fn field<'a>(fields: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

pub(super) fn duplicate_key(fields: &[(String, Json)]) -> Option<&str> {
    let mut seen = HashSet::new();
    fields.iter().map(|(k, _)| k.as_str()).find(|k| !seen.insert(*k))
}

pub(super) fn object_field<'a>(fields: &'a [(String, Json)], key: &str) -> Result<Vec<(&'a str, &'a Json)>, String> {
    match field(fields, key) {
        Some(Json::Object(entries)) => Ok(entries.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        Some(other) => Err(format!("{key:?} must be an object, found {}", other.describe())),
        None => Err(format!("{key:?} is required")),
    }
}

pub(super) fn optional_string<'a>(fields: &'a [(String, Json)], key: &str) -> Result<Option<&'a str>, String> {
    match field(fields, key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{key:?} must be a string, found {}", other.describe())),
    }
}

pub(super) fn required_string<'a>(fields: &'a [(String, Json)], key: &str) -> Result<&'a str, String> {
    match optional_string(fields, key)? {
        Some("") => Err(format!("{key:?} must not be empty")),
        Some(s) => Ok(s),
        None => Err(format!("{key:?} is required")),
    }
}

pub(super) fn string_array(fields: &[(String, Json)], key: &str) -> Result<Vec<String>, String> {
    match field(fields, key) {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|item| match item {
                Json::String(s) => Ok(s.clone()),
                other => Err(format!("{key:?} must be an array of strings, found {} in it", other.describe())),
            })
            .collect(),
        Some(other) => Err(format!("{key:?} must be an array of strings, found {}", other.describe())),
    }
}

pub(super) fn string_map(fields: &[(String, Json)], key: &str) -> Result<Vec<(String, String)>, String> {
    let entries = match field(fields, key) {
        None => return Ok(Vec::new()),
        Some(Json::Object(entries)) => entries,
        Some(other) => return Err(format!("{key:?} must be an object of strings, found {}", other.describe())),
    };
    if let Some(dup) = duplicate_key(entries) {
        return Err(format!("{key:?} has {dup:?} twice"));
    }
    entries
        .iter()
        .map(|(k, v)| match v {
            Json::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!("{key:?}: the value of {k:?} must be a string, found {}", other.describe())),
        })
        .collect()
}

/// `env`: names a process can carry (non-empty, no `=`, no NUL), values without NUL.
pub(super) fn env_map(fields: &[(String, Json)]) -> Result<Vec<(String, String)>, String> {
    let env = string_map(fields, "env")?;
    for (key, value) in &env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(format!("env name {key:?} is not usable: it must be non-empty without '=' or NUL"));
        }
        if value.contains('\0') {
            return Err(format!("env {key:?}: the value contains a NUL character"));
        }
    }
    Ok(env)
}

/// `headers`: valid HTTP fields, names unique ignoring case. Values are never echoed in errors.
pub(super) fn header_map(fields: &[(String, Json)]) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in string_map(fields, "headers")? {
        check_header_name(&name)?;
        check_header_value(&name, &value)?;
        if value.trim_matches([' ', '\t']) != value {
            return Err(format!("the value of header {name:?} has leading or trailing whitespace"));
        }
        check_header_unique(&headers, &name)?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// A JSON value that keeps object keys in file order with duplicates (serde_json's `Value` keeps
/// neither), so a repeated server name or header is seen instead of silently overwritten.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Number => "a number",
            Self::String(_) => "a string",
            Self::Array(_) => "an array",
            Self::Object(_) => "an object",
        }
    }

    /// The kind, with the text when it is a short string (for "expected X, found Y").
    pub(super) fn describe(&self) -> String {
        match self {
            Self::String(s) if s.len() <= 80 => format!("the string {s:?}"),
            other => other.kind().to_owned(),
        }
    }

    /// Whether any string in it (keys included) contains `needle`.
    pub(super) fn contains_text(&self, needle: &str) -> bool {
        match self {
            Self::String(s) => s.contains(needle),
            Self::Array(items) => items.iter().any(|i| i.contains_text(needle)),
            Self::Object(fields) => fields.iter().any(|(k, v)| k.contains(needle) || v.contains_text(needle)),
            Self::Null | Self::Bool(_) | Self::Number => false,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some(entry) = map.next_entry::<String, Json>()? {
            fields.push(entry);
        }
        Ok(Json::Object(fields))
    }
}
