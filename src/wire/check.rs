//! Checks MessagePack bytes against the protocol definition, without the Rust types: what a frame
//! from any implementation must look like. Used by the tests that keep the Rust types and
//! `protocol/definition.json` in agreement, and by the conformance suite on a peer's frames.

use std::collections::BTreeSet;

use super::msgpack::Cursor;
use crate::definition::{Definition, FieldDef, TypeDef, TypeExpr, TypeKind};
use crate::messages::Version;

/// How strictly to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// What sparkwire's encoder writes: every field of the version present, in definition order,
    /// and nothing else.
    Exact,
    /// What every decoder must accept: fields in any order, optional fields may be missing, unknown
    /// fields are skipped (a newer revision may have added them).
    Lenient,
}

/// Where and how bytes disagree with the definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {path}: {problem}")]
pub struct Mismatch {
    /// Path to the value, such as `RegisterWorker.resources["gpu"].addresses[0]`.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

struct Checker<'d> {
    def: &'d Definition,
    version: Version,
    strict: Strictness,
}

fn mismatch(path: &str, problem: impl Into<String>) -> Mismatch {
    Mismatch {
        path: path.to_string(),
        problem: problem.into(),
    }
}

/// Checks that `bytes` hold exactly one message body `{Name: {fields}}` of `family` as `version`
/// lays it out.
pub fn check_message(
    def: &Definition,
    family: &str,
    version: Version,
    bytes: &[u8],
    strict: Strictness,
) -> Result<(), Mismatch> {
    let ck = Checker {
        def,
        version,
        strict,
    };
    let mut c = Cursor::new(bytes);
    let w = |e: super::Error| mismatch("message", e.to_string());
    let n = c.map_len().map_err(w)?;
    if n != 1 {
        return Err(mismatch(
            "message",
            format!("a message is a one-entry map, found {n} entries"),
        ));
    }
    let name = c.str().map_err(w)?;
    let Some(msg) = def.message(family, name) else {
        return Err(mismatch(
            name,
            format!("no {family} message named {name:?} in the definition"),
        ));
    };
    if !msg.exists_in(version) {
        return Err(mismatch(
            name,
            format!("{name} does not exist in {version}"),
        ));
    }
    let fields: Vec<&FieldDef> = msg.fields_in(version).collect();
    ck.check_struct(&fields, &mut c, name)?;
    if !c.rest().is_empty() {
        return Err(mismatch(
            name,
            format!("{} bytes follow the message", c.rest().len()),
        ));
    }
    Ok(())
}

/// Checks that `bytes` hold exactly one value of type `ty` as `version` lays it out.
pub fn check_value(
    def: &Definition,
    ty: &TypeExpr,
    version: Version,
    bytes: &[u8],
    strict: Strictness,
) -> Result<(), Mismatch> {
    let ck = Checker {
        def,
        version,
        strict,
    };
    let mut c = Cursor::new(bytes);
    ck.check(ty, &mut c, "value")?;
    if !c.rest().is_empty() {
        return Err(mismatch(
            "value",
            format!("{} bytes follow the value", c.rest().len()),
        ));
    }
    Ok(())
}

/// A string or integer at the cursor, for the order of map keys and set elements (strings by
/// their UTF-8 bytes, integers by value); `None` for other types, which have no order.
fn order_key<'a>(ty: &TypeExpr, c: &Cursor<'a>) -> Option<OrderKey<'a>> {
    let mut peek = *c;
    match ty {
        TypeExpr::String => peek.str().ok().map(|s| OrderKey::Str(s.as_bytes())),
        TypeExpr::I32 | TypeExpr::I64 => peek.int().ok().map(OrderKey::Int),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum OrderKey<'a> {
    Int(i128),
    Str(&'a [u8]),
}

/// Map keys and set elements are distinct and ascending (SPEC §4.1).
fn ascending<'a>(
    last: &mut Option<OrderKey<'a>>,
    now: Option<OrderKey<'a>>,
    path: &str,
    what: &str,
) -> Result<(), Mismatch> {
    if let (Some(prev), Some(cur)) = (*last, now) {
        if cur == prev {
            return Err(mismatch(path, format!("{what} given twice")));
        }
        if cur < prev {
            return Err(mismatch(
                path,
                format!("{what} out of order: distinct and ascending"),
            ));
        }
    }
    if now.is_some() {
        *last = now;
    }
    Ok(())
}

impl Checker<'_> {
    fn check(&self, ty: &TypeExpr, c: &mut Cursor<'_>, path: &str) -> Result<(), Mismatch> {
        let w = |e: super::Error| mismatch(path, e.to_string());
        match ty {
            TypeExpr::String => c.str().map(drop).map_err(w),
            TypeExpr::Bool => c.bool().map(drop).map_err(w),
            TypeExpr::I32 | TypeExpr::I64 => {
                let v = c.int().map_err(w)?;
                let fits = if *ty == TypeExpr::I32 {
                    i32::try_from(v).is_ok()
                } else {
                    i64::try_from(v).is_ok()
                };
                if fits {
                    Ok(())
                } else {
                    Err(mismatch(path, format!("{v} does not fit {ty}")))
                }
            }
            TypeExpr::F64 => {
                let v = c.float().map_err(w)?;
                if v.is_finite() {
                    Ok(())
                } else {
                    Err(mismatch(path, format!("{v} is not a finite number")))
                }
            }
            TypeExpr::Bytes => c.bin().map(drop).map_err(w),
            TypeExpr::Option(inner) => {
                if c.nil() {
                    Ok(())
                } else {
                    self.check(inner, c, path)
                }
            }
            TypeExpr::List(inner) => {
                let n = c.array_len().map_err(w)?;
                for i in 0..n {
                    self.check(inner, c, &format!("{path}[{i}]"))?;
                }
                Ok(())
            }
            TypeExpr::Set(inner) => {
                let n = c.array_len().map_err(w)?;
                let mut last = None;
                for i in 0..n {
                    let item_path = format!("{path}[{i}]");
                    let now = order_key(inner, c);
                    self.check(inner, c, &item_path)?;
                    ascending(&mut last, now, &item_path, "set element")?;
                }
                Ok(())
            }
            TypeExpr::Tuple(items) => {
                let n = c.array_len().map_err(w)?;
                if n != items.len() as u64 {
                    return Err(mismatch(
                        path,
                        format!("a {ty} has {} elements, found {n}", items.len()),
                    ));
                }
                for (i, t) in items.iter().enumerate() {
                    self.check(t, c, &format!("{path}.{i}"))?;
                }
                Ok(())
            }
            TypeExpr::Map(k, v) => {
                let n = c.map_len().map_err(w)?;
                let mut last = None;
                for i in 0..n {
                    let key_path = format!("{path}{{key {i}}}");
                    let now = order_key(k, c);
                    self.check(k, c, &key_path)?;
                    ascending(&mut last, now, &key_path, "map key")?;
                    self.check(v, c, &format!("{path}{{value {i}}}"))?;
                }
                Ok(())
            }
            TypeExpr::Named(name) => {
                let Some(t) = self.def.type_def(name) else {
                    return Err(mismatch(path, format!("the definition has no type {name}")));
                };
                self.check_named(t, c, path)
            }
        }
    }

    fn check_named(&self, t: &TypeDef, c: &mut Cursor<'_>, path: &str) -> Result<(), Mismatch> {
        let w = |e: super::Error| mismatch(path, e.to_string());
        match t.kind {
            TypeKind::Struct => {
                let fields: Vec<&FieldDef> = t
                    .fields
                    .iter()
                    .filter(|f| f.exists_in(self.version))
                    .collect();
                self.check_struct(&fields, c, path)
            }
            TypeKind::Enum => {
                let s = c.str().map_err(w)?;
                if t.values.iter().any(|v| v == s) {
                    Ok(())
                } else {
                    Err(mismatch(
                        path,
                        format!("{s:?} is not a {}: {}", t.name, t.values.join(", ")),
                    ))
                }
            }
            TypeKind::Union => {
                let n = c.map_len().map_err(w)?;
                if n != 1 {
                    return Err(mismatch(
                        path,
                        format!("a {} is a one-entry map, found {n} entries", t.name),
                    ));
                }
                let variant = c.str().map_err(w)?;
                let Some(v) = t.variants.iter().find(|v| v.name == variant) else {
                    return Err(mismatch(
                        path,
                        format!("{variant:?} is not a variant of {}", t.name),
                    ));
                };
                let fields: Vec<&FieldDef> = v
                    .fields
                    .iter()
                    .filter(|f| f.exists_in(self.version))
                    .collect();
                self.check_struct(&fields, c, &format!("{path}.{variant}"))
            }
        }
    }

    fn check_struct(
        &self,
        fields: &[&FieldDef],
        c: &mut Cursor<'_>,
        path: &str,
    ) -> Result<(), Mismatch> {
        let w = |e: super::Error| mismatch(path, e.to_string());
        let n = c.map_len().map_err(w)?;
        let mut seen = BTreeSet::new();
        for i in 0..n {
            let key = c.str().map_err(w)?;
            let field_path = format!("{path}.{key}");
            let Some(pos) = fields.iter().position(|f| f.name == key) else {
                if self.strict == Strictness::Exact {
                    return Err(mismatch(
                        &field_path,
                        format!("no field {key:?} in {}", self.version),
                    ));
                }
                c.value().map_err(w)?;
                continue;
            };
            if !seen.insert(pos) {
                return Err(mismatch(&field_path, "field given twice"));
            }
            if self.strict == Strictness::Exact && pos != i as usize {
                return Err(mismatch(
                    &field_path,
                    format!("field is at position {i}, the definition puts it at {pos}"),
                ));
            }
            let ty = fields[pos]
                .type_expr()
                .map_err(|e| mismatch(&field_path, e.to_string()))?;
            self.check(&ty, c, &field_path)?;
        }
        for (pos, f) in fields.iter().enumerate() {
            if seen.contains(&pos) {
                continue;
            }
            let optional = f.ty.starts_with("option<");
            if self.strict == Strictness::Exact || !optional {
                return Err(mismatch(
                    &format!("{path}.{}", f.name),
                    "required field missing",
                ));
            }
        }
        Ok(())
    }
}
