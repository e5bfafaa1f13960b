//! Java serialization streams, read with the `jaded` crate, and accessors for the Scala values
//! Spark puts in them: case classes, `Option`, collections, `Enumeration` values and objects.

use jaded::{Content, ObjectData, Parser, PrimitiveType, Value};

/// Java streams longer than this are not parsed (reported instead).
pub const MAX_STREAM: usize = 16 * 1024 * 1024;

/// Streams nesting deeper than this are not parsed: the parser recurses once per level.
pub const MAX_DEPTH: usize = 256;

/// Streams expanding to more values than this (back-references followed) are not parsed.
pub const MAX_VALUES: u64 = 4 * 1024 * 1024;

/// Streams nesting up to this deep are parsed on the calling thread; deeper ones on a thread with
/// a stack sized for them.
const INLINE_DEPTH: usize = 48;

/// What is wrong with a Java value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JavaError {
    /// The stream does not parse.
    #[error("Java stream does not parse: {0}")]
    Stream(String),
    /// The stream is too large or too deeply structured to parse safely.
    #[error("Java stream refused: {0}")]
    Refused(String),
    /// A value is not what the message's class holds there.
    #[error("{0}")]
    Shape(String),
}

fn shape(what: impl Into<String>) -> JavaError {
    JavaError::Shape(what.into())
}

/// The stream's magic number and version.
pub const MAGIC: [u8; 4] = [0xAC, 0xED, 0x00, 0x05];

fn parse_now(data: &[u8]) -> Result<Value, JavaError> {
    // jaded asserts its own bookkeeping with a panic; a panic is caught and reported like any
    // other parse error, so no input takes the process down.
    let owned = data.to_vec();
    let result = std::panic::catch_unwind(move || -> Result<Value, JavaError> {
        let mut parser = Parser::new(&owned[..]).map_err(|e| JavaError::Stream(format!("{e}")))?;
        match parser.read() {
            Ok(Content::Object(v)) => Ok(v),
            Ok(Content::Block(_)) => Err(JavaError::Stream(
                "the stream holds block data, not an object".into(),
            )),
            Err(e) => Err(JavaError::Stream(format!("{e}"))),
        }
    });
    result.unwrap_or_else(|_| Err(JavaError::Stream("the parser failed on this stream".into())))
}

/// Parses the first object of a Java serialization stream.
///
/// ```
/// // `Boolean.TRUE` as ObjectOutputStream writes it.
/// let stream = [
///     0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0x00, 0x11, b'j', b'a', b'v', b'a', b'.', b'l', b'a',
///     b'n', b'g', b'.', b'B', b'o', b'o', b'l', b'e', b'a', b'n', 0xCD, 0x20, 0x72, 0x80, 0xD5,
///     0x9C, 0xFA, 0xEE, 0x02, 0x00, 0x01, b'Z', 0x00, 0x05, b'v', b'a', b'l', b'u', b'e', 0x78,
///     0x70, 0x01,
/// ];
/// let v = sparkwire::spark::java::parse(&stream)?;
/// assert_eq!(sparkwire::spark::java::class_of(&v), Some("java.lang.Boolean"));
/// # Ok::<(), sparkwire::spark::java::JavaError>(())
/// ```
pub fn parse(data: &[u8]) -> Result<Value, JavaError> {
    if data.len() > MAX_STREAM {
        return Err(JavaError::Refused(format!(
            "{} bytes, over the limit of {MAX_STREAM}",
            data.len()
        )));
    }
    // The shape first: jaded would otherwise follow a hostile stream's references into an
    // exponential number of values, or recurse past its stack.
    let shape = super::guard::check(data, MAX_DEPTH, MAX_VALUES)?;
    if shape.depth <= INLINE_DEPTH {
        return parse_now(data);
    }
    let owned = data.to_vec();
    std::thread::Builder::new()
        .name("java-parse".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || parse_now(&owned))
        .map_err(|e| JavaError::Refused(format!("no thread to parse it: {e}")))?
        .join()
        .unwrap_or_else(|_| Err(JavaError::Stream("the parser failed on this stream".into())))
}

/// The class of an object (for a Scala `object`, the module's class), or `None` for other values.
pub fn class_of(v: &Value) -> Option<&str> {
    match v {
        Value::Object(o) => Some(module_of(o).unwrap_or(o.class_name())),
        _ => None,
    }
}

/// For a `scala.runtime.ModuleSerializationProxy`, the Scala object's class name.
pub fn module_of(o: &ObjectData) -> Option<&str> {
    if o.class_name() != "scala.runtime.ModuleSerializationProxy" {
        return None;
    }
    match o.get_field("moduleClass") {
        Some(Value::Class(name)) => Some(name.as_str()),
        _ => None,
    }
}

/// A class name without its package: `DeployMessages$RegisterWorker`.
pub fn short_class(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The value as an object.
pub fn obj<'a>(v: &'a Value, what: &str) -> Result<&'a ObjectData, JavaError> {
    match v {
        Value::Object(o) => Ok(o),
        other => Err(shape(format!(
            "{what}: an object, found {}",
            describe(other)
        ))),
    }
}

/// A short description of a value for errors.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Object(o) => format!("a {}", module_of(o).unwrap_or(o.class_name())),
        Value::JavaString(_) => "a string".into(),
        Value::Enum(c, n) => format!("enum {c}.{n}"),
        Value::Primitive(p) => format!("primitive {p:?}"),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::PrimitiveArray(a) => format!("a primitive array of {}", a.len()),
        Value::Class(c) => format!("class {c}"),
        Value::Loop(_) => "a cyclic reference".into(),
    }
}

/// Field `name` of `o`.
pub fn field<'a>(o: &'a ObjectData, name: &str) -> Result<&'a Value, JavaError> {
    o.get_field(name)
        .ok_or_else(|| shape(format!("{} has no field {name}", o.class_name())))
}

/// A string value.
pub fn string(v: &Value, what: &str) -> Result<String, JavaError> {
    match v {
        Value::JavaString(s) => Ok(s.clone()),
        other => Err(shape(format!(
            "{what}: a string, found {}",
            describe(other)
        ))),
    }
}

/// A string field.
pub fn str_field(o: &ObjectData, name: &str) -> Result<String, JavaError> {
    string(field(o, name)?, name)
}

/// A Java `int`, primitive or boxed.
pub fn int(v: &Value, what: &str) -> Result<i32, JavaError> {
    match v {
        Value::Primitive(PrimitiveType::Int(i)) => Ok(*i),
        Value::Object(o) if o.class_name() == "java.lang.Integer" => int(field(o, "value")?, what),
        other => Err(shape(format!("{what}: an int, found {}", describe(other)))),
    }
}

/// An int field.
pub fn int_field(o: &ObjectData, name: &str) -> Result<i32, JavaError> {
    int(field(o, name)?, name)
}

/// A Java `long`, primitive or boxed.
pub fn long(v: &Value, what: &str) -> Result<i64, JavaError> {
    match v {
        Value::Primitive(PrimitiveType::Long(i)) => Ok(*i),
        Value::Primitive(PrimitiveType::Int(i)) => Ok(i64::from(*i)),
        Value::Object(o) if o.class_name() == "java.lang.Long" => long(field(o, "value")?, what),
        other => Err(shape(format!("{what}: a long, found {}", describe(other)))),
    }
}

/// A long field.
pub fn long_field(o: &ObjectData, name: &str) -> Result<i64, JavaError> {
    long(field(o, name)?, name)
}

/// A Java `double`, primitive or boxed.
pub fn double(v: &Value, what: &str) -> Result<f64, JavaError> {
    match v {
        Value::Primitive(PrimitiveType::Double(d)) => Ok(*d),
        Value::Object(o) if o.class_name() == "java.lang.Double" => {
            double(field(o, "value")?, what)
        }
        other => Err(shape(format!(
            "{what}: a double, found {}",
            describe(other)
        ))),
    }
}

/// A Java `boolean`, primitive or boxed.
pub fn boolean(v: &Value, what: &str) -> Result<bool, JavaError> {
    match v {
        Value::Primitive(PrimitiveType::Boolean(b)) => Ok(*b),
        Value::Object(o) if o.class_name() == "java.lang.Boolean" => {
            boolean(field(o, "value")?, what)
        }
        other => Err(shape(format!(
            "{what}: a boolean, found {}",
            describe(other)
        ))),
    }
}

/// A boolean field.
pub fn bool_field(o: &ObjectData, name: &str) -> Result<bool, JavaError> {
    boolean(field(o, name)?, name)
}

/// A Scala `Option`: `None` (the object `scala.None$`, or null) or `Some(value)`.
pub fn option<'a>(v: &'a Value, what: &str) -> Result<Option<&'a Value>, JavaError> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => match module_of(o) {
            Some("scala.None$") => Ok(None),
            _ if o.class_name() == "scala.Some" => Ok(Some(field(o, "value")?)),
            _ => Err(shape(format!("{what}: an Option, found {}", describe(v)))),
        },
        other => Err(shape(format!(
            "{what}: an Option, found {}",
            describe(other)
        ))),
    }
}

/// The elements of a Scala or Java collection: `DefaultSerializationProxy` (Scala 2.13's form of
/// lists, vectors, sets and hash maps), `ArraySeq`, arrays, the small immutable sets, `Nil` and the
/// empty collections, `java.util.ArrayList`.
pub fn elements<'a>(v: &'a Value, what: &str) -> Result<Vec<&'a Value>, JavaError> {
    let bad = || shape(format!("{what}: a collection, found {}", describe(v)));
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items.iter().collect()),
        Value::Object(o) => {
            if let Some(module) = module_of(o) {
                return if module.contains("Empty") || module.ends_with("Nil$") {
                    Ok(Vec::new())
                } else {
                    Err(bad())
                };
            }
            let class = o.class_name();
            match class {
                "scala.collection.generic.DefaultSerializationProxy"
                | "scala.collection.immutable.List$SerializationProxy" => proxy_elements(o, what),
                "java.util.ArrayList" => proxy_elements(o, what),
                c if c.starts_with("scala.collection.immutable.ArraySeq$")
                    || c.starts_with("scala.collection.mutable.ArraySeq$") =>
                {
                    match field(o, "unsafeArray").or_else(|_| field(o, "array"))? {
                        Value::Array(items) => Ok(items.iter().collect()),
                        _ => Err(bad()),
                    }
                }
                c if c.starts_with("scala.collection.immutable.Set$Set") => {
                    let mut out = Vec::new();
                    for i in 1..=4 {
                        if let Some(e) = o.get_field(&format!("elem{i}")) {
                            out.push(e);
                        }
                    }
                    Ok(out)
                }
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// The objects a custom `writeObject` wrote after an element count.
fn proxy_elements<'a>(o: &'a ObjectData, what: &str) -> Result<Vec<&'a Value>, JavaError> {
    let mut it = o
        .get_annotation(0)
        .ok_or_else(|| shape(format!("{what}: {} without its elements", o.class_name())))?;
    let count = it
        .read_i32()
        .map_err(|e| shape(format!("{what}: element count: {e}")))?;
    let mut out = Vec::new();
    if count >= 0 {
        for _ in 0..count {
            out.push(
                it.read_object()
                    .map_err(|e| shape(format!("{what}: element: {e}")))?,
            );
        }
    } else {
        // Unknown size: elements until the SerializeEnd marker object.
        while let Ok(v) = it.read_object() {
            if class_of(v).is_some_and(|c| c.ends_with("SerializeEnd$")) {
                break;
            }
            out.push(v);
        }
    }
    Ok(out)
}

/// The entries of a Scala map: the empty map, `Map1`–`Map4`, or a collection of `Tuple2`s.
pub fn entries<'a>(v: &'a Value, what: &str) -> Result<Vec<(&'a Value, &'a Value)>, JavaError> {
    if let Value::Object(o) = v {
        if let Some(n) = o
            .class_name()
            .strip_prefix("scala.collection.immutable.Map$Map")
        {
            // Map1 keeps plain field names; Map2–Map4 have theirs mangled with the class.
            let get = |name: String| {
                o.get_field(&name).or_else(|| {
                    o.get_field(&format!("scala$collection$immutable$Map$Map{n}$${name}"))
                })
            };
            let mut out = Vec::new();
            for i in 1..=4 {
                if let (Some(k), Some(val)) = (get(format!("key{i}")), get(format!("value{i}"))) {
                    out.push((k, val));
                }
            }
            return Ok(out);
        }
    }
    elements(v, what)?
        .into_iter()
        .map(|e| {
            let t = obj(e, what)?;
            if !t.class_name().starts_with("scala.Tuple2") {
                return Err(shape(format!("{what}: a map entry, found {}", describe(e))));
            }
            Ok((field(t, "_1")?, field(t, "_2")?))
        })
        .collect()
}

/// The bytes a `SerializableBuffer` holds (written as an `int` length and the bytes).
pub fn serializable_buffer(v: &Value, what: &str) -> Result<Vec<u8>, JavaError> {
    let o = obj(v, what)?;
    let mut it = o
        .get_annotation(0)
        .ok_or_else(|| shape(format!("{what}: {} without its bytes", o.class_name())))?;
    let len = it
        .read_i32()
        .map_err(|e| shape(format!("{what}: buffer length: {e}")))?;
    let len = usize::try_from(len).map_err(|_| shape(format!("{what}: length {len}")))?;
    let mut out = Vec::with_capacity(len.min(MAX_STREAM));
    for _ in 0..len {
        out.push(
            it.read_u8()
                .map_err(|e| shape(format!("{what}: buffer bytes: {e}")))?,
        );
    }
    Ok(out)
}
