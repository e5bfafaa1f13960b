//! Building a [`Graph`] the way `ObjectOutputStream` sees Java objects: one class descriptor per
//! class (from a [`ClassTable`]), interned strings and cached boxes shared as the JVM shares
//! them, Scala objects written once and referred to after.

use std::collections::HashMap;

use super::classes::ClassTable;
use super::serial::{
    Array, ClassData, ClassDesc, Elements, Entry, FieldDesc, Graph, Handle, Item, Object, Value,
    SC_WRITE_METHOD,
};

/// What cannot be written in Spark's form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The class is not in the Spark release's table.
    #[error("class {0} is not in the class table of Spark {1}")]
    NoClass(String, String),
    /// A field the class has was not given, or one it does not have was.
    #[error("{class}: {problem}")]
    Field {
        /// The class.
        class: String,
        /// What is wrong.
        problem: String,
    },
    /// A value that Spark's form cannot hold.
    #[error("{0}")]
    Value(String),
    /// sparkwire cannot write this message in this Spark release's form.
    #[error("{0}")]
    Unsupported(String),
}

/// Builds one stream's graph.
#[derive(Debug)]
pub struct Builder<'t> {
    table: &'t ClassTable,
    graph: Graph,
    descs: HashMap<String, Handle>,
    signatures: HashMap<String, Handle>,
    classes: HashMap<String, Handle>,
    modules: HashMap<String, Handle>,
    interned: HashMap<String, Handle>,
    boxes: HashMap<(&'static str, i64), Handle>,
    enums: HashMap<(String, String), Handle>,
}

fn code_of(s: &str) -> u8 {
    s.as_bytes().first().copied().unwrap_or(b'L')
}

impl<'t> Builder<'t> {
    /// A builder with the classes of `table`.
    pub fn new(table: &'t ClassTable) -> Self {
        Builder {
            table,
            graph: Graph::new(),
            descs: HashMap::new(),
            signatures: HashMap::new(),
            classes: HashMap::new(),
            modules: HashMap::new(),
            interned: HashMap::new(),
            boxes: HashMap::new(),
            enums: HashMap::new(),
        }
    }

    /// The graph, with `root` as its object.
    pub fn finish(mut self, root: Value) -> Graph {
        self.graph.set_root(match root {
            Value::Ref(h) => Some(h),
            _ => None,
        });
        self.graph
    }

    /// The graph built so far.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    fn no_class(&self, name: &str) -> BuildError {
        BuildError::NoClass(name.to_string(), self.table.spark().to_string())
    }

    /// The descriptor of class `name` (and of its superclasses), one per class.
    pub fn desc(&mut self, name: &str) -> Result<Handle, BuildError> {
        if let Some(h) = self.descs.get(name) {
            return Ok(*h);
        }
        // The chain, leaf first; the table's classes cannot loop, but a bound keeps it so.
        let mut chain = Vec::new();
        let mut next = Some(name.to_string());
        while let Some(n) = next {
            if chain.len() > 64 {
                return Err(BuildError::Value(format!(
                    "{name}: a superclass chain that loops"
                )));
            }
            let entry = self.table.get(&n).ok_or_else(|| self.no_class(&n))?;
            next = entry.super_class.clone();
            chain.push(entry.clone());
        }
        let mut super_desc = None;
        for entry in chain.into_iter().rev() {
            if let Some(h) = self.descs.get(&entry.name) {
                super_desc = Some(*h);
                continue;
            }
            let mut fields = Vec::with_capacity(entry.fields.len());
            for f in &entry.fields {
                let signature = f.class.as_ref().map(|sig| self.signature(sig));
                fields.push(FieldDesc {
                    code: code_of(&f.code),
                    name: f.name.clone(),
                    signature,
                });
            }
            let suid = entry.suid.parse::<i64>().map_err(|_| {
                BuildError::Value(format!("{}: serialVersionUID {}", entry.name, entry.suid))
            })?;
            let h = self.graph.add(Entry::ClassDesc(ClassDesc {
                name: entry.name.clone(),
                suid,
                flags: entry.flags,
                fields,
                annotation: Vec::new(),
                super_desc,
            }));
            self.descs.insert(entry.name.clone(), h);
            super_desc = Some(h);
        }
        super_desc.ok_or_else(|| self.no_class(name))
    }

    /// The descriptor of class `name`: the table's, or, for a class the table does not have,
    /// a copy of the one at `h` in `from` (a stream the JVM wrote), with its superclasses.
    fn desc_like(&mut self, from: &Graph, h: Handle, name: &str) -> Result<Handle, BuildError> {
        if let Some(existing) = self.descs.get(name) {
            return Ok(*existing);
        }
        if self.table.get(name).is_some() {
            return self.desc(name);
        }
        let d = from
            .class_desc(h)
            .ok_or_else(|| BuildError::Value("a graft of a broken graph".into()))?
            .clone();
        let super_desc = match d.super_desc {
            Some(sh) => {
                let sname = from
                    .class_desc(sh)
                    .map(|s| s.name.clone())
                    .ok_or_else(|| BuildError::Value("a graft of a broken graph".into()))?;
                if sname == name {
                    return Err(BuildError::Value(format!("{name}: its own superclass")));
                }
                Some(self.desc_like(from, sh, &sname)?)
            }
            None => None,
        };
        let fields = d
            .fields
            .iter()
            .map(|f| {
                let signature = f
                    .signature
                    .and_then(|s| from.string(s))
                    .map(|sig| self.signature(sig));
                FieldDesc {
                    code: f.code,
                    name: f.name.clone(),
                    signature,
                }
            })
            .collect();
        let here = self.graph.add(Entry::ClassDesc(ClassDesc {
            name: d.name.clone(),
            suid: d.suid,
            flags: d.flags,
            fields,
            annotation: Vec::new(),
            super_desc,
        }));
        self.descs.insert(name.to_string(), here);
        Ok(here)
    }

    /// A field type's signature string: the JVM interns them, so equal ones are one string.
    fn signature(&mut self, sig: &str) -> Handle {
        if let Some(h) = self.signatures.get(sig) {
            return *h;
        }
        let h = self.graph.add(Entry::String(sig.to_string()));
        self.signatures.insert(sig.to_string(), h);
        h
    }

    /// A new string (a string the JVM built at run time: each is its own object).
    pub fn string(&mut self, s: &str) -> Value {
        Value::Ref(self.graph.add(Entry::String(s.to_string())))
    }

    /// An interned string (a literal in Spark's code, or a constant it keeps): equal ones are
    /// one object, written once.
    pub fn interned(&mut self, s: &str) -> Value {
        if let Some(h) = self.interned.get(s) {
            return Value::Ref(*h);
        }
        let h = self.graph.add(Entry::String(s.to_string()));
        self.interned.insert(s.to_string(), h);
        Value::Ref(h)
    }

    /// An object of class `class` with the fields of its whole hierarchy by name (every one
    /// given); classes with a `writeObject` method get an empty annotation (only
    /// `defaultWriteObject`).
    pub fn object(&mut self, class: &str, fields: &[(&str, Value)]) -> Result<Value, BuildError> {
        self.object_with(class, fields, Vec::new())
    }

    /// As [`Builder::object`], with what the class's own `writeObject` wrote after its fields.
    pub fn object_with(
        &mut self,
        class: &str,
        fields: &[(&str, Value)],
        annotation: Vec<Item>,
    ) -> Result<Value, BuildError> {
        let desc = self.desc(class)?;
        let chain = self
            .graph
            .hierarchy(desc)
            .ok_or_else(|| BuildError::Value(format!("{class}: a broken class hierarchy")))?;
        let mut used = vec![false; fields.len()];
        let mut data = Vec::with_capacity(chain.len());
        let mut annotation = Some(annotation);
        let last = chain.len().saturating_sub(1);
        for (depth, level) in chain.iter().enumerate() {
            let d = self
                .graph
                .class_desc(*level)
                .ok_or_else(|| BuildError::Value(format!("{class}: a broken class hierarchy")))?
                .clone();
            let mut values = Vec::with_capacity(d.fields.len());
            for f in &d.fields {
                let i = fields
                    .iter()
                    .position(|(n, _)| *n == f.name)
                    .ok_or_else(|| BuildError::Field {
                        class: class.to_string(),
                        problem: format!("field {} ({}) not given", f.name, d.name),
                    })?;
                used[i] = true;
                let v = fields[i].1;
                let fits = match f.code {
                    b'L' | b'[' => matches!(v, Value::Null | Value::Ref(_)),
                    code => v.code() == code,
                };
                if !fits {
                    return Err(BuildError::Field {
                        class: class.to_string(),
                        problem: format!(
                            "field {} has type {:?}, given a value of type {:?}",
                            f.name,
                            f.code as char,
                            v.code() as char
                        ),
                    });
                }
                values.push(v);
            }
            let writes = d.flags & SC_WRITE_METHOD != 0;
            let annotation = if writes {
                Some(if depth == last {
                    annotation.take().unwrap_or_default()
                } else {
                    Vec::new()
                })
            } else {
                None
            };
            data.push(ClassData { values, annotation });
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(BuildError::Field {
                class: class.to_string(),
                problem: format!("it has no field {}", fields[i].0),
            });
        }
        if annotation.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(BuildError::Field {
                class: class.to_string(),
                problem: "block data for a class without writeObject".into(),
            });
        }
        Ok(Value::Ref(
            self.graph.add(Entry::Object(Object { class: desc, data })),
        ))
    }

    /// Sets field `name` of object `object` (to point an exception's `cause` at itself, as
    /// Java's `Throwable` does when it has none).
    pub fn set_field(&mut self, object: Value, name: &str, value: Value) -> Result<(), BuildError> {
        let Value::Ref(h) = object else {
            return Err(BuildError::Value(
                "set_field on a value that is not an object".into(),
            ));
        };
        let (class, position) = {
            let Some(Entry::Object(o)) = self.graph.get(h) else {
                return Err(BuildError::Value(
                    "set_field on a value that is not an object".into(),
                ));
            };
            let chain = self.graph.hierarchy(o.class).unwrap_or_default();
            let found = chain.iter().enumerate().rev().find_map(|(level, d)| {
                self.graph
                    .class_desc(*d)
                    .and_then(|d| d.fields.iter().position(|f| f.name == name))
                    .map(|i| (level, i))
            });
            let class = self
                .graph
                .class_desc(o.class)
                .map(|d| d.name.clone())
                .unwrap_or_default();
            (class, found)
        };
        let (level, i) = position.ok_or_else(|| BuildError::Field {
            class,
            problem: format!("it has no field {name}"),
        })?;
        if let Some(Entry::Object(o)) = self.graph.get_mut(h) {
            if let Some(slot) = o.data.get_mut(level).and_then(|d| d.values.get_mut(i)) {
                *slot = value;
            }
        }
        Ok(())
    }

    /// The `java.lang.Class` object of `class` (one per class).
    pub fn class_object(&mut self, class: &str) -> Result<Value, BuildError> {
        if let Some(h) = self.classes.get(class) {
            return Ok(Value::Ref(*h));
        }
        let desc = self.desc(class)?;
        let h = self.graph.add(Entry::Class(desc));
        self.classes.insert(class.to_string(), h);
        Ok(Value::Ref(h))
    }

    /// A Scala `object` (`scala.None$`), written once and referred to after: in Scala 2.13 its
    /// `ModuleSerializationProxy` (as the JVM's replacement table does), in Scala 2.12 the object
    /// itself. A 2.12 object with fields (an `Enumeration`'s) cannot be built from its class: it
    /// is refused, and only a graft of an original stream's copy gives it.
    pub fn module(&mut self, class: &str) -> Result<Value, BuildError> {
        if let Some(h) = self.modules.get(class) {
            return Ok(Value::Ref(*h));
        }
        if self.table.writes_modules_whole() {
            if !self.fieldless(class)? {
                return Err(BuildError::Unsupported(format!(
                    "Spark {} writes the Scala object {class} with its fields (a whole \
                     Enumeration, for one): sparkwire writes it only from an original stream \
                     that holds it",
                    self.table.spark()
                )));
            }
            let v = self.object(class, &[])?;
            if let Value::Ref(h) = v {
                self.modules.insert(class.to_string(), h);
            }
            return Ok(v);
        }
        let c = self.class_object(class)?;
        let v = self.object(
            "scala.runtime.ModuleSerializationProxy",
            &[("moduleClass", c)],
        )?;
        if let Value::Ref(h) = v {
            self.modules.insert(class.to_string(), h);
        }
        Ok(v)
    }

    /// Whether `class` and its superclasses have no serializable fields and no `writeObject`.
    fn fieldless(&self, class: &str) -> Result<bool, BuildError> {
        let mut next = Some(class.to_string());
        let mut steps = 0;
        while let Some(n) = next {
            steps += 1;
            let entry = self.table.get(&n).ok_or_else(|| self.no_class(&n))?;
            if steps > 64 || !entry.fields.is_empty() || entry.flags & SC_WRITE_METHOD != 0 {
                return Ok(false);
            }
            next = entry.super_class.clone();
        }
        Ok(true)
    }

    /// A constant of a Java `enum` (one object per constant).
    pub fn enum_constant(&mut self, class: &str, name: &str) -> Result<Value, BuildError> {
        let key = (class.to_string(), name.to_string());
        if let Some(h) = self.enums.get(&key) {
            return Ok(Value::Ref(*h));
        }
        let desc = self.desc(class)?;
        let Value::Ref(n) = self.interned(name) else {
            return Err(BuildError::Value("an enum name".into()));
        };
        let h = self.graph.add(Entry::Enum {
            class: desc,
            name: n,
        });
        self.enums.insert(key, h);
        Ok(Value::Ref(h))
    }

    fn boxed(&mut self, class: &'static str, key: i64, value: Value) -> Result<Value, BuildError> {
        // `Integer.valueOf`, `Long.valueOf` keep one box per value in -128..=127; `Boolean`
        // has two.
        let cached = class == "java.lang.Boolean" || (-128..=127).contains(&key);
        if cached {
            if let Some(h) = self.boxes.get(&(class, key)) {
                return Ok(Value::Ref(*h));
            }
        }
        let v = self.object(class, &[("value", value)])?;
        if let (true, Value::Ref(h)) = (cached, v) {
            self.boxes.insert((class, key), h);
        }
        Ok(v)
    }

    /// A `java.lang.Integer`, as `Integer.valueOf` gives it.
    pub fn boxed_int(&mut self, i: i32) -> Result<Value, BuildError> {
        self.boxed("java.lang.Integer", i64::from(i), Value::Int(i))
    }

    /// A `java.lang.Long`, as `Long.valueOf` gives it.
    pub fn boxed_long(&mut self, l: i64) -> Result<Value, BuildError> {
        self.boxed("java.lang.Long", l, Value::Long(l))
    }

    /// A `java.lang.Boolean` (`TRUE` or `FALSE`).
    pub fn boxed_bool(&mut self, b: bool) -> Result<Value, BuildError> {
        self.boxed("java.lang.Boolean", i64::from(b), Value::Bool(b))
    }

    /// An array of class `class` (`[Ljava.lang.Object;`) holding `values`.
    pub fn array(&mut self, class: &str, values: Vec<Value>) -> Result<Value, BuildError> {
        let desc = self.desc(class)?;
        Ok(Value::Ref(self.graph.add(Entry::Array(Array {
            class: desc,
            elements: Elements::Values(values),
        }))))
    }

    /// A `byte[]`.
    pub fn byte_array(&mut self, bytes: &[u8]) -> Result<Value, BuildError> {
        let desc = self.desc("[B")?;
        Ok(Value::Ref(self.graph.add(Entry::Array(Array {
            class: desc,
            elements: Elements::Primitive {
                code: b'B',
                raw: bytes.to_vec(),
            },
        }))))
    }

    /// Copies `value` of `from` (and all it reaches) into this graph: class descriptors and
    /// signatures become this graph's own (one per class), sharing within the copy is kept.
    pub fn graft(&mut self, from: &Graph, value: Value) -> Result<Value, BuildError> {
        let mut map: HashMap<Handle, Handle> = HashMap::new();
        let mut todo = vec![];
        let root = match value {
            Value::Ref(h) => h,
            other => return Ok(other),
        };
        // First pass: give every reachable entry a handle here (descriptors by class name).
        let mut stack = vec![root];
        while let Some(h) = stack.pop() {
            if map.contains_key(&h) {
                continue;
            }
            let entry = from
                .get(h)
                .ok_or_else(|| BuildError::Value("a graft of a broken graph".into()))?;
            if let Some(Value::Ref(shared)) = self.canonical(from, h)? {
                map.insert(h, shared);
                continue;
            }
            let here = match entry {
                Entry::ClassDesc(d) => self.desc_like(from, h, &d.name)?,
                _ => {
                    let placeholder = self.graph.add(Entry::String(String::new()));
                    todo.push((h, placeholder));
                    placeholder
                }
            };
            map.insert(h, here);
            if !matches!(entry, Entry::ClassDesc(_)) {
                stack.extend(children(entry));
            }
        }
        let remap = |v: Value, map: &HashMap<Handle, Handle>| match v {
            Value::Ref(h) => map.get(&h).map(|n| Value::Ref(*n)).unwrap_or(Value::Null),
            other => other,
        };
        let remap_items = |items: &[Item], map: &HashMap<Handle, Handle>| {
            items
                .iter()
                .map(|i| match i {
                    Item::Data(d) => Item::Data(d.clone()),
                    Item::Value(v) => Item::Value(remap(*v, map)),
                })
                .collect::<Vec<_>>()
        };
        let look = |h: &Handle| {
            map.get(h)
                .copied()
                .ok_or_else(|| BuildError::Value("a graft of a broken graph".into()))
        };
        for (old, new) in todo {
            let entry = match from.get(old) {
                Some(Entry::String(s)) => Entry::String(s.clone()),
                Some(Entry::Object(o)) => Entry::Object(Object {
                    class: look(&o.class)?,
                    data: o
                        .data
                        .iter()
                        .map(|d| ClassData {
                            values: d.values.iter().map(|v| remap(*v, &map)).collect(),
                            annotation: d.annotation.as_deref().map(|a| remap_items(a, &map)),
                        })
                        .collect(),
                }),
                Some(Entry::Array(a)) => Entry::Array(Array {
                    class: look(&a.class)?,
                    elements: match &a.elements {
                        Elements::Values(vs) => {
                            Elements::Values(vs.iter().map(|v| remap(*v, &map)).collect())
                        }
                        p => p.clone(),
                    },
                }),
                Some(Entry::Enum { class, name }) => Entry::Enum {
                    class: look(class)?,
                    name: look(name)?,
                },
                Some(Entry::Class(d)) => Entry::Class(look(d)?),
                _ => return Err(BuildError::Value("a graft of a broken graph".into())),
            };
            if let Some(slot) = self.graph.get_mut(new) {
                *slot = entry;
            }
        }
        Ok(Value::Ref(look(&root)?))
    }
}

impl Builder<'_> {
    /// The one object this graph has for entry `h` of `from`, if the JVM keeps one such object
    /// however it came to be (a Scala `object`, a class, an enum constant). Boxes and strings
    /// are not: a deserialized `Integer` or `String` is a new object.
    fn canonical(&mut self, from: &Graph, h: Handle) -> Result<Option<Value>, BuildError> {
        let node = super::serial::Node::new(from, Value::Ref(h));
        Ok(match from.get(h) {
            Some(Entry::Class(_)) => match node.class_object() {
                Some(name) if self.table.get(name).is_some() => Some(self.class_object(name)?),
                _ => None,
            },
            Some(Entry::Enum { .. }) => match (node.class_name(), node.enum_name()) {
                (Some(c), Some(n)) if self.table.get(c).is_some() => {
                    Some(self.enum_constant(c, n)?)
                }
                _ => None,
            },
            Some(Entry::Object(_)) if self.table.writes_modules_whole() => {
                // Scala 2.12: a singleton object written as itself (`scala.None$`).
                match node.class_name() {
                    Some(c) if c.ends_with('$') && self.fieldless(c).unwrap_or(false) => {
                        Some(self.module(c)?)
                    }
                    _ => None,
                }
            }
            Some(Entry::Object(_)) => match node.module().filter(|m| self.table.get(m).is_some()) {
                Some(module) => Some(self.module(module)?),
                None => None,
            },
            _ => None,
        })
    }
}

/// The entries an entry refers to.
fn children(entry: &Entry) -> Vec<Handle> {
    let refs = |vs: &[Value]| {
        vs.iter()
            .filter_map(|v| match v {
                Value::Ref(h) => Some(*h),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    match entry {
        Entry::String(_) | Entry::ClassDesc(_) => Vec::new(),
        Entry::Object(o) => {
            let mut out = vec![o.class];
            for d in &o.data {
                out.extend(refs(&d.values));
                for i in d.annotation.iter().flatten() {
                    if let Item::Value(Value::Ref(h)) = i {
                        out.push(*h);
                    }
                }
            }
            out
        }
        Entry::Array(a) => {
            let mut out = vec![a.class];
            if let Elements::Values(vs) = &a.elements {
                out.extend(refs(vs));
            }
            out
        }
        Entry::Enum { class, name } => vec![*class, *name],
        Entry::Class(d) => vec![*d],
    }
}

/// Whether entry `h` is a boxed primitive (`Integer`, `Long`, `Boolean`, `Double`, …): a
/// value whose identity, like a string's, a typed value does not hold.
fn is_box(g: &Graph, h: Handle) -> bool {
    let Some(Entry::Object(o)) = g.get(h) else {
        return false;
    };
    g.class_desc(o.class).is_some_and(|d| {
        matches!(
            d.name.as_str(),
            "java.lang.Integer"
                | "java.lang.Long"
                | "java.lang.Boolean"
                | "java.lang.Double"
                | "java.lang.Short"
                | "java.lang.Byte"
                | "java.lang.Float"
                | "java.lang.Character"
        )
    })
}

/// `theirs`' box at `hb` as an entry of `ours` (its class descriptor `ours`' one at `ha`), to
/// compare values.
fn theirs_as_ours(ours: &Graph, ha: Handle, theirs: &Graph, hb: Handle) -> Option<Entry> {
    let (Some(Entry::Object(a)), Some(Entry::Object(b))) = (ours.get(ha), theirs.get(hb)) else {
        return None;
    };
    let same_class =
        ours.class_desc(a.class).map(|d| &d.name) == theirs.class_desc(b.class).map(|d| &d.name);
    same_class.then(|| {
        Entry::Object(Object {
            class: a.class,
            data: b.data.clone(),
        })
    })
}

/// Where a value sits in a graph.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Root,
    Field(Handle, usize, usize),
    Annotation(Handle, usize, usize),
    Element(Handle, usize),
}

fn slot_value(g: &Graph, slot: Slot) -> Option<Value> {
    match slot {
        Slot::Root => g.root().map(Value::Ref),
        Slot::Field(h, level, i) => match g.get(h)? {
            Entry::Object(o) => o.data.get(level)?.values.get(i).copied(),
            _ => None,
        },
        Slot::Annotation(h, level, i) => match g.get(h)? {
            Entry::Object(o) => match o.data.get(level)?.annotation.as_ref()?.get(i)? {
                Item::Value(v) => Some(*v),
                Item::Data(_) => None,
            },
            _ => None,
        },
        Slot::Element(h, i) => match g.get(h)? {
            Entry::Array(Array {
                elements: Elements::Values(vs),
                ..
            }) => vs.get(i).copied(),
            _ => None,
        },
    }
}

fn set_slot(g: &mut Graph, slot: Slot, v: Value) {
    match slot {
        Slot::Root => {}
        Slot::Field(h, level, i) => {
            if let Some(Entry::Object(o)) = g.get_mut(h) {
                if let Some(x) = o.data.get_mut(level).and_then(|d| d.values.get_mut(i)) {
                    *x = v;
                }
            }
        }
        Slot::Annotation(h, level, i) => {
            if let Some(Entry::Object(o)) = g.get_mut(h) {
                if let Some(Item::Value(x)) = o
                    .data
                    .get_mut(level)
                    .and_then(|d| d.annotation.as_mut())
                    .and_then(|a| a.get_mut(i))
                {
                    *x = v;
                }
            }
        }
        Slot::Element(h, i) => {
            if let Some(Entry::Array(Array {
                elements: Elements::Values(vs),
                ..
            })) = g.get_mut(h)
            {
                if let Some(x) = vs.get_mut(i) {
                    *x = v;
                }
            }
        }
    }
}

/// The value slots of an entry, in the order a stream writes them.
fn slots_of(g: &Graph, h: Handle) -> Vec<Slot> {
    match g.get(h) {
        Some(Entry::Object(o)) => {
            let mut out = Vec::new();
            for (level, d) in o.data.iter().enumerate() {
                out.extend((0..d.values.len()).map(|i| Slot::Field(h, level, i)));
                if let Some(a) = &d.annotation {
                    for (i, item) in a.iter().enumerate() {
                        if matches!(item, Item::Value(_)) {
                            out.push(Slot::Annotation(h, level, i));
                        }
                    }
                }
            }
            out
        }
        Some(Entry::Array(Array {
            elements: Elements::Values(vs),
            ..
        })) => (0..vs.len()).map(|i| Slot::Element(h, i)).collect(),
        _ => Vec::new(),
    }
}

/// Makes equal strings of `ours` one object exactly where they are one object in `theirs`, a
/// graph of the same shape (the stream the typed value was decoded from): which equal strings
/// share a Java object is not part of a typed value. Returns whether the shapes matched (if
/// not, `ours` is left as it was).
pub fn align_strings(ours: &mut Graph, theirs: &Graph) -> bool {
    let before = ours.clone();
    if align(ours, theirs).is_none() {
        *ours = before;
        return false;
    }
    true
}

fn align(ours: &mut Graph, theirs: &Graph) -> Option<()> {
    let mut their_string: HashMap<Handle, Handle> = HashMap::new();
    let mut our_used: HashMap<Handle, ()> = HashMap::new();
    let mut visited: HashMap<Handle, ()> = HashMap::new();
    // Pairs of slots, ours and theirs, in stream order (a stack, children pushed reversed).
    let mut stack = vec![(Slot::Root, Slot::Root)];
    let mut steps = 0usize;
    while let Some((mine, other)) = stack.pop() {
        steps += 1;
        if steps > 4 * (ours.entries().len() + theirs.entries().len()) + 16 {
            return None;
        }
        let (a, b) = (slot_value(ours, mine), slot_value(theirs, other));
        let (Some(Value::Ref(ha)), Some(Value::Ref(hb))) = (a, b) else {
            if a.map(|v| v.code()) != b.map(|v| v.code()) {
                return None;
            }
            continue;
        };
        match (ours.get(ha)?, theirs.get(hb)?) {
            (Entry::String(sa), Entry::String(sb)) => {
                if sa != sb {
                    return None;
                }
                let target = match their_string.get(&hb) {
                    // Theirs refers back to an earlier string here: so does ours.
                    Some(earlier) => *earlier,
                    // A new string in theirs: ours must be a string not written before.
                    None if our_used.contains_key(&ha) => {
                        let copy = sa.clone();
                        ours.add(Entry::String(copy))
                    }
                    None => ha,
                };
                their_string.insert(hb, target);
                our_used.insert(target, ());
                if target != ha {
                    set_slot(ours, mine, Value::Ref(target));
                }
            }
            (Entry::Object(_), Entry::Object(_)) if is_box(ours, ha) && is_box(theirs, hb) => {
                if ours.get(ha) != theirs_as_ours(ours, ha, theirs, hb).as_ref() {
                    return None;
                }
                let target = match their_string.get(&hb) {
                    Some(earlier) => *earlier,
                    None if our_used.contains_key(&ha) => {
                        let copy = ours.get(ha)?.clone();
                        ours.add(copy)
                    }
                    None => ha,
                };
                their_string.insert(hb, target);
                our_used.insert(target, ());
                if target != ha {
                    set_slot(ours, mine, Value::Ref(target));
                }
            }
            (Entry::Object(_), Entry::Object(_)) | (Entry::Array(_), Entry::Array(_)) => {
                if visited.insert(ha, ()).is_some() {
                    continue;
                }
                let (sa, sb) = (slots_of(ours, ha), slots_of(theirs, hb));
                if sa.len() != sb.len() {
                    return None;
                }
                for pair in sa.into_iter().zip(sb).rev() {
                    stack.push(pair);
                }
            }
            (x, y) if std::mem::discriminant(x) == std::mem::discriminant(y) => {}
            _ => return None,
        }
    }
    Some(())
}
