//! Messages from their readable JSON, as the golden vectors and the traces of
//! `protocol/trace.md` write them: structs are JSON objects keyed by field name, as MessagePack
//! holds them to maps (SPEC §4.1).

use serde_json::Value;

use super::error::Error;
use crate::messages::{Family, Version};

/// Decodes a message's readable JSON (`{"Name": {fields…}}`, as vectors and traces write it) into the Rust type for `version`.
pub fn value_from_json<F: Family>(value: &Value, version: Version) -> Result<F, Error> {
    let bad = |detail: String| Error::BadEnvelope(detail);
    let obj = value
        .as_object()
        .ok_or_else(|| bad("a message value is a JSON object".into()))?;
    let (name, fields) = match obj.iter().next() {
        Some(entry) if obj.len() == 1 => entry,
        _ => return Err(bad("a message value has exactly one key, its name".into())),
    };
    super::body::fields_from(name, version, super::strict::Strict(fields.clone()))
}

/// Reads a plain value (a failure's error, a reply's thread dump or loss reason) from its
/// readable JSON, holding structs to JSON objects as MessagePack holds them to maps: a struct
/// written as a JSON array is refused (SPEC §4.1).
pub fn plain_from_json<T: serde::de::DeserializeOwned>(
    value: &Value,
) -> Result<T, serde_json::Error> {
    T::deserialize(super::strict::Strict(value.clone()))
}

/// Deserializes the fields of the message `name` of family `F` from a readable (JSON)
/// deserializer under the layout rules of [`value_from_json`] (a struct written as an array is
/// refused), without building a `serde_json::Value` first; `None` when `F` has no such message.
pub fn fields_from_readable<'de, F: Family, D: serde::Deserializer<'de>>(
    name: &str,
    version: Version,
    d: D,
) -> Option<Result<F, D::Error>> {
    F::deserialize_fields(name, version, super::strict::Strict(d))
}

/// Deserializes a plain value as [`plain_from_json`] does, from any readable deserializer.
pub fn plain_from_readable<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<T, D::Error> {
    T::deserialize(super::strict::Strict(d))
}
