//! The Scala and Java values Spark puts in its streams, read from a [`Graph`]: case classes,
//! `Option`, collections of Scala 2.13 (Spark 4) and 2.12 (Spark 3), `Enumeration` values, boxed
//! primitives.

use super::serial::{self, Graph, Limits, Node, SerialError};

/// Java streams longer than this are not read (reported instead).
pub const MAX_STREAM: usize = 16 * 1024 * 1024;

/// What is wrong with a Java value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JavaError {
    /// The stream does not parse.
    #[error("Java stream does not parse: {0}")]
    Stream(String),
    /// The stream is too large or too deeply structured to read safely.
    #[error("Java stream refused: {0}")]
    Refused(String),
    /// A value is not what the message's class holds there.
    #[error("{0}")]
    Shape(String),
}

impl From<SerialError> for JavaError {
    fn from(e: SerialError) -> Self {
        match e {
            SerialError::Limit(what) => JavaError::Refused(what),
            other => JavaError::Stream(other.to_string()),
        }
    }
}

fn shape(what: impl Into<String>) -> JavaError {
    JavaError::Shape(what.into())
}

/// The limits streams are read within.
pub fn limits() -> Limits {
    Limits {
        max_bytes: MAX_STREAM,
        ..Limits::default()
    }
}

/// Reads a Java serialization stream (one object) into a graph.
pub fn parse(data: &[u8]) -> Result<Graph, JavaError> {
    Ok(serial::read(data, &limits())?)
}

/// The value as an object.
pub fn obj<'g>(v: Node<'g>, what: &str) -> Result<Node<'g>, JavaError> {
    match v.object() {
        Some(_) => Ok(v),
        None => Err(shape(format!("{what}: an object, found {}", v.describe()))),
    }
}

/// Field `name` of `o`.
pub fn field<'g>(o: Node<'g>, name: &str) -> Result<Node<'g>, JavaError> {
    o.field(name).ok_or_else(|| {
        shape(format!(
            "{} has no field {name}",
            o.class().unwrap_or("the value")
        ))
    })
}

/// A string value.
pub fn string(v: Node<'_>, what: &str) -> Result<String, JavaError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| shape(format!("{what}: a string, found {}", v.describe())))
}

/// A string field.
pub fn str_field(o: Node<'_>, name: &str) -> Result<String, JavaError> {
    string(field(o, name)?, name)
}

/// The `value` of a boxed primitive of class `class`.
fn boxed<'g>(v: Node<'g>, class: &str) -> Option<Node<'g>> {
    if v.class_name()? == class {
        v.field("value")
    } else {
        None
    }
}

/// A Java `int`, primitive or boxed.
pub fn int(v: Node<'_>, what: &str) -> Result<i32, JavaError> {
    v.as_int()
        .or_else(|| boxed(v, "java.lang.Integer").and_then(|b| b.as_int()))
        .ok_or_else(|| shape(format!("{what}: an int, found {}", v.describe())))
}

/// An int field.
pub fn int_field(o: Node<'_>, name: &str) -> Result<i32, JavaError> {
    int(field(o, name)?, name)
}

/// A Java `long`, primitive or boxed.
pub fn long(v: Node<'_>, what: &str) -> Result<i64, JavaError> {
    v.as_long()
        .or_else(|| boxed(v, "java.lang.Long").and_then(|b| b.as_long()))
        .ok_or_else(|| shape(format!("{what}: a long, found {}", v.describe())))
}

/// A long field.
pub fn long_field(o: Node<'_>, name: &str) -> Result<i64, JavaError> {
    long(field(o, name)?, name)
}

/// A Java `double`, primitive or boxed.
pub fn double(v: Node<'_>, what: &str) -> Result<f64, JavaError> {
    v.as_double()
        .or_else(|| boxed(v, "java.lang.Double").and_then(|b| b.as_double()))
        .ok_or_else(|| shape(format!("{what}: a double, found {}", v.describe())))
}

/// A Java `boolean`, primitive or boxed.
pub fn boolean(v: Node<'_>, what: &str) -> Result<bool, JavaError> {
    v.as_bool()
        .or_else(|| boxed(v, "java.lang.Boolean").and_then(|b| b.as_bool()))
        .ok_or_else(|| shape(format!("{what}: a boolean, found {}", v.describe())))
}

/// A boolean field.
pub fn bool_field(o: Node<'_>, name: &str) -> Result<bool, JavaError> {
    boolean(field(o, name)?, name)
}

/// A Scala `Option`: `None` (the object `scala.None$`, or null) or `Some(value)`.
pub fn option<'g>(v: Node<'g>, what: &str) -> Result<Option<Node<'g>>, JavaError> {
    if v.is_null() {
        return Ok(None);
    }
    match v.class() {
        Some("scala.None$") => Ok(None),
        Some("scala.Some") => Ok(Some(field(v, "value")?)),
        _ => Err(shape(format!("{what}: an Option, found {}", v.describe()))),
    }
}

/// The elements of a Scala or Java collection: Scala 2.13's `DefaultSerializationProxy` (lists,
/// vectors, sets, hash maps), Scala 2.12's `List$SerializationProxy` and
/// `HashMap$SerializationProxy`, `ArraySeq` and `WrappedArray`, arrays, the small immutable
/// sets, `Nil` and the empty collections, `java.util.ArrayList`.
pub fn elements<'g>(v: Node<'g>, what: &str) -> Result<Vec<Node<'g>>, JavaError> {
    let bad = || shape(format!("{what}: a collection, found {}", v.describe()));
    if v.is_null() {
        return Ok(Vec::new());
    }
    if let Some(items) = v.array_values() {
        return Ok(items);
    }
    let class = v.class().ok_or_else(bad)?;
    if v.module().is_some() || class.ends_with('$') {
        return if class.contains("Empty") || class.ends_with(".Nil$") {
            Ok(Vec::new())
        } else {
            Err(bad())
        };
    }
    match class {
        "scala.collection.generic.DefaultSerializationProxy" | "java.util.ArrayList" => {
            counted_elements(v, what)
        }
        "scala.collection.immutable.List$SerializationProxy" => {
            let mut it = v
                .annotation()
                .ok_or_else(|| shape(format!("{what}: a list without its elements")))?;
            let mut out = Vec::new();
            loop {
                let e = it
                    .read_value()
                    .ok_or_else(|| shape(format!("{what}: a list without its end marker")))?;
                if e.class().is_some_and(|c| c.ends_with("ListSerializeEnd$")) {
                    return Ok(out);
                }
                out.push(e);
            }
        }
        c if c.starts_with("scala.collection.immutable.ArraySeq$")
            || c.starts_with("scala.collection.mutable.ArraySeq$")
            || c.starts_with("scala.collection.mutable.WrappedArray$") =>
        {
            v.field("unsafeArray")
                .or_else(|| v.field("array"))
                .and_then(|a| a.array_values())
                .ok_or_else(bad)
        }
        // Scala 2.12's mutable sequences: an array with room to spare and the length used.
        "scala.collection.mutable.ArraySeq" | "scala.collection.mutable.ArrayBuffer" => {
            let len = v
                .field("length")
                .or_else(|| v.field("size0"))
                .and_then(|n| n.as_int())
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(bad)?;
            let mut items = field(v, "array")?.array_values().ok_or_else(bad)?;
            if len > items.len() {
                return Err(shape(format!(
                    "{what}: length {len} over an array of {}",
                    items.len()
                )));
            }
            items.truncate(len);
            Ok(items)
        }
        "scala.collection.immutable.Vector" => vector_212(v, what),
        c if c.starts_with("scala.collection.immutable.Set$Set") => Ok((1..=4)
            .filter_map(|i| v.field(&format!("elem{i}")))
            .collect()),
        _ => Err(bad()),
    }
}

/// Scala 2.12's `Vector`: a radix-32 tree of `depth` levels (`display0` the leaves) holding
/// the elements from `startIndex` to `endIndex`.
fn vector_212<'g>(v: Node<'g>, what: &str) -> Result<Vec<Node<'g>>, JavaError> {
    let bad = |why: &str| shape(format!("{what}: a Vector {why}"));
    let int = |name: &str| v.field(name).and_then(|n| n.as_int());
    let (Some(depth), Some(start), Some(end)) = (int("depth"), int("startIndex"), int("endIndex"))
    else {
        return Err(bad("without its bounds"));
    };
    if v.field("dirty").and_then(|d| d.as_bool()) == Some(true) {
        return Err(bad("written while being built (dirty)"));
    }
    if start < 0 || end < start || !(0..=6).contains(&depth) {
        return Err(bad(&format!("of depth {depth} from {start} to {end}")));
    }
    if depth == 0 {
        return Ok(Vec::new());
    }
    // Leaves may be shared: a count over the graph's array slots (which the stream's length
    // bounds) is refused rather than walked.
    let slots: usize = v
        .graph()
        .entries()
        .iter()
        .map(|e| match e {
            serial::Entry::Array(serial::Array {
                elements: serial::Elements::Values(vs),
                ..
            }) => vs.len(),
            _ => 0,
        })
        .sum();
    if usize::try_from(end - start).unwrap_or(usize::MAX) > slots {
        return Err(bad(&format!(
            "of {} elements, more than the stream's {slots} array slots",
            end - start
        )));
    }
    let top = v
        .field(&format!("display{}", depth - 1))
        .ok_or_else(|| bad("without its top level"))?;
    let mut out = Vec::new();
    for i in start..end {
        let mut node = top;
        for level in (0..depth).rev() {
            let slot = usize::try_from((i >> (5 * level)) & 31).unwrap_or(0);
            node = node
                .array_values()
                .and_then(|a| a.get(slot).copied())
                .ok_or_else(|| bad(&format!("without element {i}")))?;
        }
        out.push(node);
    }
    Ok(out)
}

/// The objects a `writeObject` wrote after an element count (all of them up to the
/// `SerializeEnd` marker when the count is -1).
fn counted_elements<'g>(v: Node<'g>, what: &str) -> Result<Vec<Node<'g>>, JavaError> {
    let mut it = v.annotation().ok_or_else(|| {
        shape(format!(
            "{what}: {} without its elements",
            v.class().unwrap_or("a collection")
        ))
    })?;
    let count = it
        .read_i32()
        .ok_or_else(|| shape(format!("{what}: no element count")))?;
    let mut out = Vec::new();
    if count >= 0 {
        for _ in 0..count {
            out.push(
                it.read_value()
                    .ok_or_else(|| shape(format!("{what}: fewer elements than {count}")))?,
            );
        }
    } else {
        loop {
            let e = it
                .read_value()
                .ok_or_else(|| shape(format!("{what}: no end marker after the elements")))?;
            if e.class().is_some_and(|c| c.ends_with("SerializeEnd$")) {
                break;
            }
            out.push(e);
        }
    }
    Ok(out)
}

/// The entries of a map: the empty map, `Map1`–`Map4`, Scala 2.12's `HashMap$SerializationProxy`,
/// or a collection of `Tuple2`s.
pub fn entries<'g>(v: Node<'g>, what: &str) -> Result<Vec<(Node<'g>, Node<'g>)>, JavaError> {
    let class = v.class().unwrap_or_default();
    if let Some(n) = class.strip_prefix("scala.collection.immutable.Map$Map") {
        // Map1 keeps plain field names; Map2–Map4 have theirs mangled with the class.
        let get = |name: String| {
            v.field(&name)
                .or_else(|| v.field(&format!("scala$collection$immutable$Map$Map{n}$${name}")))
        };
        return Ok((1..=4)
            .filter_map(|i| Some((get(format!("key{i}"))?, get(format!("value{i}"))?)))
            .collect());
    }
    if class.ends_with("Map$WithDefault") {
        // `withDefault` (Spark's `sys.env` copies): the entries are the underlying map's.
        return entries(field(v, "underlying")?, what);
    }
    if class == "scala.collection.immutable.HashMap$SerializationProxy" {
        let mut it = v
            .annotation()
            .ok_or_else(|| shape(format!("{what}: a map without its entries")))?;
        let count = it
            .read_i32()
            .ok_or_else(|| shape(format!("{what}: no entry count")))?;
        let mut out = Vec::new();
        for _ in 0..count.max(0) {
            let k = it.read_value();
            let val = it.read_value();
            match (k, val) {
                (Some(k), Some(val)) => out.push((k, val)),
                _ => return Err(shape(format!("{what}: fewer entries than {count}"))),
            }
        }
        return Ok(out);
    }
    if class == "scala.collection.mutable.HashMap" {
        // Scala 2.12's `HashTable.serializeTo`: load factor, entry count, seed, whether a size map
        // is kept, then each entry's key and value.
        if let Some(mut it) = v.annotation() {
            let count = it
                .read_i32()
                .and_then(|_load_factor| it.read_i32())
                .filter(|_| it.read_i32().is_some() && it.read_bytes(1).is_some())
                .ok_or_else(|| shape(format!("{what}: a hash map without its header")))?;
            let mut out = Vec::new();
            for _ in 0..count.max(0) {
                match (it.read_value(), it.read_value()) {
                    (Some(k), Some(val)) => out.push((k, val)),
                    _ => return Err(shape(format!("{what}: fewer entries than {count}"))),
                }
            }
            return Ok(out);
        }
    }
    elements(v, what)?
        .into_iter()
        .map(|e| {
            if !e.class().is_some_and(|c| c.starts_with("scala.Tuple2")) {
                return Err(shape(format!(
                    "{what}: a map entry, found {}",
                    e.describe()
                )));
            }
            Ok((field(e, "_1")?, field(e, "_2")?))
        })
        .collect()
}

/// The bytes a `SerializableBuffer` holds (written as an `int` length and the bytes).
pub fn serializable_buffer(v: Node<'_>, what: &str) -> Result<Vec<u8>, JavaError> {
    let o = obj(v, what)?;
    let mut it = o.annotation().ok_or_else(|| {
        shape(format!(
            "{what}: {} without its bytes",
            o.class().unwrap_or("a buffer")
        ))
    })?;
    let len = it
        .read_i32()
        .ok_or_else(|| shape(format!("{what}: no buffer length")))?;
    let len = usize::try_from(len).map_err(|_| shape(format!("{what}: length {len}")))?;
    it.read_bytes(len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| shape(format!("{what}: fewer bytes than {len}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scala_212_vector_claiming_more_elements_than_the_stream_holds_is_refused() {
        use crate::messages::Version;
        use crate::spark::build::Builder;
        use crate::spark::classes::ClassTable;
        use serial::Value;
        let table = ClassTable::of(Version::V1).expect("the 3.0.3 table");
        let vector = |end: i32| {
            let mut b = Builder::new(table);
            let s = b.string("x");
            let leaf = b.array("[Ljava.lang.Object;", vec![s; 32]).expect("array");
            let mut fields = vec![
                ("depth", Value::Int(1)),
                ("dirty", Value::Bool(false)),
                ("endIndex", Value::Int(end)),
                ("focus", Value::Int(0)),
                ("startIndex", Value::Int(0)),
                ("display0", leaf),
            ];
            for name in ["display1", "display2", "display3", "display4", "display5"] {
                fields.push((name, Value::Null));
            }
            let v = b
                .object("scala.collection.immutable.Vector", &fields)
                .expect("vector");
            b.finish(v)
        };
        let small = vector(3);
        assert_eq!(elements(small.root_node(), "v").map(|e| e.len()), Ok(3));
        let hostile = vector(i32::MAX);
        assert!(matches!(
            elements(hostile.root_node(), "v"),
            Err(JavaError::Shape(_))
        ));
    }

    #[test]
    fn a_stream_over_the_size_limit_is_refused_before_reading() {
        let big = vec![0u8; MAX_STREAM + 1];
        assert!(matches!(parse(&big), Err(JavaError::Refused(_))));
    }
}
