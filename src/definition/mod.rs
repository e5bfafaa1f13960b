//! Layer 2: the machine-readable protocol definition, `protocol/definition.json`, compiled into the crate.
//!
//! The file is the one source of truth for routes, kinds, versions and field layouts. The Rust
//! message types follow it: tests encode random values of every message in every version and
//! check the bytes against the file, so any disagreement in a message, field, type or version
//! fails the build's tests ([`crate::wire::check`] is the checker).

#[cfg(feature = "testing")]
pub mod convert;
#[cfg(feature = "testing")]
pub mod markdown;
mod types;
#[cfg(feature = "testing")]
pub mod wireshark;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::messages::Version;
pub use types::{TypeExpr, TypeParseError};

/// The definition file's text, as compiled in.
pub const DEFINITION_JSON: &str = include_str!("../../protocol/definition.json");

/// The whole definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// Always `sparkwire`.
    pub protocol: String,
    /// Revision of the definition within its versions; grows when optional fields are added.
    pub revision: u32,
    /// The protocol versions.
    pub versions: Vec<VersionDef>,
    /// The roles a peer can have.
    pub roles: Vec<RoleDef>,
    /// Shared types: structs, enumerations and unions.
    pub types: Vec<TypeDef>,
    /// Every message of both families.
    pub messages: Vec<MessageDef>,
}

/// A protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionDef {
    /// Its number on the wire.
    pub number: u8,
    /// The Spark release whose message set it is.
    pub spark: String,
    /// Description.
    pub doc: String,
}

/// A role: what kind of peer an endpoint is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleDef {
    /// Role name, as used in routes and the handshake.
    pub name: String,
    /// The family of messages the role speaks.
    pub family: String,
    /// Description.
    pub doc: String,
}

/// What a named type is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeKind {
    /// A map of named fields.
    Struct,
    /// A string out of a fixed set.
    Enum,
    /// One of several variants, each with its own fields.
    Union,
}

/// A shared type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeDef {
    /// Type name.
    pub name: String,
    /// Struct, enum or union.
    pub kind: TypeKind,
    /// Description.
    pub doc: String,
    /// A struct's fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldDef>,
    /// An enumeration's values, in Spark's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// A union's variants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantDef>,
}

/// A variant of a union.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantDef {
    /// Variant name.
    pub name: String,
    /// Description.
    pub doc: String,
    /// Its fields.
    pub fields: Vec<FieldDef>,
}

/// A field of a struct, a variant or a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldDef {
    /// Field name on the wire.
    pub name: String,
    /// Type expression (see [`TypeExpr`]).
    #[serde(rename = "type")]
    pub ty: String,
    /// Description.
    #[serde(default)]
    pub doc: String,
    /// First version with the field (absent: every version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u8>,
    /// Last version with the field (absent: every version from `since`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<u8>,
    /// For a field newer than version 1: the value a decoder fills in when reading version 1, a
    /// conversion expression over the version 1 fields ([`convert`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// `default` in words.
    #[serde(
        default,
        rename = "defaultDoc",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_doc: Option<String>,
    /// For a version-1-only field: how an encoder computes it from the version 2 fields, a
    /// conversion expression ([`convert`]).
    #[serde(default, rename = "fromV2", skip_serializing_if = "Option::is_none")]
    pub from_v2: Option<serde_json::Value>,
    /// `fromV2` in words.
    #[serde(default, rename = "fromV2Doc", skip_serializing_if = "Option::is_none")]
    pub from_v2_doc: Option<String>,
}

impl FieldDef {
    /// Whether `version` has the field.
    pub fn exists_in(&self, version: Version) -> bool {
        let n = version.number();
        self.since.is_none_or(|s| n >= s) && self.until.is_none_or(|u| n <= u)
    }

    /// The parsed type expression.
    pub fn type_expr(&self) -> Result<TypeExpr, types::TypeParseError> {
        TypeExpr::parse(&self.ty)
    }
}

/// How a message is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// One-way.
    Send,
    /// A request expecting exactly one reply (of the type in `reply`) or failure.
    Ask,
    /// The reply to an ask.
    Reply,
    /// Only sent inside one process; never crosses a connection.
    Local,
}

impl MessageKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Send => "send",
            MessageKind::Ask => "ask",
            MessageKind::Reply => "reply",
            MessageKind::Local => "local",
        }
    }
}

/// A message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageDef {
    /// Spark's name, which is its name on the wire.
    pub name: String,
    /// `deploy` or `coarse`.
    pub family: String,
    /// First version with the message.
    pub since: u8,
    /// Roles that send it.
    pub from: Vec<String>,
    /// Roles that receive it.
    pub to: Vec<String>,
    /// How it is used.
    pub kind: MessageKind,
    /// How version 1 uses it, where that differs (Spark 3.0 sent `ExecutorStateChanged` one-way;
    /// Spark 4.0 asks).
    #[serde(default, rename = "kindV1", skip_serializing_if = "Option::is_none")]
    pub kind_v1: Option<MessageKind>,
    /// For asks (and local asks): the reply's type expression, or a message name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Meaning.
    pub doc: String,
    /// Fields, in wire order, across all versions.
    pub fields: Vec<FieldDef>,
}

impl MessageDef {
    /// Whether `version` has the message.
    pub fn exists_in(&self, version: Version) -> bool {
        version.number() >= self.since
    }

    /// How `version` uses the message.
    pub fn kind_in(&self, version: Version) -> MessageKind {
        match (version, self.kind_v1) {
            (Version::V1, Some(k)) => k,
            _ => self.kind,
        }
    }

    /// The versions that have it, as `v1+` or `v2+`.
    pub fn version_range(&self) -> String {
        format!("v{}+", self.since)
    }

    /// `from → to`, with roles joined by `,`.
    pub fn route(&self) -> String {
        format!("{} → {}", self.from.join(","), self.to.join(","))
    }

    /// The kind, with the reply type for asks: `ask → bool`.
    pub fn kind_text(&self) -> String {
        let text = match (&self.kind, &self.reply) {
            (MessageKind::Local, Some(r)) => format!("local (ask → {r})"),
            (kind, Some(r)) => format!("{} → {r}", kind.as_str()),
            (kind, None) => kind.as_str().to_string(),
        };
        match self.kind_v1 {
            Some(k) => format!("{text}; v1: {}", k.as_str()),
            None => text,
        }
    }

    /// The fields `version` has, in wire order.
    pub fn fields_in(&self, version: Version) -> impl Iterator<Item = &FieldDef> {
        self.fields.iter().filter(move |f| f.exists_in(version))
    }
}

impl Definition {
    /// Parses a definition from JSON text.
    pub fn parse(text: &str) -> Result<Definition, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The definition compiled into this crate.
    ///
    /// # Panics
    /// Never in a released build: the embedded file is parsed by this crate's tests.
    pub fn builtin() -> &'static Definition {
        static DEF: OnceLock<Definition> = OnceLock::new();
        DEF.get_or_init(|| match Definition::parse(DEFINITION_JSON) {
            Ok(def) => def,
            Err(e) => panic!("protocol/definition.json compiled into sparkwire is invalid: {e}"),
        })
    }

    /// The message `name` of `family`.
    pub fn message(&self, family: &str, name: &str) -> Option<&MessageDef> {
        self.messages
            .iter()
            .find(|m| m.family == family && m.name == name)
    }

    /// The shared type `name`.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The role `name`.
    pub fn role(&self, name: &str) -> Option<&RoleDef> {
        self.roles.iter().find(|r| r.name == name)
    }
}
