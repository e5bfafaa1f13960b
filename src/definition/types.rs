//! Type expressions of the definition: `string`, `bool`, `i32`, `i64`, `f64`, `bytes`,
//! `option<T>`, `list<T>`, `set<T>`, `map<K,V>`, `tuple<A,B,…>`, or the name of a shared type.

use std::fmt;

/// A parsed type expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeExpr {
    /// UTF-8 text: MessagePack `str`.
    String,
    /// `true` / `false`.
    Bool,
    /// A 32-bit signed integer: any MessagePack integer form whose value fits.
    I32,
    /// A 64-bit signed integer.
    I64,
    /// A double: MessagePack `float 64` (a `float 32` is accepted).
    F64,
    /// Binary data: MessagePack `bin`.
    Bytes,
    /// `nil`, or the inner type.
    Option(Box<TypeExpr>),
    /// An array of the inner type.
    List(Box<TypeExpr>),
    /// An array of distinct values, in ascending order.
    Set(Box<TypeExpr>),
    /// A map.
    Map(Box<TypeExpr>, Box<TypeExpr>),
    /// An array of exactly these element types.
    Tuple(Vec<TypeExpr>),
    /// A shared type of the definition.
    Named(String),
}

/// A type expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad type expression {text:?}: {reason}")]
pub struct TypeParseError {
    /// The expression.
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

impl TypeExpr {
    /// Parses an expression such as `map<string,list<ResourceInformation>>`.
    pub fn parse(text: &str) -> Result<TypeExpr, TypeParseError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let mut p = Parser {
            s: compact.as_bytes(),
            pos: 0,
        };
        let out = p.expr().map_err(|reason| TypeParseError {
            text: text.to_string(),
            reason,
        })?;
        if p.pos != p.s.len() {
            return Err(TypeParseError {
                text: text.to_string(),
                reason: format!("unexpected text at {}", p.pos),
            });
        }
        Ok(out)
    }

    /// Every shared type name the expression mentions.
    pub fn named(&self, out: &mut Vec<String>) {
        match self {
            TypeExpr::Named(n) => out.push(n.clone()),
            TypeExpr::Option(t) | TypeExpr::List(t) | TypeExpr::Set(t) => t.named(out),
            TypeExpr::Map(k, v) => {
                k.named(out);
                v.named(out);
            }
            TypeExpr::Tuple(ts) => ts.iter().for_each(|t| t.named(out)),
            _ => {}
        }
    }
}

impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::String => f.write_str("string"),
            TypeExpr::Bool => f.write_str("bool"),
            TypeExpr::I32 => f.write_str("i32"),
            TypeExpr::I64 => f.write_str("i64"),
            TypeExpr::F64 => f.write_str("f64"),
            TypeExpr::Bytes => f.write_str("bytes"),
            TypeExpr::Option(t) => write!(f, "option<{t}>"),
            TypeExpr::List(t) => write!(f, "list<{t}>"),
            TypeExpr::Set(t) => write!(f, "set<{t}>"),
            TypeExpr::Map(k, v) => write!(f, "map<{k},{v}>"),
            TypeExpr::Tuple(ts) => {
                f.write_str("tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
            TypeExpr::Named(n) => f.write_str(n),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn ident(&mut self) -> Result<String, String> {
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(format!("expected a type name at {start}"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.pos))
        }
    }

    fn args(&mut self) -> Result<Vec<TypeExpr>, String> {
        self.eat(b'<')?;
        let mut out = vec![self.expr()?];
        while self.s.get(self.pos) == Some(&b',') {
            self.pos += 1;
            out.push(self.expr()?);
        }
        self.eat(b'>')?;
        Ok(out)
    }

    fn expr(&mut self) -> Result<TypeExpr, String> {
        let name = self.ident()?;
        let one = |mut a: Vec<TypeExpr>, what: &str| -> Result<Box<TypeExpr>, String> {
            if a.len() == 1 {
                Ok(Box::new(a.remove(0)))
            } else {
                Err(format!("{what} takes one type argument"))
            }
        };
        Ok(match name.as_str() {
            "string" => TypeExpr::String,
            "bool" => TypeExpr::Bool,
            "i32" => TypeExpr::I32,
            "i64" => TypeExpr::I64,
            "f64" => TypeExpr::F64,
            "bytes" => TypeExpr::Bytes,
            "option" => TypeExpr::Option(one(self.args()?, "option")?),
            "list" => TypeExpr::List(one(self.args()?, "list")?),
            "set" => TypeExpr::Set(one(self.args()?, "set")?),
            "map" => {
                let mut a = self.args()?;
                if a.len() != 2 {
                    return Err("map takes two type arguments".into());
                }
                let v = a.remove(1);
                TypeExpr::Map(Box::new(a.remove(0)), Box::new(v))
            }
            "tuple" => TypeExpr::Tuple(self.args()?),
            _ => TypeExpr::Named(name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_expressions_and_prints_them_back() {
        let text = "map<string,list<tuple<string,option<i64>>>>";
        let t = TypeExpr::parse(text).ok();
        assert_eq!(t.as_ref().map(|t| t.to_string()).as_deref(), Some(text));
        assert!(matches!(t, Some(TypeExpr::Map(..))));
    }

    #[test]
    fn refuses_malformed_expressions() {
        for bad in [
            "",
            "list<",
            "map<string>",
            "option<i32,i32>",
            "list<i32>>",
            "<i32>",
        ] {
            assert!(TypeExpr::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}
