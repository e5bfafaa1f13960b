//! Converting values between protocol versions from the definition alone (SPEC.md §5.1).
//!
//! A field newer than version 1 has a `default` and a version-1-only field a `fromV2`: each is a
//! *conversion expression*, a JSON value that computes the field from the field map of the same
//! struct in the other version (in the readable JSON form of the vectors). [`convert_message`]
//! applies them the way a generic peer would: field by field, recursing into nested structs,
//! lists, maps and unions, so that no per-message code is needed.
//!
//! Expressions are one-key objects:
//!
//! | expression | value |
//! |---|---|
//! | `{"const": v}` | `v` |
//! | `{"field": "name"}` | the field `name` of the struct being converted (`null` when absent) |
//! | `{"var": "item"}`, `"key"`, `"value"` | the element bound by the innermost `forEach` |
//! | `{"get": [e, "k1", "k2", …]}` | object lookups in turn; `null` once a key is absent |
//! | `{"isSet": e}` | whether `e` is not `null` |
//! | `{"not": e}` | Boolean negation |
//! | `{"in": [e, [v, …]]}` | whether `e` is one of the values |
//! | `{"if": [c, t, f]}` | `t` when `c` is `true`, else `f` |
//! | `{"or": [e1, e2]}` | `e1` unless it is `null`, else `e2` |
//! | `{"object": {"k": e, …}}` | an object of the values |
//! | `{"list": [e, …]}` | an array of the values |
//! | `{"forEach": [e, body]}` | `e` an array: the array of `body` for each element (`item`); `e` an object: the object with each value replaced by `body` (`key`, `value`) |
//! | `{"filter": [e, cond]}` | the elements (`item`) of array `e` for which `cond` is `true` |
//! | `{"entries": e}` | an object as an array of `{"key", "value"}`, in key order |
//! | `{"fromEntries": e}` | an array of `{"key", "value"}` as an object (a later key wins) |
//! | `{"keys": e}`, `{"values": e}` | an object's keys, or values, in key order |
//! | `{"without": [e, [k, …]]}` | object `e` without those keys |
//! | `{"merge": [e, …]}` | the objects' entries together (a later key wins) |
//! | `{"toI32": e}` | integer `e` saturated to the i32 range (`null` stays `null`) |
//! | `{"sumI32": e}` | the sum of an array's (or an object's values') integers, saturated to i32 |
//! | `{"sumByKey": e}` | an array of objects of integers as one object: per key, the saturated i32 sum |
//!
//! Keys are strings, as in JSON (an integer-keyed map's keys are their decimal text).

use serde_json::{Map, Value};

use super::{Definition, FieldDef, TypeExpr, TypeKind};
use crate::messages::Version;

/// Why a conversion failed: the definition's expression does not fit the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("converting {path}: {problem}")]
pub struct ConvertError {
    /// Where: `Message.field.…`.
    pub path: String,
    /// What went wrong.
    pub problem: String,
}

fn err(path: &str, problem: impl Into<String>) -> ConvertError {
    ConvertError {
        path: path.to_string(),
        problem: problem.into(),
    }
}

/// Converts the field map `fields` of message `name` of `family` from version `from` to `to`
/// (readable JSON, as in the vectors' `value`s, without the `{Name: …}` wrapper).
pub fn convert_message(
    def: &Definition,
    family: &str,
    name: &str,
    fields: &Value,
    from: Version,
    to: Version,
) -> Result<Value, ConvertError> {
    let msg = def
        .message(family, name)
        .ok_or_else(|| err(name, "no such message"))?;
    Converter { def, from, to }.fields(&msg.fields, fields, name)
}

/// Converts a value of type `ty` from version `from` to `to`.
pub fn convert_value(
    def: &Definition,
    ty: &TypeExpr,
    value: &Value,
    from: Version,
    to: Version,
) -> Result<Value, ConvertError> {
    Converter { def, from, to }.value(ty, value, "value")
}

struct Converter<'d> {
    def: &'d Definition,
    from: Version,
    to: Version,
}

impl Converter<'_> {
    fn value(&self, ty: &TypeExpr, v: &Value, path: &str) -> Result<Value, ConvertError> {
        Ok(match (ty, v) {
            (TypeExpr::Option(_), Value::Null) => Value::Null,
            (TypeExpr::Option(inner), v) => self.value(inner, v, path)?,
            (TypeExpr::List(inner) | TypeExpr::Set(inner), Value::Array(items)) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.value(inner, x, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            (TypeExpr::Tuple(types), Value::Array(items)) if types.len() == items.len() => {
                Value::Array(
                    types
                        .iter()
                        .zip(items)
                        .enumerate()
                        .map(|(i, (t, x))| self.value(t, x, &format!("{path}.{i}")))
                        .collect::<Result<_, _>>()?,
                )
            }
            (TypeExpr::Map(_, vt), Value::Object(m)) => {
                let mut out = Map::new();
                for (k, x) in m {
                    out.insert(k.clone(), self.value(vt, x, &format!("{path}[{k:?}]"))?);
                }
                Value::Object(out)
            }
            (TypeExpr::Named(name), v) => match self.def.type_def(name) {
                Some(t) if t.kind == TypeKind::Struct => self.fields(&t.fields, v, path)?,
                Some(t) if t.kind == TypeKind::Union => {
                    let (variant, inner) = v
                        .as_object()
                        .filter(|o| o.len() == 1)
                        .and_then(|o| o.iter().next())
                        .ok_or_else(|| err(path, "a union is a one-key object"))?;
                    let vd = t
                        .variants
                        .iter()
                        .find(|x| x.name == *variant)
                        .ok_or_else(|| err(path, format!("no variant {variant}")))?;
                    let mut out = Map::new();
                    out.insert(
                        variant.clone(),
                        self.fields(&vd.fields, inner, &format!("{path}.{variant}"))?,
                    );
                    Value::Object(out)
                }
                _ => v.clone(),
            },
            (_, v) => v.clone(),
        })
    }

    /// The field map of version `to` from the field map `v` of version `from`.
    fn fields(&self, fields: &[FieldDef], v: &Value, path: &str) -> Result<Value, ConvertError> {
        let src = v
            .as_object()
            .ok_or_else(|| err(path, "a struct is a JSON object"))?;
        let mut out = Map::new();
        for f in fields.iter().filter(|f| f.exists_in(self.to)) {
            let at = format!("{path}.{}", f.name);
            let ty = f.type_expr().map_err(|e| err(&at, e.to_string()))?;
            let value = if f.exists_in(self.from) {
                match src.get(&f.name) {
                    Some(x) => self.value(&ty, x, &at)?,
                    None => Value::Null,
                }
            } else {
                let expr = if self.to > self.from {
                    f.default.as_ref()
                } else {
                    f.from_v2.as_ref()
                };
                let expr =
                    expr.ok_or_else(|| err(&at, "the field has no conversion for this direction"))?;
                Eval {
                    fields: src,
                    vars: Vec::new(),
                    path: &at,
                }
                .eval(expr)?
            };
            out.insert(f.name.clone(), value);
        }
        Ok(Value::Object(out))
    }
}

struct Eval<'a> {
    fields: &'a Map<String, Value>,
    vars: Vec<(&'static str, Value)>,
    path: &'a str,
}

fn saturate(n: i128) -> Value {
    Value::from(n.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i64)
}

fn int(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

impl Eval<'_> {
    fn bad(&self, problem: impl Into<String>) -> ConvertError {
        err(self.path, problem)
    }

    fn args<'e>(&self, e: &'e Value, n: usize, op: &str) -> Result<&'e [Value], ConvertError> {
        match e.as_array() {
            Some(a) if a.len() == n => Ok(a),
            _ => Err(self.bad(format!("{op} takes an array of {n}"))),
        }
    }

    fn with<T>(
        &mut self,
        bind: &[(&'static str, Value)],
        f: impl FnOnce(&mut Self) -> Result<T, ConvertError>,
    ) -> Result<T, ConvertError> {
        let depth = self.vars.len();
        self.vars.extend(bind.iter().cloned());
        let out = f(self);
        self.vars.truncate(depth);
        out
    }

    fn object(&mut self, e: &Value, op: &str) -> Result<Map<String, Value>, ConvertError> {
        match self.eval(e)? {
            Value::Object(m) => Ok(m),
            Value::Null => Ok(Map::new()),
            other => Err(self.bad(format!("{op} takes an object, found {other}"))),
        }
    }

    fn array(&mut self, e: &Value, op: &str) -> Result<Vec<Value>, ConvertError> {
        match self.eval(e)? {
            Value::Array(a) => Ok(a),
            Value::Null => Ok(Vec::new()),
            other => Err(self.bad(format!("{op} takes an array, found {other}"))),
        }
    }

    fn eval(&mut self, e: &Value) -> Result<Value, ConvertError> {
        let (op, arg) = e
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.iter().next())
            .ok_or_else(|| self.bad(format!("an expression is a one-key object, found {e}")))?;
        Ok(match op.as_str() {
            "const" => arg.clone(),
            "field" => {
                let name = arg.as_str().ok_or_else(|| self.bad("field takes a name"))?;
                self.fields.get(name).cloned().unwrap_or(Value::Null)
            }
            "var" => {
                let name = arg.as_str().ok_or_else(|| self.bad("var takes a name"))?;
                self.vars
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| self.bad(format!("no variable {name}")))?
            }
            "get" => {
                let parts = arg
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| self.bad("get takes [expression, key, …]"))?;
                let mut v = self.eval(&parts[0])?;
                for k in &parts[1..] {
                    let k = k.as_str().ok_or_else(|| self.bad("get keys are strings"))?;
                    v = v.get(k).cloned().unwrap_or(Value::Null);
                }
                v
            }
            "isSet" => Value::Bool(!self.eval(arg)?.is_null()),
            "not" => match self.eval(arg)? {
                Value::Bool(b) => Value::Bool(!b),
                other => return Err(self.bad(format!("not takes a Boolean, found {other}"))),
            },
            "in" => {
                let a = self.args(arg, 2, "in")?;
                let v = self.eval(&a[0])?;
                let set = a[1].as_array().ok_or_else(|| self.bad("in takes a list"))?;
                Value::Bool(set.contains(&v))
            }
            "if" => {
                let a = self.args(arg, 3, "if")?;
                match self.eval(&a[0])? {
                    Value::Bool(true) => self.eval(&a[1])?,
                    Value::Bool(false) => self.eval(&a[2])?,
                    other => return Err(self.bad(format!("if takes a Boolean, found {other}"))),
                }
            }
            "or" => {
                let a = self.args(arg, 2, "or")?;
                match self.eval(&a[0])? {
                    Value::Null => self.eval(&a[1])?,
                    v => v,
                }
            }
            "object" => {
                let m = arg
                    .as_object()
                    .ok_or_else(|| self.bad("object takes an object of expressions"))?;
                let mut out = Map::new();
                for (k, x) in m {
                    out.insert(k.clone(), self.eval(x)?);
                }
                Value::Object(out)
            }
            "list" => {
                let items = arg
                    .as_array()
                    .ok_or_else(|| self.bad("list takes an array of expressions"))?;
                Value::Array(
                    items
                        .iter()
                        .map(|x| self.eval(x))
                        .collect::<Result<_, _>>()?,
                )
            }
            "forEach" => {
                let a = self.args(arg, 2, "forEach")?;
                match self.eval(&a[0])? {
                    Value::Array(items) => Value::Array(
                        items
                            .into_iter()
                            .map(|x| self.with(&[("item", x)], |s| s.eval(&a[1])))
                            .collect::<Result<_, _>>()?,
                    ),
                    Value::Object(m) => {
                        let mut out = Map::new();
                        for (k, x) in m {
                            let bind = [("key", Value::String(k.clone())), ("value", x)];
                            out.insert(k, self.with(&bind, |s| s.eval(&a[1]))?);
                        }
                        Value::Object(out)
                    }
                    Value::Null => Value::Null,
                    other => {
                        return Err(self.bad(format!("forEach takes a collection, found {other}")))
                    }
                }
            }
            "filter" => {
                let a = self.args(arg, 2, "filter")?;
                let mut out = Vec::new();
                for x in self.array(&a[0], "filter")? {
                    let keep = self.with(&[("item", x.clone())], |s| s.eval(&a[1]))?;
                    if keep == Value::Bool(true) {
                        out.push(x);
                    }
                }
                Value::Array(out)
            }
            "entries" => Value::Array(
                sorted(self.object(arg, "entries")?)
                    .into_iter()
                    .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
                    .collect(),
            ),
            "fromEntries" => {
                let mut out = Map::new();
                for x in self.array(arg, "fromEntries")? {
                    let k = x
                        .get("key")
                        .and_then(Value::as_str)
                        .ok_or_else(|| self.bad("fromEntries takes {key: string, value}"))?;
                    out.insert(
                        k.to_string(),
                        x.get("value").cloned().unwrap_or(Value::Null),
                    );
                }
                Value::Object(out)
            }
            "keys" => Value::Array(
                sorted(self.object(arg, "keys")?)
                    .into_iter()
                    .map(|(k, _)| Value::String(k))
                    .collect(),
            ),
            "values" => Value::Array(
                sorted(self.object(arg, "values")?)
                    .into_iter()
                    .map(|(_, v)| v)
                    .collect(),
            ),
            "without" => {
                let a = self.args(arg, 2, "without")?;
                let mut m = self.object(&a[0], "without")?;
                for k in a[1].as_array().into_iter().flatten() {
                    if let Some(k) = k.as_str() {
                        m.remove(k);
                    }
                }
                Value::Object(m)
            }
            "merge" => {
                let items = arg
                    .as_array()
                    .ok_or_else(|| self.bad("merge takes an array of expressions"))?;
                let mut out = Map::new();
                for x in items {
                    out.extend(self.object(x, "merge")?);
                }
                Value::Object(out)
            }
            "toI32" => match self.eval(arg)? {
                Value::Null => Value::Null,
                v => saturate(int(&v).ok_or_else(|| self.bad(format!("toI32 of {v}")))?),
            },
            "sumI32" => {
                let items = match self.eval(arg)? {
                    Value::Object(m) => m.into_iter().map(|(_, v)| v).collect(),
                    Value::Array(a) => a,
                    Value::Null => Vec::new(),
                    other => return Err(self.bad(format!("sumI32 of {other}"))),
                };
                let mut total: i128 = 0;
                for v in &items {
                    let n = int(v).ok_or_else(|| self.bad(format!("sumI32 of {v}")))?;
                    total = (total + n).clamp(i128::from(i32::MIN), i128::from(i32::MAX));
                }
                saturate(total)
            }
            "sumByKey" => {
                let mut sums: std::collections::BTreeMap<String, i128> = Default::default();
                for m in self.array(arg, "sumByKey")? {
                    let m = m
                        .as_object()
                        .ok_or_else(|| self.bad("sumByKey takes objects"))?;
                    for (k, v) in m {
                        let n = int(v).ok_or_else(|| self.bad(format!("sumByKey of {v}")))?;
                        let slot = sums.entry(k.clone()).or_insert(0);
                        *slot = (*slot + n).clamp(i128::from(i32::MIN), i128::from(i32::MAX));
                    }
                }
                Value::Object(sums.into_iter().map(|(k, n)| (k, saturate(n))).collect())
            }
            other => return Err(self.bad(format!("unknown operation {other:?}"))),
        })
    }
}

/// An object's entries in key order (UTF-8 bytes; integer keys by value).
fn sorted(m: Map<String, Value>) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = m.into_iter().collect();
    v.sort_by(
        |(a, _), (b, _)| match (a.parse::<i64>(), b.parse::<i64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.as_bytes().cmp(b.as_bytes()),
        },
    );
    v
}
