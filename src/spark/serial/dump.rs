//! A graph as text: one line per value, indented by nesting, each entry with its wire handle where
//! the stream first writes it and `@handle` where it refers back to it.

use std::fmt::Write as _;

use super::*;

/// The graph as an indented tree in stream order.
///
/// ```
/// use sparkwire::spark::{dump_stream, read_stream, Limits};
/// let stream = [
///     0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0x00, 0x11, b'j', b'a', b'v', b'a', b'.', b'l', b'a',
///     b'n', b'g', b'.', b'B', b'o', b'o', b'l', b'e', b'a', b'n', 0xCD, 0x20, 0x72, 0x80, 0xD5,
///     0x9C, 0xFA, 0xEE, 0x02, 0x00, 0x01, b'Z', 0x00, 0x05, b'v', b'a', b'l', b'u', b'e', 0x78,
///     0x70, 0x01,
/// ];
/// let text = dump_stream(&read_stream(&stream, &Limits::default())?);
/// // Handle 1 is the class descriptor, 2 the object.
/// assert_eq!(text, "#2 java.lang.Boolean\n  value: true\n");
/// # Ok::<(), sparkwire::spark::SerialError>(())
/// ```
pub fn dump(graph: &Graph) -> String {
    let mut d = Dump {
        g: graph,
        seen: vec![None; graph.entries().len()],
        next: 0,
        out: String::new(),
    };
    d.value(graph.root().map(Value::Ref).unwrap_or(Value::Null), 0, "");
    d.out
}

struct Dump<'g> {
    g: &'g Graph,
    seen: Vec<Option<u32>>,
    next: u32,
    out: String,
}

const MAX_DUMP_DEPTH: usize = 64;

impl Dump<'_> {
    fn line(&mut self, depth: usize, label: &str, text: &str) {
        let _ = writeln!(self.out, "{:indent$}{label}{text}", "", indent = depth * 2);
    }

    fn mark(&mut self, h: Handle) -> u32 {
        // Descriptors are numbered too, but not shown: the handles count every entry.
        self.next += 1;
        self.seen[h.index()] = Some(self.next);
        self.next
    }

    fn desc_chain(&mut self, class: Handle) {
        if let Some(chain) = self.g.hierarchy(class) {
            for h in chain {
                if self.seen.get(h.index()).is_some_and(Option::is_none) {
                    self.mark(h);
                    if let Some(d) = self.g.class_desc(h) {
                        for f in &d.fields {
                            if let Some(s) = f.signature {
                                if self.seen.get(s.index()).is_some_and(Option::is_none) {
                                    self.mark(s);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn value(&mut self, v: Value, depth: usize, label: &str) {
        let h = match v {
            Value::Null => return self.line(depth, label, "null"),
            Value::Ref(h) => h,
            Value::Bool(b) => return self.line(depth, label, &b.to_string()),
            Value::Byte(b) => return self.line(depth, label, &format!("{b}b")),
            Value::Char(c) => return self.line(depth, label, &format!("char {c}")),
            Value::Short(s) => return self.line(depth, label, &format!("{s}s")),
            Value::Int(i) => return self.line(depth, label, &i.to_string()),
            Value::Long(l) => return self.line(depth, label, &format!("{l}L")),
            Value::Float(f) => return self.line(depth, label, &format!("{}f", f32::from_bits(f))),
            Value::Double(d) => return self.line(depth, label, &format!("{}d", f64::from_bits(d))),
        };
        if let Some(Some(n)) = self.seen.get(h.index()) {
            let n = *n;
            let what = Node::new(self.g, v).describe();
            return self.line(depth, label, &format!("@{n} ({what})"));
        }
        if depth > MAX_DUMP_DEPTH {
            return self.line(depth, label, "…");
        }
        let Some(entry) = self.g.get(h) else {
            return self.line(depth, label, "(no such entry)");
        };
        match entry {
            Entry::String(s) => {
                let n = self.mark(h);
                self.line(depth, label, &format!("#{n} {s:?}"));
            }
            Entry::ClassDesc(d) => {
                let n = self.mark(h);
                let name = d.name.clone();
                self.line(depth, label, &format!("#{n} class descriptor {name}"));
            }
            Entry::Class(desc) => {
                self.desc_chain(*desc);
                let n = self.mark(h);
                let name = self.g.class_desc(*desc).map(|d| d.name.clone());
                self.line(
                    depth,
                    label,
                    &format!("#{n} class {}", name.unwrap_or_default()),
                );
            }
            Entry::Enum { class, name } => {
                self.desc_chain(*class);
                let n = self.mark(h);
                let cname = self
                    .g
                    .class_desc(*class)
                    .map(|d| d.name.clone())
                    .unwrap_or_default();
                self.line(depth, label, &format!("#{n} enum {cname}"));
                self.value(Value::Ref(*name), depth + 1, "name: ");
            }
            Entry::Array(a) => {
                self.desc_chain(a.class);
                let n = self.mark(h);
                let cname = self
                    .g
                    .class_desc(a.class)
                    .map(|d| d.name.clone())
                    .unwrap_or_default();
                match &a.elements {
                    Elements::Primitive { raw, .. } => self.line(
                        depth,
                        label,
                        &format!("#{n} {cname} of {} bytes", raw.len()),
                    ),
                    Elements::Values(vs) => {
                        self.line(depth, label, &format!("#{n} {cname} [{}]", vs.len()));
                        for (i, e) in vs.iter().enumerate() {
                            self.value(*e, depth + 1, &format!("[{i}] "));
                        }
                    }
                }
            }
            Entry::Object(o) => {
                self.desc_chain(o.class);
                let n = self.mark(h);
                let cname = self
                    .g
                    .class_desc(o.class)
                    .map(|d| d.name.clone())
                    .unwrap_or_default();
                self.line(depth, label, &format!("#{n} {cname}"));
                let chain = self.g.hierarchy(o.class).unwrap_or_default();
                for (level, data) in chain.iter().zip(&o.data) {
                    let names: Vec<String> = self
                        .g
                        .class_desc(*level)
                        .map(|d| d.fields.iter().map(|f| f.name.clone()).collect())
                        .unwrap_or_default();
                    for (name, v) in names.iter().zip(&data.values) {
                        self.value(*v, depth + 1, &format!("{name}: "));
                    }
                    if let Some(items) = &data.annotation {
                        for item in items {
                            match item {
                                Item::Data(b) => self.line(
                                    depth + 1,
                                    "",
                                    &format!("(block data, {} bytes)", b.len()),
                                ),
                                Item::Value(v) => self.value(*v, depth + 1, "(object) "),
                            }
                        }
                    }
                }
            }
        }
    }
}
