//! sparkwire's typed messages to Spark's Java objects: the graph a Spark 4.0.1 process
//! (protocol version 2, Scala 2.13) or a Spark 3.0.3 process (protocol version 1, Scala 2.12)
//! would serialize for the same message, written to the same bytes.
//!
//! Spark 3.0.3's forms: Scala objects written as themselves (`None$`, `Nil` through
//! `List$SerializationProxy` and `ListSerializeEnd$`), `Map1`–`Map4` with plain field names and
//! `HashMap$SerializationProxy`, `mutable.HashMap`'s own `writeObject` (Scala 2.12's hash table
//! order), `mutable.ArraySeq`, `ArrayBuffer`, `Vector` and `WrappedArray$ofRef`; 3.0.3's older
//! fields through the version-1 forms of `crate::messages::legacy`. A Scala 2.12 enumeration
//! value carries its whole enumeration object: the original stream's when given (it holds the
//! process's state, such as the names asked for), else the object as a fresh JVM holds it
//! (`ExecutorState`, `TaskState`, `DriverState`; any other is refused with a reason).
//!
//! Where a typed value does not hold all of Spark's object (an `ApplicationDescription`'s
//! resource profile carries values Spark computes lazily, a `Command`'s environment is a hash map
//! whose order the typed map does not keep), the object decoded from the original stream can be
//! given: if it maps to the same typed value, it is written as it came.

use std::collections::BTreeMap;

use super::build::{BuildError, Builder};
use super::map::{
    app_description_of, classify, driver_description_of, endpoint_ref_of, error_description_of,
    resource_profile_of, Classified, Typed,
};
use super::release::Release;
use super::serial::{self, Graph, Item, Node, SerialError, Value};
use crate::messages::legacy;
use crate::messages::{
    Addr, ApplicationDescription, CoarseMessage, Command, DeployMessage, DriverDescription,
    DriverState, EndpointRef, ErrorDescription, ExecutorDescription, ExecutorLossReason,
    ExecutorState, Payload, ProfileExecutors, ResourceProfile, Resources, TaskState,
};

/// What cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message cannot be built in Spark's form.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The graph cannot be written.
    #[error(transparent)]
    Serial(#[from] SerialError),
}

const DEPLOY: &str = "org.apache.spark.deploy.DeployMessages$";
const COARSE: &str = "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$";
const EXECUTOR_STATE: &str = "org.apache.spark.deploy.ExecutorState$";
const DRIVER_STATE: &str = "org.apache.spark.deploy.master.DriverState$";
const TASK_STATE: &str = "org.apache.spark.TaskState$";
/// The scale of Spark 4.3's `StatusUpdate.taskCpus`.
const TASK_CPUS_SCALE: i32 = 9;
/// Scala's `BigDecimal.hashCodeNotComputed`, what a `BigDecimal` whose hash code was never
/// asked for holds.
const SCALA_HASH_NOT_COMPUTED: i32 = 0x5D50_690F;
const APP_DESCRIPTION: &str = "org.apache.spark.deploy.ApplicationDescription";
const EXECUTOR_DESCRIPTION: &str = "org.apache.spark.deploy.ExecutorDescription";

/// The Java stream of message `m` as Spark of protocol `version` writes it. `original`, the
/// stream's graph as decoded, supplies what the typed value does not hold.
pub fn message_stream(
    m: &Typed,
    release: impl Into<&'static Release>,
    original: Option<&Graph>,
) -> Result<Vec<u8>, EncodeError> {
    let g = message_graph(m, release, original)?;
    Ok(serial::write(&g, &super::java::limits())?)
}

/// The graph of message `m` (see [`message_stream`]).
pub fn message_graph(
    m: &Typed,
    release: impl Into<&'static Release>,
    original: Option<&Graph>,
) -> Result<Graph, EncodeError> {
    let mut s = Scala::new(release.into(), original);
    let root = match m {
        Typed::Deploy(d) => s.deploy(d)?,
        Typed::Coarse(c) => s.coarse(c)?,
    };
    let mut g = s.b.finish(root);
    if let Some(o) = original {
        super::build::align_strings(&mut g, o);
    }
    Ok(g)
}

/// A `java.lang.Boolean` reply's stream.
pub fn bool_stream(b: bool, release: impl Into<&'static Release>) -> Result<Vec<u8>, EncodeError> {
    let mut s = Scala::new(release.into(), None);
    let v = s.b.boxed_bool(b)?;
    Ok(serial::write(&s.b.finish(v), &super::java::limits())?)
}

/// A `java.lang.Integer` reply's stream.
pub fn int_stream(i: i32, release: impl Into<&'static Release>) -> Result<Vec<u8>, EncodeError> {
    let mut s = Scala::new(release.into(), None);
    let v = s.b.boxed_int(i)?;
    Ok(serial::write(&s.b.finish(v), &super::java::limits())?)
}

/// The stream of one `java.lang.Class` object (`TC_CLASS`): `class`'s descriptor, with its
/// superclasses', as `release` describes them. A reader resolves the class and checks each
/// descriptor's serialVersionUID against its own (`ObjectStreamClass.initNonProxy`) without making
/// an object of it: the probe a Spark-wire front asks a peer whose release its streams leave
/// open (SPEC §15.3).
pub fn class_stream(
    class: &str,
    release: impl Into<&'static Release>,
) -> Result<Vec<u8>, EncodeError> {
    let mut s = Scala::new(release.into(), None);
    let v = s.b.class_object(class)?;
    Ok(serial::write(&s.b.finish(v), &super::java::limits())?)
}

/// `RpcEndpointVerifier.CheckExistence(name)`'s stream: the ask a Spark peer sends before it
/// registers, to learn that an endpoint exists.
pub fn check_existence_stream(
    name: &str,
    release: impl Into<&'static Release>,
) -> Result<Vec<u8>, EncodeError> {
    let mut s = Scala::new(release.into(), None);
    let n = s.b.string(name);
    let v = s.b.object(super::rpc::CHECK_EXISTENCE, &[("name", n)])?;
    Ok(serial::write(&s.b.finish(v), &super::java::limits())?)
}

/// Builds Scala 2.13's forms (Spark 4) or Scala 2.12's (Spark 3) on a [`Builder`].
struct Scala<'t, 'o> {
    b: Builder<'t>,
    original: Option<&'o Graph>,
    enum_values: BTreeMap<(&'static str, usize), Value>,
    /// Scala 2.12's enumeration objects, copied whole from the original stream.
    enum_objects: BTreeMap<&'static str, Value>,
    nil: Option<Value>,
    /// Scala 2.12's empty `Vector` (one object).
    empty_vector: Option<Value>,
    release: &'static Release,
}

type R = Result<Value, BuildError>;

impl<'t, 'o> Scala<'t, 'o> {
    fn new(release: &'static Release, original: Option<&'o Graph>) -> Self {
        Scala {
            b: Builder::new(release.table()),
            original,
            enum_values: BTreeMap::new(),
            enum_objects: BTreeMap::new(),
            nil: None,
            empty_vector: None,
            release,
        }
    }

    /// A string built at run time; the empty string is Java's interned `""`, which the JDK's
    /// string operations return for every empty result.
    fn s(&mut self, s: &str) -> Value {
        if s.is_empty() {
            self.b.interned(s)
        } else {
            self.b.string(s)
        }
    }

    fn obj(&mut self, class: &str, fields: &[(&str, Value)]) -> R {
        self.b.object(class, fields)
    }

    fn msg(&mut self, name: &str, fields: &[(&str, Value)]) -> R {
        self.b.object(&format!("{DEPLOY}{name}"), fields)
    }

    fn cmsg(&mut self, name: &str, fields: &[(&str, Value)]) -> R {
        self.b.object(&format!("{COARSE}{name}"), fields)
    }

    fn none(&mut self) -> R {
        self.b.module("scala.None$")
    }

    fn some(&mut self, v: Value) -> R {
        self.obj("scala.Some", &[("value", v)])
    }

    fn opt_string(&mut self, v: Option<&str>) -> R {
        match v {
            None => self.none(),
            Some(s) => {
                let s = self.s(s);
                self.some(s)
            }
        }
    }

    fn opt_int(&mut self, v: Option<i32>) -> R {
        match v {
            None => self.none(),
            Some(i) => {
                let b = self.b.boxed_int(i)?;
                self.some(b)
            }
        }
    }

    /// An immutable `List` (Scala 2.13 writes it through `DefaultSerializationProxy`; `Nil` is
    /// one object).
    fn list(&mut self, items: Vec<Value>) -> R {
        if items.is_empty() {
            if let Some(nil) = self.nil {
                return Ok(nil);
            }
        }
        if self.scala_212() {
            // Scala 2.12: `List$SerializationProxy` writes the elements and `ListSerializeEnd`.
            let empty = items.is_empty();
            let mut annotation: Vec<Item> = items.into_iter().map(Item::Value).collect();
            let end = self
                .b
                .module("scala.collection.immutable.ListSerializeEnd$")?;
            annotation.push(Item::Value(end));
            let v = self.b.object_with(
                "scala.collection.immutable.List$SerializationProxy",
                &[],
                annotation,
            )?;
            if empty {
                self.nil = Some(v);
            }
            return Ok(v);
        }
        let list = self.b.module("scala.collection.immutable.List$")?;
        let factory = self.obj(
            "scala.collection.IterableFactory$ToFactory",
            &[("factory", list)],
        )?;
        let empty = items.is_empty();
        let mut annotation = vec![Item::Data(
            if empty { 0i32 } else { -1i32 }.to_be_bytes().to_vec(),
        )];
        annotation.extend(items.into_iter().map(Item::Value));
        if !empty {
            let end = self.b.module("scala.collection.generic.SerializeEnd$")?;
            annotation.push(Item::Value(end));
        }
        let v = self.b.object_with(
            "scala.collection.generic.DefaultSerializationProxy",
            &[("factory", factory)],
            annotation,
        )?;
        if empty {
            self.nil = Some(v);
        }
        Ok(v)
    }

    fn string_list(&mut self, items: &[String]) -> R {
        let v = items.iter().map(|s| self.s(s)).collect();
        self.list(v)
    }

    /// An `ArraySeq` of objects (Scala 2.12: a mutable `ArraySeq`, its length and its array).
    fn array_seq(&mut self, items: Vec<Value>) -> R {
        if self.scala_212() {
            let n = i32::try_from(items.len()).map_err(|_| BuildError::Value("a length".into()))?;
            let arr = self.b.array("[Ljava.lang.Object;", items)?;
            return self.obj(
                "scala.collection.mutable.ArraySeq",
                &[("length", Value::Int(n)), ("array", arr)],
            );
        }
        let arr = self.b.array("[Ljava.lang.Object;", items)?;
        self.obj(
            "scala.collection.immutable.ArraySeq$ofRef",
            &[("unsafeArray", arr)],
        )
    }

    /// An immutable `Map` of up to four entries (`EmptyMap`, `Map1`–`Map4`), in the order given;
    /// larger maps as a `HashMap` through `DefaultSerializationProxy`.
    fn map(&mut self, entries: Vec<(Value, Value)>) -> R {
        let n = entries.len();
        let scala_212 = self.scala_212();
        match n {
            0 => self.b.module("scala.collection.immutable.Map$EmptyMap$"),
            5.. if scala_212 => Err(BuildError::Unsupported(format!(
                "a Scala 2.12 immutable map of {n} entries, whose order is its keys' hashes'"
            ))),
            1..=4 => {
                let class = format!("scala.collection.immutable.Map$Map{n}");
                let names: Vec<(String, String)> = (1..=n)
                    .map(|i| {
                        if n == 1 || scala_212 {
                            (format!("key{i}"), format!("value{i}"))
                        } else {
                            (
                                format!("scala$collection$immutable$Map$Map{n}$$key{i}"),
                                format!("scala$collection$immutable$Map$Map{n}$$value{i}"),
                            )
                        }
                    })
                    .collect();
                let mut fields: Vec<(&str, Value)> = Vec::with_capacity(2 * n);
                for ((k, v), (kn, vn)) in entries.iter().zip(&names) {
                    fields.push((kn.as_str(), *k));
                    fields.push((vn.as_str(), *v));
                }
                self.obj(&class, &fields)
            }
            _ => {
                let hm = self.b.module("scala.collection.immutable.HashMap$")?;
                let factory =
                    self.obj("scala.collection.MapFactory$ToFactory", &[("factory", hm)])?;
                let mut annotation = vec![Item::Data((n as i32).to_be_bytes().to_vec())];
                for (k, v) in entries {
                    let t = self.obj("scala.Tuple2", &[("_1", k), ("_2", v)])?;
                    annotation.push(Item::Value(t));
                }
                self.b.object_with(
                    "scala.collection.generic.DefaultSerializationProxy",
                    &[("factory", factory)],
                    annotation,
                )
            }
        }
    }

    /// An immutable `HashMap` (through `DefaultSerializationProxy`), its entries in the order of
    /// Scala 2.13's CHAMP trie: by the improved hash of each key, five bits a level, a node's
    /// own entries before its sub-nodes'.
    fn hash_map(&mut self, entries: Vec<(i32, Value, Value)>) -> R {
        let n = entries.len();
        if self.scala_212() {
            // Scala 2.12: `HashMap$SerializationProxy` writes the count, then each key and value
            // in the order of the hash trie (five bits of the improved hash a level, low bits
            // first).
            let mut keyed: Vec<(u64, Value, Value)> = entries
                .into_iter()
                .map(|(hash, k, v)| (trie_212_order(scala_improve(hash)), k, v))
                .collect();
            keyed.sort_by_key(|(order, _, _)| *order);
            let mut annotation = vec![Item::Data((n as i32).to_be_bytes().to_vec())];
            for (_, k, v) in keyed {
                annotation.push(Item::Value(k));
                annotation.push(Item::Value(v));
            }
            return self.b.object_with(
                "scala.collection.immutable.HashMap$SerializationProxy",
                &[],
                annotation,
            );
        }
        let hm = self.b.module("scala.collection.immutable.HashMap$")?;
        let factory = self.obj("scala.collection.MapFactory$ToFactory", &[("factory", hm)])?;
        let keyed = entries
            .into_iter()
            .map(|(hash, k, v)| (scala_improve(hash), (k, v)))
            .collect();
        let mut annotation = vec![Item::Data((n as i32).to_be_bytes().to_vec())];
        for (k, v) in champ_order(keyed, 0) {
            let t = self.obj("scala.Tuple2", &[("_1", k), ("_2", v)])?;
            annotation.push(Item::Value(t));
        }
        self.b.object_with(
            "scala.collection.generic.DefaultSerializationProxy",
            &[("factory", factory)],
            annotation,
        )
    }

    fn string_hash_map(&mut self, m: &BTreeMap<String, String>) -> R {
        if self.scala_212() && m.len() <= 4 {
            // Scala 2.12's `Map(...)` keeps up to four entries in the order they were added,
            // which the typed map does not hold: the original stream's order, when it has them.
            let order = self
                .original_key_order(m)
                .unwrap_or_else(|| m.keys().cloned().collect());
            let entries = order
                .iter()
                .filter_map(|k| Some((k.clone(), m.get(k)?.clone())))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|(k, v)| (self.s(&k), self.s(&v)))
                .collect();
            return self.map(entries);
        }
        let entries = m
            .iter()
            .map(|(k, v)| (java_string_hash(k), self.s(k), self.s(v)))
            .collect();
        self.hash_map(entries)
    }

    fn string_map(&mut self, m: &BTreeMap<String, String>) -> R {
        let entries = m
            .iter()
            .map(|(k, v)| (self.s(k), self.s(v)))
            .collect::<Vec<_>>();
        self.map(entries)
    }

    /// Whether this release writes Scala 2.12's forms (Spark 3), not Scala 2.13's (Spark 4).
    fn scala_212(&self) -> bool {
        self.release.scala_212()
    }

    /// Whether the release's class `class` has the serializable field `field`: every field that
    /// came or went between releases is decided by the release's own table.
    fn has(&self, class: &str, field: &str) -> bool {
        self.release.has_field(class, field)
    }

    /// The keys of the original stream's small immutable map (`Map1`–`Map4`) holding exactly
    /// `m`, in its order.
    fn original_key_order(&self, m: &BTreeMap<String, String>) -> Option<Vec<String>> {
        let g = self.original?;
        let class = format!("scala.collection.immutable.Map$Map{}", m.len());
        g.entries().iter().enumerate().find_map(|(i, e)| {
            let serial::Entry::Object(_) = e else {
                return None;
            };
            let n = Node::new(g, Value::Ref(serial::Handle(i as u32)));
            if n.class_name()? != class {
                return None;
            }
            let entries = super::java::entries(n, "map").ok()?;
            let mut keys = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let (k, v) = (k.as_str()?, v.as_str()?);
                if m.get(k).map(String::as_str) != Some(v) {
                    return None;
                }
                keys.push(k.to_string());
            }
            (keys.len() == m.len()).then_some(keys)
        })
    }

    /// A Scala 2.12 `Vector` as its builder leaves it: the empty vector (one object, no
    /// levels), or up to 32 elements in one leaf of 32 slots. A larger vector's levels depend
    /// on how it was built and are refused.
    fn vector_212(&mut self, items: Vec<Value>) -> R {
        let n = items.len();
        if n > 32 {
            return Err(BuildError::Unsupported(format!(
                "a Scala 2.12 Vector of {n} elements (more than one leaf of 32)"
            )));
        }
        if n == 0 {
            if let Some(v) = self.empty_vector {
                return Ok(v);
            }
        }
        let (depth, leaf) = if n == 0 {
            (0, Value::Null)
        } else {
            let mut slots = items;
            slots.resize(32, Value::Null);
            (1, self.b.array("[Ljava.lang.Object;", slots)?)
        };
        let v = self.obj(
            "scala.collection.immutable.Vector",
            &[
                ("depth", Value::Int(depth)),
                ("dirty", Value::Bool(false)),
                ("endIndex", Value::Int(n as i32)),
                ("focus", Value::Int(0)),
                ("startIndex", Value::Int(0)),
                ("display0", leaf),
                ("display1", Value::Null),
                ("display2", Value::Null),
                ("display3", Value::Null),
                ("display4", Value::Null),
                ("display5", Value::Null),
            ],
        )?;
        if n == 0 {
            self.empty_vector = Some(v);
        }
        Ok(v)
    }

    /// A Scala 2.12 `ArrayBuffer` grown from empty by one append of `items`: an array of
    /// 16 slots, doubled until they fit.
    fn array_buffer(&mut self, items: Vec<Value>) -> R {
        let n = items.len();
        let mut slots: usize = 16;
        while slots < n {
            slots = slots.saturating_mul(2);
        }
        let size = i32::try_from(n).map_err(|_| BuildError::Value("a length".into()))?;
        let mut array = items;
        array.resize(slots, Value::Null);
        let arr = self.b.array("[Ljava.lang.Object;", array)?;
        self.obj(
            "scala.collection.mutable.ArrayBuffer",
            &[
                ("initialSize", Value::Int(16)),
                ("size0", Value::Int(size)),
                ("array", arr),
            ],
        )
    }

    /// Scala 2.12's `mutable.HashMap[String, String]`: its `writeObject` writes the load
    /// factor (750 per mille), the size, the seed and whether a size map is kept, then each
    /// key and value from the last bucket of the table to the first. The table is rebuilt by
    /// adding the entries in key order (16 buckets, doubled at three quarters full), which
    /// gives the JVM's order wherever no two keys share a bucket.
    fn mutable_string_map_212(&mut self, m: &BTreeMap<String, String>) -> R {
        let keyed = m
            .iter()
            .map(|(k, v)| (java_string_hash(k), (k, v)))
            .collect();
        let mut entries = Vec::with_capacity(m.len());
        for (k, v) in hash_table_212_order(keyed) {
            entries.push((self.s(k), self.s(v)));
        }
        self.mutable_hash_map_212(entries)
    }

    /// A Scala 2.12 `mutable.HashMap` of `entries`, in its table's order.
    fn mutable_hash_map_212(&mut self, entries: Vec<(Value, Value)>) -> R {
        let size = i32::try_from(entries.len()).map_err(|_| BuildError::Value("a size".into()))?;
        let mut header = Vec::with_capacity(13);
        header.extend_from_slice(&750i32.to_be_bytes());
        header.extend_from_slice(&size.to_be_bytes());
        header.extend_from_slice(&(HASH_TABLE_212_SEED as i32).to_be_bytes());
        header.push(0);
        let mut annotation = vec![Item::Data(header)];
        for (k, v) in entries {
            annotation.push(Item::Value(k));
            annotation.push(Item::Value(v));
        }
        self.b
            .object_with("scala.collection.mutable.HashMap", &[], annotation)
    }

    /// A Scala 2.12 enumeration object of Spark's as a fresh JVM holds it: its values (`Val`s
    /// with no name, in declaration order), `vmap` from ordinal to value, an empty `nmap` (no
    /// value's name asked for yet), and the object's fields naming its values.
    fn enumeration_object_212(&mut self, enumeration: &'static str) -> R {
        let declared: &[&str] = match enumeration {
            // Spark 3.1 added DECOMMISSIONED (last): a release's table says whether it has it.
            EXECUTOR_STATE => &[
                "LAUNCHING",
                "RUNNING",
                "KILLED",
                "FAILED",
                "LOST",
                "EXITED",
                "DECOMMISSIONED",
            ],
            TASK_STATE => &[
                "LAUNCHING",
                "RUNNING",
                "FINISHED",
                "FAILED",
                "KILLED",
                "LOST",
            ],
            DRIVER_STATE => &[
                "SUBMITTED",
                "RUNNING",
                "FINISHED",
                "RELAUNCHING",
                "UNKNOWN",
                "KILLED",
                "FAILED",
                "ERROR",
            ],
            _ => {
                return Err(BuildError::Unsupported(format!(
                    "Spark 3.0.3 (Scala 2.12) writes a value of {enumeration} with the whole \
                     enumeration object: sparkwire writes it only from an original stream that \
                     holds it"
                )))
            }
        };
        let names: Vec<&str> = declared
            .iter()
            .copied()
            .filter(|name| self.has(enumeration, name))
            .collect();
        // Spark 3.1's ExecutorState keeps `finishedStates`, a `Seq` of four of its values.
        let finished_states = self.has(enumeration, "finishedStates");
        let n = names.len() as i32;
        let mut fields: Vec<(&str, Value)> = vec![
            ("nextId", Value::Int(n)),
            ("scala$Enumeration$$bottomId", Value::Int(0)),
            ("scala$Enumeration$$topId", Value::Int(n)),
            ("ValueOrdering$module", Value::Null),
            ("ValueSet$module", Value::Null),
            ("nextName", Value::Null),
            ("nmap", Value::Null),
            ("scala$Enumeration$$vmap", Value::Null),
        ];
        fields.extend(names.iter().map(|name| (*name, Value::Null)));
        if enumeration == TASK_STATE {
            fields.push(("FINISHED_STATES", Value::Null));
        }
        if finished_states {
            fields.push(("finishedStates", Value::Null));
        }
        let outer = self.obj(enumeration, &fields)?;
        let mut values = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let v = self.obj(
                "scala.Enumeration$Val",
                &[
                    ("$outer", outer),
                    ("scala$Enumeration$$outerEnum", outer),
                    ("i", Value::Int(i as i32)),
                    ("name", Value::Null),
                ],
            )?;
            self.b.set_field(outer, name, v)?;
            values.push(v);
        }
        let mut vmap = Vec::with_capacity(values.len());
        for (i, v) in hash_table_212_order(
            values
                .iter()
                .copied()
                .enumerate()
                .map(|(i, v)| (i as i32, (i as i32, v)))
                .collect(),
        ) {
            vmap.push((self.b.boxed_int(i)?, v));
        }
        let vmap = self.mutable_hash_map_212(vmap)?;
        self.b.set_field(outer, "scala$Enumeration$$vmap", vmap)?;
        let nmap = self.mutable_hash_map_212(Vec::new())?;
        self.b.set_field(outer, "nmap", nmap)?;
        if enumeration == TASK_STATE {
            // `Set(FINISHED, FAILED, KILLED, LOST)`.
            let set = self.obj(
                "scala.collection.immutable.Set$Set4",
                &[
                    ("elem1", values[2]),
                    ("elem2", values[3]),
                    ("elem3", values[4]),
                    ("elem4", values[5]),
                ],
            )?;
            self.b.set_field(outer, "FINISHED_STATES", set)?;
        }
        if finished_states {
            // `Seq(KILLED, FAILED, LOST, EXITED)`.
            let seq = self.list(values[2..6].to_vec())?;
            self.b.set_field(outer, "finishedStates", seq)?;
        }
        Ok(outer)
    }

    /// A Scala 2.12 `Enumeration` value: Scala 2.12 writes the whole enumeration object with
    /// it (its maps of every value and name, which refer back to the values). The original
    /// stream's copy is taken when it has one (it holds the process's state: names asked for),
    /// else the object as a fresh JVM holds it; the value of `ordinal` is taken from it.
    fn enumeration_212(&mut self, enumeration: &'static str, ordinal: usize) -> R {
        let outer = match self.enum_objects.get(enumeration) {
            Some(v) => *v,
            None => {
                let original = self.original.and_then(|g| {
                    g.entries().iter().enumerate().find_map(|(i, e)| {
                        let serial::Entry::Object(_) = e else {
                            return None;
                        };
                        let n = Node::new(g, Value::Ref(serial::Handle(i as u32)));
                        (n.class_name()? == enumeration).then_some(n)
                    })
                });
                let v = match original {
                    Some(n) => self.b.graft(n.graph(), n.value())?,
                    None => self.enumeration_object_212(enumeration)?,
                };
                self.enum_objects.insert(enumeration, v);
                v
            }
        };
        let copy = Node::new(self.b.graph(), outer);
        let values = copy
            .field("scala$Enumeration$$vmap")
            .and_then(|m| super::java::entries(m, "vmap").ok())
            .unwrap_or_default();
        values
            .into_iter()
            .find(|(k, _)| {
                super::java::int(*k, "ordinal")
                    .ok()
                    .and_then(|i| usize::try_from(i).ok())
                    == Some(ordinal)
            })
            .map(|(_, v)| v.value())
            .ok_or_else(|| {
                BuildError::Value(format!(
                    "{enumeration} of the original stream has no value {ordinal}"
                ))
            })
    }

    /// Spark 3.0.3's `ApplicationDescription` (its executors' size and resources instead of a
    /// resource profile), from the typed value's version-1 form.
    fn app_description_212(&mut self, d: &ApplicationDescription) -> R {
        let v1 = legacy::common::ApplicationDescription::from(d);
        let app_ui = self.s(&v1.app_ui_url);
        let command = self.command(&v1.command, false)?;
        let cores = self.opt_int(v1.cores_per_executor)?;
        let codec = self.opt_string(v1.event_log_codec.as_deref())?;
        let dir = self.opt_string(v1.event_log_dir.as_deref())?;
        let limit = self.opt_int(v1.initial_executor_limit)?;
        let max = self.opt_int(v1.max_cores)?;
        let name = self.s(&v1.name);
        let mut reqs = Vec::with_capacity(v1.resource_reqs_per_executor.len());
        for r in &v1.resource_reqs_per_executor {
            let name = self.s(&r.resource_name);
            reqs.push(self.obj(
                "org.apache.spark.resource.ResourceRequirement",
                &[
                    ("amount", Value::Int(r.amount)),
                    ("numParts", Value::Int(r.num_parts)),
                    ("resourceName", name),
                ],
            )?);
        }
        let reqs = self.array_seq(reqs)?;
        let user = self.s(&v1.user);
        self.obj(
            "org.apache.spark.deploy.ApplicationDescription",
            &[
                ("memoryPerExecutorMB", Value::Int(v1.memory_per_executor_mb)),
                ("appUiUrl", app_ui),
                ("command", command),
                ("coresPerExecutor", cores),
                ("eventLogCodec", codec),
                ("eventLogDir", dir),
                ("initialExecutorLimit", limit),
                ("maxCores", max),
                ("name", name),
                ("resourceReqsPerExecutor", reqs),
                ("user", user),
            ],
        )
    }

    /// A `scala.collection.mutable.HashMap[String, String]`, in the order Scala 2.13's hash
    /// table iterates it (Scala 2.12: see [`Scala::mutable_string_map_212`]).
    fn mutable_string_map(&mut self, m: &BTreeMap<String, String>) -> R {
        if self.scala_212() {
            return self.mutable_string_map_212(m);
        }
        let mut len: usize = 16;
        for k in 0..m.len() {
            if k + 1 >= (len as f64 * 0.75) as usize {
                len *= 2;
            }
        }
        let mut keyed: Vec<(usize, i32, &String, &String)> = m
            .iter()
            .map(|(k, v)| {
                let h = java_string_hash(k);
                let improved = h ^ ((h as u32) >> 16) as i32;
                ((improved as u32 as usize) & (len - 1), improved, k, v)
            })
            .collect();
        keyed.sort_by_key(|(index, hash, _, _)| (*index, *hash));
        let lf = Value::Double(0.75f64.to_bits());
        let factory = self.obj(
            "scala.collection.mutable.HashMap$DeserializationFactory",
            &[("loadFactor", lf), ("tableLength", Value::Int(len as i32))],
        )?;
        let mut annotation = vec![Item::Data((m.len() as i32).to_be_bytes().to_vec())];
        for (_, _, k, v) in keyed {
            let (k, v) = (self.s(k), self.s(v));
            let t = self.obj("scala.Tuple2", &[("_1", k), ("_2", v)])?;
            annotation.push(Item::Value(t));
        }
        self.b.object_with(
            "scala.collection.generic.DefaultSerializationProxy",
            &[("factory", factory)],
            annotation,
        )
    }

    /// A value of a Scala `Enumeration` (`object` class `enumeration`): one object per value.
    fn enumeration(&mut self, enumeration: &'static str, ordinal: usize) -> R {
        if let Some(v) = self.enum_values.get(&(enumeration, ordinal)) {
            return Ok(*v);
        }
        if self.scala_212() {
            let v = self.enumeration_212(enumeration, ordinal)?;
            self.enum_values.insert((enumeration, ordinal), v);
            return Ok(v);
        }
        let outer = self.b.module(enumeration)?;
        let i = i32::try_from(ordinal).map_err(|_| BuildError::Value("an ordinal".into()))?;
        let v = self.obj(
            "scala.Enumeration$Val",
            &[
                ("$outer", outer),
                ("scala$Enumeration$$outerEnum", outer),
                ("i", Value::Int(i)),
                ("name", Value::Null),
            ],
        )?;
        self.enum_values.insert((enumeration, ordinal), v);
        Ok(v)
    }

    fn executor_state(&mut self, s: ExecutorState) -> R {
        let i = ExecutorState::ALL.iter().position(|x| *x == s).unwrap_or(0);
        self.enumeration(EXECUTOR_STATE, i)
    }

    fn driver_state(&mut self, s: DriverState) -> R {
        let i = DriverState::ALL.iter().position(|x| *x == s).unwrap_or(0);
        self.enumeration(DRIVER_STATE, i)
    }

    fn task_state(&mut self, s: TaskState) -> R {
        let i = TaskState::ALL.iter().position(|x| *x == s).unwrap_or(0);
        self.enumeration(TASK_STATE, i)
    }

    fn rpc_address(&mut self, host: Value, port: i32) -> R {
        self.obj(
            "org.apache.spark.rpc.RpcAddress",
            &[("host", host), ("port", Value::Int(port))],
        )
    }

    fn addr(&mut self, a: &Addr) -> R {
        let host = self.s(&a.host);
        self.rpc_address(host, a.port)
    }

    /// A `NettyRpcEndpointRef` with Spark's default ask timeout; `host`, if given, is the host
    /// string object its address shares with another field.
    fn endpoint_ref_sharing(&mut self, r: &EndpointRef, host: Option<Value>) -> R {
        let timeout = match self.original_timeout(r) {
            Some(node) => self.b.graft(node.graph(), node.value())?,
            None => {
                let seconds = self
                    .b
                    .enum_constant("java.util.concurrent.TimeUnit", "SECONDS")?;
                let duration = self.obj(
                    "scala.concurrent.duration.FiniteDuration",
                    &[("length", Value::Long(120)), ("unit", seconds)],
                )?;
                let prop = self.b.interned("spark.rpc.askTimeout");
                self.obj(
                    "org.apache.spark.rpc.RpcTimeout",
                    &[("duration", duration), ("timeoutProp", prop)],
                )?
            }
        };
        let name = self.b.interned(&r.name);
        let (rpc_address, text) = match &r.address {
            Some(a) => {
                let h = match host {
                    Some(h) => h,
                    None => self.s(&a.host),
                };
                (
                    self.rpc_address(h, a.port)?,
                    format!("spark://{}@{}:{}", r.name, a.host, a.port),
                )
            }
            None => (Value::Null, format!("spark-client://{}", r.name)),
        };
        let text = self.s(&text);
        let address = self.obj(
            "org.apache.spark.rpc.RpcEndpointAddress",
            &[
                ("name", name),
                ("rpcAddress", rpc_address),
                ("toString", text),
            ],
        )?;
        if self.has("org.apache.spark.rpc.RpcEndpointRef", "maxRetries") {
            // Spark 3.0's `RpcEndpointRef` keeps its retry settings (`spark.rpc.numRetries`, 3;
            // `spark.rpc.retry.wait`, 3 s): the original reference's when there is one.
            let original = self.original_ref(r);
            let retries = original
                .and_then(|n| n.field("maxRetries"))
                .and_then(|n| n.as_int())
                .unwrap_or(3);
            let wait = original
                .and_then(|n| n.field("retryWaitMs"))
                .and_then(|n| n.as_long())
                .unwrap_or(3000);
            return self.obj(
                "org.apache.spark.rpc.netty.NettyRpcEndpointRef",
                &[
                    ("maxRetries", Value::Int(retries)),
                    ("retryWaitMs", Value::Long(wait)),
                    ("defaultAskTimeout", timeout),
                    ("endpointAddress", address),
                ],
            );
        }
        self.obj(
            "org.apache.spark.rpc.netty.NettyRpcEndpointRef",
            &[("defaultAskTimeout", timeout), ("endpointAddress", address)],
        )
    }

    fn endpoint_ref(&mut self, r: &EndpointRef) -> R {
        self.endpoint_ref_sharing(r, None)
    }

    fn resources(&mut self, r: &Resources) -> R {
        let mut entries = Vec::with_capacity(r.len());
        for (k, info) in r {
            let key = self.s(k);
            let name = self.s(&info.name);
            let addresses: Vec<Value> = info.addresses.iter().map(|a| self.s(a)).collect();
            let arr = self.b.array("[Ljava.lang.String;", addresses)?;
            let v = self.obj(
                "org.apache.spark.resource.ResourceInformation",
                &[("name", name), ("addresses", arr)],
            )?;
            entries.push((key, v));
        }
        self.map(entries)
    }

    fn resource_profile(&mut self, p: &ResourceProfile) -> R {
        // Spark fills in some of a profile's fields lazily; the original has them as sent.
        if let Some(o) = self.original_object(
            "org.apache.spark.resource.ResourceProfile",
            resource_profile_of,
            p,
        ) {
            return self.b.graft(o.graph(), o.value());
        }
        let mut exec = Vec::new();
        for (k, r) in &p.executor_resources {
            let key = self.b.interned(k);
            let name = self.b.interned(&r.resource_name);
            let script = self.b.interned(&r.discovery_script);
            let vendor = self.b.interned(&r.vendor);
            let v = self.obj(
                "org.apache.spark.resource.ExecutorResourceRequest",
                &[
                    ("amount", Value::Long(r.amount)),
                    ("discoveryScript", script),
                    ("resourceName", name),
                    ("vendor", vendor),
                ],
            )?;
            exec.push((key, v));
        }
        let mut task = Vec::new();
        for (k, r) in &p.task_resources {
            let key = self.b.interned(k);
            let name = self.b.interned(&r.resource_name);
            let v = self.obj(
                "org.apache.spark.resource.TaskResourceRequest",
                &[
                    ("amount", Value::Double(r.amount.to_bits())),
                    ("resourceName", name),
                ],
            )?;
            task.push((key, v));
        }
        let exec = self.map(exec)?;
        let task = self.map(task)?;
        if !self.has(
            "org.apache.spark.resource.ResourceProfile",
            "_coresLimitKnown",
        ) {
            return self.obj(
                "org.apache.spark.resource.ResourceProfile",
                &[
                    ("_id", Value::Int(p.id)),
                    ("executorResources", exec),
                    ("taskResources", task),
                ],
            );
        }
        let none = self.none()?;
        // The values Spark computes lazily are left uncomputed, as in a new profile.
        self.obj(
            "org.apache.spark.resource.ResourceProfile",
            &[
                ("_coresLimitKnown", Value::Bool(false)),
                ("_id", Value::Int(p.id)),
                ("_executorResourceSlotsPerAddr", none),
                ("_limitingResource", none),
                ("_maxTasksPerExecutor", none),
                ("executorResources", exec),
                ("taskResources", task),
            ],
        )
    }

    /// A `Command`. Its environment is a mutable hash map, except in a Spark 3.0.3 driver's
    /// (`immutable_env`: an immutable one, made from `sys.env`).
    fn command(&mut self, c: &Command, immutable_env: bool) -> R {
        let arguments = self.string_list(&c.arguments)?;
        let class_path = self.string_list(&c.class_path_entries)?;
        let environment = if immutable_env {
            self.string_hash_map(&c.environment)?
        } else {
            self.mutable_string_map(&c.environment)?
        };
        let opts: Vec<Value> = c.java_opts.iter().map(|s| self.s(s)).collect();
        let java_opts = self.array_seq(opts)?;
        let library_path = self.string_list(&c.library_path_entries)?;
        let main = self.s(&c.main_class);
        self.obj(
            "org.apache.spark.deploy.Command",
            &[
                ("arguments", arguments),
                ("classPathEntries", class_path),
                ("environment", environment),
                ("javaOpts", java_opts),
                ("libraryPathEntries", library_path),
                ("mainClass", main),
            ],
        )
    }

    /// The ask timeout of the original stream's reference to the same endpoint (the typed
    /// reference does not hold it; Spark's default is 120 s of `spark.rpc.askTimeout`).
    fn original_timeout(&self, r: &EndpointRef) -> Option<Node<'o>> {
        self.original_ref(r)?.field("defaultAskTimeout")
    }

    /// The original stream's reference to the same endpoint.
    fn original_ref(&self, r: &EndpointRef) -> Option<Node<'o>> {
        self.original_object(
            "org.apache.spark.rpc.netty.NettyRpcEndpointRef",
            endpoint_ref_of,
            r,
        )
    }

    /// An object of class `class` in the original stream that maps to `want`: what the typed
    /// value came from, with what it does not hold.
    fn original_object<T: PartialEq>(
        &self,
        class: &str,
        map: impl Fn(Node<'_>) -> Result<T, super::java::JavaError>,
        want: &T,
    ) -> Option<Node<'o>> {
        let g = self.original?;
        g.entries().iter().enumerate().find_map(|(i, e)| {
            let serial::Entry::Object(_) = e else {
                return None;
            };
            let n = Node::new(g, Value::Ref(serial::Handle(i as u32)));
            (n.class_name()? == class && map(n).ok().as_ref() == Some(want)).then_some(n)
        })
    }

    fn app_description(&mut self, d: &ApplicationDescription) -> R {
        if let Some(o) = self.original_object(
            "org.apache.spark.deploy.ApplicationDescription",
            app_description_of,
            d,
        ) {
            return self.b.graft(o.graph(), o.value());
        }
        if self.has(APP_DESCRIPTION, "memoryPerExecutorMB") {
            return self.app_description_212(d);
        }
        let app_ui = self.s(&d.app_ui_url);
        let command = self.command(&d.command, false)?;
        let profile = self.resource_profile(&d.default_profile)?;
        let codec = self.opt_string(d.event_log_codec.as_deref())?;
        let dir = self.opt_string(d.event_log_dir.as_deref())?;
        let limit = self.opt_int(d.initial_executor_limit)?;
        let max = self.opt_int(d.max_cores)?;
        let name = self.s(&d.name);
        let user = self.s(&d.user);
        self.obj(
            "org.apache.spark.deploy.ApplicationDescription",
            &[
                ("appUiUrl", app_ui),
                ("command", command),
                ("defaultProfile", profile),
                ("eventLogCodec", codec),
                ("eventLogDir", dir),
                ("initialExecutorLimit", limit),
                ("maxCores", max),
                ("name", name),
                ("user", user),
            ],
        )
    }

    fn driver_description(&mut self, d: &DriverDescription) -> R {
        // A submitted driver's environment is Spark's `sys.env`, a map with a default function:
        // only the original stream has it as it was.
        if let Some(f) = self.original_object(
            "org.apache.spark.deploy.DriverDescription",
            driver_description_of,
            d,
        ) {
            return self.b.graft(f.graph(), f.value());
        }
        let command = self.command(&d.command, self.scala_212())?;
        let jar = self.s(&d.jar_url);
        let mut reqs = Vec::with_capacity(d.resource_reqs.len());
        for r in &d.resource_reqs {
            let name = self.s(&r.resource_name);
            reqs.push(self.obj(
                "org.apache.spark.resource.ResourceRequirement",
                &[
                    ("amount", Value::Int(r.amount)),
                    ("numParts", Value::Int(r.num_parts)),
                    ("resourceName", name),
                ],
            )?);
        }
        // Spark 3.0.3 collects them into a mutable ArraySeq.
        let reqs = if self.scala_212() {
            self.array_seq(reqs)?
        } else {
            self.list(reqs)?
        };
        self.obj(
            "org.apache.spark.deploy.DriverDescription",
            &[
                ("cores", Value::Int(d.cores)),
                ("mem", Value::Int(d.mem)),
                ("supervise", Value::Bool(d.supervise)),
                ("command", command),
                ("jarUrl", jar),
                ("resourceReqs", reqs),
            ],
        )
    }

    fn executor_description(&mut self, e: &ExecutorDescription) -> R {
        let app = self.s(&e.app_id);
        let state = self.executor_state(e.state)?;
        if !self.has(EXECUTOR_DESCRIPTION, "rpId") {
            // Spark 3.0.3's has no resource profile id and no memory.
            let v1 = legacy::common::ExecutorDescription::from(e);
            return self.obj(
                "org.apache.spark.deploy.ExecutorDescription",
                &[
                    ("appId", app),
                    ("execId", Value::Int(v1.exec_id)),
                    ("cores", Value::Int(v1.cores)),
                    ("state", state),
                ],
            );
        }
        self.obj(
            "org.apache.spark.deploy.ExecutorDescription",
            &[
                ("appId", app),
                ("execId", Value::Int(e.exec_id)),
                ("rpId", Value::Int(e.rp_id)),
                ("cores", Value::Int(e.cores)),
                ("memoryMb", Value::Int(e.memory_mb)),
                ("state", state),
            ],
        )
    }

    /// A Java exception of the named class with its message and no stack trace.
    fn exception(&mut self, e: &ErrorDescription) -> R {
        // The original exception, with its stack trace and cause, if the stream had it.
        let original = self.original_object(
            &e.class_name,
            |n| {
                super::java::field(n, "stackTrace")?;
                error_description_of(n)
            },
            e,
        );
        if let Some(n) = original {
            return self.b.graft(n.graph(), n.value());
        }
        let message = self.s(&e.message);
        let trace = self.b.array("[Ljava.lang.StackTraceElement;", Vec::new())?;
        // `Throwable`'s sentinel for "no suppressed exceptions": `Collections.emptyList()`.
        let suppressed = self.b.object("java.util.Collections$EmptyList", &[])?;
        // `cause` is the exception itself when it has none: built, then pointed at itself.
        let v = self.b.object(
            &e.class_name,
            &[
                ("cause", Value::Null),
                ("detailMessage", message),
                ("stackTrace", trace),
                ("suppressedExceptions", suppressed),
            ],
        )?;
        self.b.set_field(v, "cause", v)?;
        Ok(v)
    }

    fn opt_exception(&mut self, e: Option<&ErrorDescription>) -> R {
        match e {
            None => self.none(),
            Some(e) => {
                let v = self.exception(e)?;
                self.some(v)
            }
        }
    }

    fn payload_buffer(&mut self, p: &Payload) -> R {
        let mut data = (p.len() as i32).to_be_bytes().to_vec();
        data.extend_from_slice(p.as_slice());
        self.b.object_with(
            "org.apache.spark.util.SerializableBuffer",
            &[],
            vec![Item::Data(data)],
        )
    }

    fn profile_totals(&mut self, totals: &[ProfileExecutors]) -> R {
        let mut entries = Vec::with_capacity(totals.len());
        for t in totals {
            let p = self.resource_profile(&t.profile)?;
            let n = self.b.boxed_int(t.total)?;
            entries.push((p, n));
        }
        self.map(entries)
    }

    fn deploy(&mut self, m: &DeployMessage) -> R {
        use DeployMessage as D;
        match m {
            D::RegisterWorker(r) => {
                let host = self.s(&r.host);
                let id = self.s(&r.id);
                let master = self.addr(&r.master_address)?;
                let resources = self.resources(&r.resources)?;
                let shared = r
                    .worker
                    .address
                    .as_ref()
                    .filter(|a| a.host == r.host)
                    .map(|_| host);
                let worker = self.endpoint_ref_sharing(&r.worker, shared)?;
                let url = self.s(&r.worker_web_ui_url);
                self.msg(
                    "RegisterWorker",
                    &[
                        ("cores", Value::Int(r.cores)),
                        ("memory", Value::Int(r.memory)),
                        ("port", Value::Int(r.port)),
                        ("host", host),
                        ("id", id),
                        ("masterAddress", master),
                        ("resources", resources),
                        ("worker", worker),
                        ("workerWebUiUrl", url),
                    ],
                )
            }
            D::RegisteredWorker(r) => {
                let master = self.endpoint_ref(&r.master)?;
                let address = self.addr(&r.master_address)?;
                let url = self.s(&r.master_web_ui_url);
                self.msg(
                    "RegisteredWorker",
                    &[
                        ("duplicate", Value::Bool(r.duplicate)),
                        ("master", master),
                        ("masterAddress", address),
                        ("masterWebUiUrl", url),
                    ],
                )
            }
            D::RegisterWorkerFailed(r) => {
                let m = self.s(&r.message);
                self.msg("RegisterWorkerFailed", &[("message", m)])
            }
            D::MasterInStandby(_) => self.b.module(&format!("{DEPLOY}MasterInStandby$")),
            D::Heartbeat(h) => {
                let worker = self.endpoint_ref(&h.worker)?;
                let id = self.s(&h.worker_id);
                self.msg("Heartbeat", &[("worker", worker), ("workerId", id)])
            }
            D::WorkerLatestState(w) => {
                let mut execs = Vec::with_capacity(w.executors.len());
                for e in &w.executors {
                    execs.push(self.executor_description(e)?);
                }
                // Spark 3.0.3 collects the driver ids into a Vector.
                let drivers = if self.scala_212() {
                    let ids = w.driver_ids.iter().map(|s| self.s(s)).collect();
                    self.vector_212(ids)?
                } else {
                    self.string_list(&w.driver_ids)?
                };
                let execs = self.list(execs)?;
                let id = self.s(&w.id);
                self.msg(
                    "WorkerLatestState",
                    &[("driverIds", drivers), ("executors", execs), ("id", id)],
                )
            }
            D::ExecutorStateChanged(e) => {
                let app = self.s(&e.app_id);
                let exit = self.opt_int(e.exit_status)?;
                let message = self.opt_string(e.message.as_deref())?;
                let state = self.executor_state(e.state)?;
                self.msg(
                    "ExecutorStateChanged",
                    &[
                        ("execId", Value::Int(e.exec_id)),
                        ("appId", app),
                        ("exitStatus", exit),
                        ("message", message),
                        ("state", state),
                    ],
                )
            }
            D::DriverStateChanged(d) => {
                let id = self.s(&d.driver_id);
                let exception = self.opt_exception(d.exception.as_ref())?;
                let state = self.driver_state(d.state)?;
                self.msg(
                    "DriverStateChanged",
                    &[("driverId", id), ("exception", exception), ("state", state)],
                )
            }
            D::WorkerDecommissioning(w) => {
                let id = self.s(&w.id);
                let r = self.endpoint_ref(&w.worker_ref)?;
                self.msg("WorkerDecommissioning", &[("id", id), ("workerRef", r)])
            }
            D::WorkerSchedulerStateResponse(w) => {
                let mut drivers = Vec::new();
                for d in &w.driver_responses {
                    let id = self.s(&d.driver_id);
                    let res = self.resources(&d.resources)?;
                    drivers.push(self.msg(
                        "WorkerDriverStateResponse",
                        &[("driverId", id), ("resources", res)],
                    )?);
                }
                let mut execs = Vec::new();
                for e in &w.exec_responses {
                    let desc = self.executor_description(&e.desc)?;
                    let res = self.resources(&e.resources)?;
                    execs.push(self.msg(
                        "WorkerExecutorStateResponse",
                        &[("desc", desc), ("resources", res)],
                    )?);
                }
                // Spark 3.0.3 collects the drivers into a Vector.
                let drivers = if self.scala_212() {
                    self.vector_212(drivers)?
                } else {
                    self.list(drivers)?
                };
                let execs = self.list(execs)?;
                let id = self.s(&w.id);
                self.msg(
                    "WorkerSchedulerStateResponse",
                    &[
                        ("driverResponses", drivers),
                        ("execResponses", execs),
                        ("id", id),
                    ],
                )
            }
            D::ReconnectWorker(r) => {
                let url = self.s(&r.master_url);
                self.msg("ReconnectWorker", &[("masterUrl", url)])
            }
            D::LaunchExecutor(l) => {
                let desc = self.app_description(&l.app_desc)?;
                let app = self.s(&l.app_id);
                let url = self.s(&l.master_url);
                let res = self.resources(&l.resources)?;
                if !self.has(&format!("{DEPLOY}LaunchExecutor"), "rpId") {
                    // Spark 3.0.3's has no resource profile id.
                    return self.msg(
                        "LaunchExecutor",
                        &[
                            ("cores", Value::Int(l.cores)),
                            ("execId", Value::Int(l.exec_id)),
                            ("memory", Value::Int(l.memory)),
                            ("appDesc", desc),
                            ("appId", app),
                            ("masterUrl", url),
                            ("resources", res),
                        ],
                    );
                }
                self.msg(
                    "LaunchExecutor",
                    &[
                        ("cores", Value::Int(l.cores)),
                        ("execId", Value::Int(l.exec_id)),
                        ("memory", Value::Int(l.memory)),
                        ("rpId", Value::Int(l.rp_id)),
                        ("appDesc", desc),
                        ("appId", app),
                        ("masterUrl", url),
                        ("resources", res),
                    ],
                )
            }
            D::KillExecutor(k) => {
                let app = self.s(&k.app_id);
                let url = self.s(&k.master_url);
                self.msg(
                    "KillExecutor",
                    &[
                        ("execId", Value::Int(k.exec_id)),
                        ("appId", app),
                        ("masterUrl", url),
                    ],
                )
            }
            D::LaunchDriver(l) => {
                let desc = self.driver_description(&l.driver_desc)?;
                let id = self.s(&l.driver_id);
                let res = self.resources(&l.resources)?;
                self.msg(
                    "LaunchDriver",
                    &[("driverDesc", desc), ("driverId", id), ("resources", res)],
                )
            }
            D::KillDriver(k) => {
                let id = self.s(&k.driver_id);
                self.msg("KillDriver", &[("driverId", id)])
            }
            D::ApplicationFinished(a) => {
                let id = self.s(&a.id);
                self.msg("ApplicationFinished", &[("id", id)])
            }
            D::DecommissionWorker(_) => self.b.module(&format!("{DEPLOY}DecommissionWorker$")),
            D::MasterChanged(m) => {
                let master = self.endpoint_ref(&m.master)?;
                let url = self.s(&m.master_web_ui_url);
                self.msg(
                    "MasterChanged",
                    &[("master", master), ("masterWebUiUrl", url)],
                )
            }
            D::RegisterApplication(r) => {
                let desc = self.app_description(&r.app_description)?;
                let driver = self.endpoint_ref(&r.driver)?;
                self.msg(
                    "RegisterApplication",
                    &[("appDescription", desc), ("driver", driver)],
                )
            }
            D::RegisteredApplication(r) => {
                let id = self.s(&r.app_id);
                let master = self.endpoint_ref(&r.master)?;
                self.msg(
                    "RegisteredApplication",
                    &[("appId", id), ("master", master)],
                )
            }
            D::UnregisterApplication(u) => {
                let id = self.s(&u.app_id);
                self.msg("UnregisterApplication", &[("appId", id)])
            }
            D::MasterChangeAcknowledged(a) => {
                let id = self.s(&a.app_id);
                self.msg("MasterChangeAcknowledged", &[("appId", id)])
            }
            D::RequestExecutors(r)
                if self.has(&format!("{DEPLOY}RequestExecutors"), "requestedTotal") =>
            {
                let v1 = legacy::deploy::RequestExecutors::from(r);
                let id = self.s(&v1.app_id);
                self.msg(
                    "RequestExecutors",
                    &[
                        ("appId", id),
                        ("requestedTotal", Value::Int(v1.requested_total)),
                    ],
                )
            }
            D::RequestExecutors(r) => {
                let id = self.s(&r.app_id);
                let totals = self.profile_totals(&r.resource_profile_to_total_execs)?;
                self.msg(
                    "RequestExecutors",
                    &[("appId", id), ("resourceProfileToTotalExecs", totals)],
                )
            }
            D::KillExecutors(k) => {
                let id = self.s(&k.app_id);
                let ids = if self.scala_212() {
                    // Spark 3.0.3 sends the ids as the `ArrayBuffer` it collected them in.
                    let items = k.executor_ids.iter().map(|s| self.s(s)).collect();
                    self.array_buffer(items)?
                } else {
                    self.string_list(&k.executor_ids)?
                };
                self.msg("KillExecutors", &[("appId", id), ("executorIds", ids)])
            }
            D::ExecutorAdded(e) => {
                let host_port = self.s(&e.host_port);
                let worker = self.s(&e.worker_id);
                self.msg(
                    "ExecutorAdded",
                    &[
                        ("cores", Value::Int(e.cores)),
                        ("id", Value::Int(e.id)),
                        ("memory", Value::Int(e.memory)),
                        ("hostPort", host_port),
                        ("workerId", worker),
                    ],
                )
            }
            D::ExecutorUpdated(e) => {
                let exit = self.opt_int(e.exit_status)?;
                let message = self.opt_string(e.message.as_deref())?;
                let state = self.executor_state(e.state)?;
                if self.has(&format!("{DEPLOY}ExecutorUpdated"), "workerLost") {
                    let v1 = legacy::deploy::ExecutorUpdated::from(e);
                    return self.msg(
                        "ExecutorUpdated",
                        &[
                            ("id", Value::Int(e.id)),
                            ("workerLost", Value::Bool(v1.worker_lost)),
                            ("exitStatus", exit),
                            ("message", message),
                            ("state", state),
                        ],
                    );
                }
                let host = self.opt_string(e.worker_host.as_deref())?;
                self.msg(
                    "ExecutorUpdated",
                    &[
                        ("id", Value::Int(e.id)),
                        ("exitStatus", exit),
                        ("message", message),
                        ("state", state),
                        ("workerHost", host),
                    ],
                )
            }
            D::ApplicationRemoved(a) => {
                let m = self.s(&a.message);
                self.msg("ApplicationRemoved", &[("message", m)])
            }
            D::WorkerRemoved(w) => {
                let host = self.s(&w.host);
                let id = self.s(&w.id);
                let m = self.s(&w.message);
                self.msg(
                    "WorkerRemoved",
                    &[("host", host), ("id", id), ("message", m)],
                )
            }
            D::RequestSubmitDriver(r) => {
                let d = self.driver_description(&r.driver_description)?;
                self.msg("RequestSubmitDriver", &[("driverDescription", d)])
            }
            D::SubmitDriverResponse(r) => {
                let id = self.opt_string(r.driver_id.as_deref())?;
                let master = self.endpoint_ref(&r.master)?;
                let m = self.s(&r.message);
                self.msg(
                    "SubmitDriverResponse",
                    &[
                        ("success", Value::Bool(r.success)),
                        ("driverId", id),
                        ("master", master),
                        ("message", m),
                    ],
                )
            }
            D::RequestKillDriver(r) => {
                let id = self.s(&r.driver_id);
                self.msg("RequestKillDriver", &[("driverId", id)])
            }
            D::KillDriverResponse(r) => {
                let id = self.s(&r.driver_id);
                let master = self.endpoint_ref(&r.master)?;
                let m = self.s(&r.message);
                self.msg(
                    "KillDriverResponse",
                    &[
                        ("success", Value::Bool(r.success)),
                        ("driverId", id),
                        ("master", master),
                        ("message", m),
                    ],
                )
            }
            D::RequestDriverStatus(r) => {
                let id = self.s(&r.driver_id);
                self.msg("RequestDriverStatus", &[("driverId", id)])
            }
            D::DriverStatusResponse(r) => {
                let exception = self.opt_exception(r.exception.as_ref())?;
                let state = match r.state {
                    None => self.none()?,
                    Some(s) => {
                        let v = self.driver_state(s)?;
                        self.some(v)?
                    }
                };
                let host_port = self.opt_string(r.worker_host_port.as_deref())?;
                let worker = self.opt_string(r.worker_id.as_deref())?;
                self.msg(
                    "DriverStatusResponse",
                    &[
                        ("found", Value::Bool(r.found)),
                        ("exception", exception),
                        ("state", state),
                        ("workerHostPort", host_port),
                        ("workerId", worker),
                    ],
                )
            }
            D::RequestKillAllDrivers(_) => {
                self.b.module(&format!("{DEPLOY}RequestKillAllDrivers$"))
            }
            D::KillAllDriversResponse(r) => {
                let master = self.endpoint_ref(&r.master)?;
                let m = self.s(&r.message);
                self.msg(
                    "KillAllDriversResponse",
                    &[
                        ("success", Value::Bool(r.success)),
                        ("master", master),
                        ("message", m),
                    ],
                )
            }
            D::RequestClearCompletedDriversAndApps(_) => self
                .b
                .module(&format!("{DEPLOY}RequestClearCompletedDriversAndApps$")),
            D::RequestReadyz(_) => self.b.module(&format!("{DEPLOY}RequestReadyz$")),
            D::RequestMasterState(_) => self.b.module(&format!("{DEPLOY}RequestMasterState$")),
            D::DecommissionWorkersOnHosts(d) => {
                let hosts = self.string_list(&d.hostnames)?;
                self.msg("DecommissionWorkersOnHosts", &[("hostnames", hosts)])
            }
            D::RequestWorkerState(_) => self.b.module(&format!("{DEPLOY}RequestWorkerState$")),
            D::MasterStateResponse(_) => {
                // A master's WorkerInfo, ApplicationInfo and DriverInfo objects hold what the
                // typed answer does not (the drivers' references, submission dates, retry
                // counts): only the original answer is written.
                let same = self.original.is_some_and(|g| {
                    matches!(classify(g.root_node()), Classified::Message(Typed::Deploy(o)) if &o == m)
                });
                match self.original {
                    Some(g) if same => {
                        let root = g.root().map(Value::Ref).unwrap_or(Value::Null);
                        self.b.graft(g, root)
                    }
                    _ => Err(BuildError::Unsupported(
                        "MasterStateResponse is written only as the master's own objects \
                         decoded from Spark: its WorkerInfo, ApplicationInfo and DriverInfo hold \
                         state a typed answer does not"
                            .into(),
                    )),
                }
            }
            D::WorkerStateResponse(_) => Err(BuildError::Unsupported(
                "WorkerStateResponse never crosses Spark's wire: Spark's worker asks it of \
                 itself for its web UI"
                    .into(),
            )),
            other => Err(BuildError::Unsupported(format!(
                "{} is local to one process: it never crosses Spark's wire",
                crate::messages::Family::name(other)
            ))),
        }
    }

    fn coarse(&mut self, m: &CoarseMessage) -> R {
        use CoarseMessage as C;
        match m {
            C::RetrieveSparkAppConfig(r) => self.cmsg(
                "RetrieveSparkAppConfig",
                &[("resourceProfileId", Value::Int(r.resource_profile_id))],
            ),
            C::SparkAppConfig(c) => {
                // Spark 3.0.3 (JDK 11) reads its properties into new strings, an empty one too.
                let fresh = self.scala_212();
                let props: Vec<Value> = c
                    .spark_properties
                    .iter()
                    .map(|(k, v)| {
                        let v = if fresh { self.b.string(v) } else { self.s(v) };
                        let (k, v) = (self.s(k), v);
                        self.obj("scala.Tuple2", &[("_1", k), ("_2", v)])
                    })
                    .collect::<Result<_, _>>()?;
                let props = self.array_seq_typed("[Lscala.Tuple2;", props)?;
                let key = self.opt_bytes(c.io_encryption_key.as_ref())?;
                let creds = self.opt_bytes(c.hadoop_delegation_creds.as_ref())?;
                let profile = self.resource_profile(&c.resource_profile)?;
                if !self.has(&format!("{COARSE}SparkAppConfig"), "logLevel") {
                    // Spark 3.0.3's has no log level.
                    return self.cmsg(
                        "SparkAppConfig",
                        &[
                            ("hadoopDelegationCreds", creds),
                            ("ioEncryptionKey", key),
                            ("resourceProfile", profile),
                            ("sparkProperties", props),
                        ],
                    );
                }
                let level = self.opt_string(c.log_level.as_deref())?;
                self.cmsg(
                    "SparkAppConfig",
                    &[
                        ("hadoopDelegationCreds", creds),
                        ("ioEncryptionKey", key),
                        ("logLevel", level),
                        ("resourceProfile", profile),
                        ("sparkProperties", props),
                    ],
                )
            }
            C::RegisterExecutor(r) => {
                let attributes = self.string_hash_map(&r.attributes)?;
                let id = self.s(&r.executor_id);
                let executor = self.endpoint_ref(&r.executor_ref)?;
                let hostname = self.s(&r.hostname);
                let logs = self.string_hash_map(&r.log_urls)?;
                let res = self.resources(&r.resources)?;
                self.cmsg(
                    "RegisterExecutor",
                    &[
                        ("cores", Value::Int(r.cores)),
                        ("resourceProfileId", Value::Int(r.resource_profile_id)),
                        ("attributes", attributes),
                        ("executorId", id),
                        ("executorRef", executor),
                        ("hostname", hostname),
                        ("logUrls", logs),
                        ("resources", res),
                    ],
                )
            }
            C::LaunchedExecutor(l) => {
                let id = self.s(&l.executor_id);
                self.cmsg("LaunchedExecutor", &[("executorId", id)])
            }
            C::StatusUpdate(u) if !self.has(&format!("{COARSE}StatusUpdate"), "taskCpus") => {
                // Spark 3.0.3's has no task cpus, and its resources are ResourceInformation.
                let v1 = legacy::coarse::StatusUpdate::from(u);
                let data = self.payload_buffer(&u.data)?;
                let id = self.s(&u.executor_id);
                let res = self.resources(&v1.resources)?;
                let state = self.task_state(u.state)?;
                self.cmsg(
                    "StatusUpdate",
                    &[
                        ("taskId", Value::Long(u.task_id)),
                        ("data", data),
                        ("executorId", id),
                        ("resources", res),
                        ("state", state),
                    ],
                )
            }
            C::StatusUpdate(u) => {
                let data = self.payload_buffer(&u.data)?;
                let id = self.s(&u.executor_id);
                let mut res = Vec::new();
                for (k, inner) in &u.resources {
                    let mut entries = Vec::new();
                    for (a, n) in inner {
                        let a = self.s(a);
                        let n = self.b.boxed_long(*n)?;
                        entries.push((a, n));
                    }
                    let k = self.s(k);
                    let m = self.map(entries)?;
                    res.push((k, m));
                }
                let res = self.map(res)?;
                let state = self.task_state(u.state)?;
                let cpus = if self
                    .release
                    .field_type(&format!("{COARSE}StatusUpdate"), "taskCpus")
                    == Some("Lscala/math/BigDecimal;".to_string())
                {
                    // Spark 4.3 counts a task's cpus as a `scala.math.BigDecimal`.
                    self.scala_big_decimal(i64::from(u.task_cpus))?
                } else {
                    Value::Int(u.task_cpus)
                };
                self.cmsg(
                    "StatusUpdate",
                    &[
                        ("taskCpus", cpus),
                        ("taskId", Value::Long(u.task_id)),
                        ("data", data),
                        ("executorId", id),
                        ("resources", res),
                        ("state", state),
                    ],
                )
            }
            C::LaunchTask(l) => {
                let data = self.payload_buffer(&l.data)?;
                self.cmsg("LaunchTask", &[("data", data)])
            }
            C::KillTask(k) => {
                let executor = self.s(&k.executor);
                let reason = self.s(&k.reason);
                self.cmsg(
                    "KillTask",
                    &[
                        ("interruptThread", Value::Bool(k.interrupt_thread)),
                        ("taskId", Value::Long(k.task_id)),
                        ("executor", executor),
                        ("reason", reason),
                    ],
                )
            }
            C::StopExecutor(_) => self.b.module(&format!("{COARSE}StopExecutor$")),
            C::DecommissionExecutor(_) => self.b.module(&format!("{COARSE}DecommissionExecutor$")),
            C::ExecutorDecommissioning(e) => {
                let id = self.s(&e.executor_id);
                self.cmsg("ExecutorDecommissioning", &[("executorId", id)])
            }
            C::UpdateExecutorLogLevel(u) => {
                let level = self.s(&u.log_level);
                self.cmsg("UpdateExecutorLogLevel", &[("logLevel", level)])
            }
            C::TaskThreadDump(t) => {
                self.cmsg("TaskThreadDump", &[("taskId", Value::Long(t.task_id))])
            }
            C::ShufflePushCompletion(s) => self.cmsg(
                "ShufflePushCompletion",
                &[
                    ("mapIndex", Value::Int(s.map_index)),
                    ("shuffleId", Value::Int(s.shuffle_id)),
                    ("shuffleMergeId", Value::Int(s.shuffle_merge_id)),
                ],
            ),
            C::IsExecutorAlive(i) => {
                let id = self.s(&i.executor_id);
                self.cmsg("IsExecutorAlive", &[("executorId", id)])
            }
            C::RetrieveLastAllocatedExecutorId(_) => self
                .b
                .module(&format!("{COARSE}RetrieveLastAllocatedExecutorId$")),
            C::RemoveExecutor(r) => {
                let id = self.s(&r.executor_id);
                let reason = self.loss_reason(&r.reason)?;
                self.cmsg("RemoveExecutor", &[("executorId", id), ("reason", reason)])
            }
            C::RegisterClusterManager(r) => {
                let am = self.endpoint_ref(&r.am)?;
                self.cmsg("RegisterClusterManager", &[("am", am)])
            }
            C::RetrieveDelegationTokens(_) => {
                self.b.module(&format!("{COARSE}RetrieveDelegationTokens$"))
            }
            C::KillExecutors(k) => {
                let ids = self.string_list(&k.executor_ids)?;
                self.cmsg("KillExecutors", &[("executorIds", ids)])
            }
            C::UpdateDelegationTokens(u) => {
                let tokens = self.b.byte_array(u.tokens.as_slice())?;
                self.cmsg("UpdateDelegationTokens", &[("tokens", tokens)])
            }
            C::AddWebUIFilter(a) => {
                let name = self.s(&a.filter_name);
                let params = self.string_map(&a.filter_params)?;
                let base = self.s(&a.proxy_base);
                self.cmsg(
                    "AddWebUIFilter",
                    &[
                        ("filterName", name),
                        ("filterParams", params),
                        ("proxyBase", base),
                    ],
                )
            }
            C::MiscellaneousProcessAdded(m) => {
                let host_port = self.s(&m.info.host_port);
                let logs = self.string_map(&m.info.log_url_info)?;
                let info = self.obj(
                    "org.apache.spark.scheduler.MiscellaneousProcessDetails",
                    &[
                        ("cores", Value::Int(m.info.cores)),
                        ("hostPort", host_port),
                        ("logUrlInfo", logs),
                    ],
                )?;
                let id = self.s(&m.process_id);
                self.cmsg(
                    "MiscellaneousProcessAdded",
                    &[
                        ("time", Value::Long(m.time)),
                        ("info", info),
                        ("processId", id),
                    ],
                )
            }
            C::GetExecutorLossReason(g) => {
                let id = self.s(&g.executor_id);
                self.cmsg("GetExecutorLossReason", &[("executorId", id)])
            }
            C::RequestExecutors(_) => Err(BuildError::Unsupported(
                "the driver's RequestExecutors to a cluster manager (YARN, Kubernetes; never \
                 on a standalone cluster) is not written: its Spark object keys a map by \
                 ResourceProfile and holds sets sparkwire does not build"
                    .into(),
            )),
            other => Err(BuildError::Unsupported(format!(
                "{} is local to one process: it never crosses Spark's wire",
                crate::messages::Family::name(other)
            ))),
        }
    }

    fn loss_reason(&mut self, r: &ExecutorLossReason) -> R {
        const PKG: &str = "org.apache.spark.scheduler.";
        match r {
            ExecutorLossReason::ExecutorKilled {} => {
                self.b.module(&format!("{PKG}ExecutorKilled$"))
            }
            ExecutorLossReason::LossReasonPending {} => {
                self.b.module(&format!("{PKG}LossReasonPending$"))
            }
            ExecutorLossReason::ExecutorExited {
                exit_code,
                exit_caused_by_app,
                reason,
            } => {
                let m = self.s(reason);
                self.obj(
                    &format!("{PKG}ExecutorExited"),
                    &[
                        ("message", m),
                        ("exitCausedByApp", Value::Bool(*exit_caused_by_app)),
                        ("exitCode", Value::Int(*exit_code)),
                    ],
                )
            }
            ExecutorLossReason::ExecutorProcessLost {
                reason,
                worker_host,
                caused_by_app,
            } => {
                let m = self.s(reason);
                let host = self.opt_string(worker_host.as_deref())?;
                self.obj(
                    &format!("{PKG}ExecutorProcessLost"),
                    &[
                        ("message", m),
                        ("causedByApp", Value::Bool(*caused_by_app)),
                        ("workerHost", host),
                    ],
                )
            }
            ExecutorLossReason::ExecutorDecommission {
                worker_host,
                reason,
            } => {
                // Spark's message for it: "Executor decommission: " and the reason.
                let m = self.s(&format!("Executor decommission: {reason}"));
                let r = self.s(reason);
                let host = self.opt_string(worker_host.as_deref())?;
                self.obj(
                    &format!("{PKG}ExecutorDecommission"),
                    &[("message", m), ("reason", r), ("workerHost", host)],
                )
            }
            ExecutorLossReason::Other { message } => {
                let m = self.s(message);
                self.obj(&format!("{PKG}ExecutorLossReason"), &[("message", m)])
            }
        }
    }

    /// A whole number of cpus as Spark 4.3 writes one: Scala's `BigDecimal` in Scala's default
    /// context (`DECIMAL128`: 34 digits, half-even), its hash code not yet computed, over a
    /// `java.math.BigDecimal` of scale 9 (1 cpu is 1000000000 × 10⁻⁹, as real Spark 4.3.0's
    /// StatusUpdate carries it) whose `BigInteger` writes its legacy fields as
    /// `BigInteger.writeObject` does.
    fn scala_big_decimal(&mut self, n: i64) -> R {
        let unscaled = i128::from(n) * 1_000_000_000;
        let signum = unscaled.signum() as i32;
        let magnitude: Vec<u8> = {
            let bytes = unscaled.unsigned_abs().to_be_bytes();
            let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
            bytes[first..].to_vec()
        };
        let magnitude = self.b.byte_array(&magnitude)?;
        let big_integer = self.obj(
            "java.math.BigInteger",
            &[
                ("bitCount", Value::Int(-1)),
                ("bitLength", Value::Int(-1)),
                ("firstNonzeroByteNum", Value::Int(-2)),
                ("lowestSetBit", Value::Int(-2)),
                ("signum", Value::Int(signum)),
                ("magnitude", magnitude),
            ],
        )?;
        let java = self.obj(
            "java.math.BigDecimal",
            &[
                ("scale", Value::Int(TASK_CPUS_SCALE)),
                ("intVal", big_integer),
            ],
        )?;
        let half_even = self
            .b
            .enum_constant("java.math.RoundingMode", "HALF_EVEN")?;
        let context = self.obj(
            "java.math.MathContext",
            &[("precision", Value::Int(34)), ("roundingMode", half_even)],
        )?;
        self.obj(
            "scala.math.BigDecimal",
            &[
                ("computedHashCode", Value::Int(SCALA_HASH_NOT_COMPUTED)),
                ("bigDecimal", java),
                ("mc", context),
            ],
        )
    }

    fn array_seq_typed(&mut self, array_class: &str, items: Vec<Value>) -> R {
        let arr = self.b.array(array_class, items)?;
        if self.scala_212() {
            // Scala 2.12 wraps an array as `WrappedArray$ofRef`; before Scala 2.12.15 its class
            // tag is computed lazily (never, on Spark's path: `bitmap$0` false, null).
            let wrapped = "scala.collection.mutable.WrappedArray$ofRef";
            if !self.has(wrapped, "elemTag") {
                return self.obj(wrapped, &[("array", arr)]);
            }
            return self.obj(
                wrapped,
                &[
                    ("bitmap$0", Value::Bool(false)),
                    ("array", arr),
                    ("elemTag", Value::Null),
                ],
            );
        }
        self.obj(
            "scala.collection.immutable.ArraySeq$ofRef",
            &[("unsafeArray", arr)],
        )
    }

    fn opt_bytes(&mut self, p: Option<&Payload>) -> R {
        match p {
            None => self.none(),
            Some(p) => {
                let b = self.b.byte_array(p.as_slice())?;
                self.some(b)
            }
        }
    }
}

/// The seed of a Scala 2.12 hash table (`tableSizeSeed` of its first table, 16 buckets).
const HASH_TABLE_212_SEED: u32 = 4;

/// The order a Scala 2.12 `mutable.HashMap` (`HashTable`) serializes `entries` (by their
/// keys' `##`) in, added in the order given: 16 buckets, doubled when three quarters full,
/// an entry put at the head of its bucket; written from the last bucket to the first.
fn hash_table_212_order<T>(entries: Vec<(i32, T)>) -> Vec<T> {
    let index = |hash: i32, len: usize| -> usize {
        let ones = (len - 1) as u32;
        let rotated = byteswap32(hash).rotate_right(HASH_TABLE_212_SEED % 32);
        ((rotated >> ones.leading_zeros()) & ones) as usize
    };
    let mut len: usize = 16;
    let mut table: Vec<Vec<(i32, T)>> = (0..len).map(|_| Vec::new()).collect();
    let mut size = 0usize;
    for (hash, t) in entries {
        table[index(hash, len)].insert(0, (hash, t));
        size += 1;
        if size >= len * 750 / 1000 {
            let old = std::mem::take(&mut table);
            len *= 2;
            table = (0..len).map(|_| Vec::new()).collect();
            for bucket in old.into_iter().rev() {
                for (hash, t) in bucket {
                    table[index(hash, len)].insert(0, (hash, t));
                }
            }
        }
    }
    table.into_iter().rev().flatten().map(|(_, t)| t).collect()
}

/// The position of an improved hash in a Scala 2.12 hash trie's iteration: its five-bit
/// groups, lowest first, as the most significant digits.
fn trie_212_order(improved: i32) -> u64 {
    let h = improved as u32;
    (0..7).fold(0u64, |acc, level| {
        (acc << 5) | u64::from((h >> (5 * level)) & 31)
    })
}

/// Scala 2.12's `hashing.byteswap32`, which mutable hash tables spread keys' hashes with.
fn byteswap32(v: i32) -> u32 {
    let hc = v.wrapping_mul(0x9e37_75cd_u32 as i32);
    hc.swap_bytes().wrapping_mul(0x9e37_75cd_u32 as i32) as u32
}

/// Scala 2.13's `Hashing.improve` (and Scala 2.12's `HashMap.improve`), which immutable hash
/// maps spread keys' hashes with.
fn scala_improve(hcode: i32) -> i32 {
    let mut h = hcode.wrapping_add(!(hcode.wrapping_shl(9)));
    h ^= ((h as u32) >> 14) as i32;
    h = h.wrapping_add(h.wrapping_shl(4));
    h ^ ((h as u32) >> 10) as i32
}

/// The order a CHAMP trie iterates entries with these (improved) hashes in, from level `shift`.
fn champ_order<T>(entries: Vec<(i32, T)>, shift: u32) -> Vec<T> {
    if shift >= 32 {
        // A collision node keeps its entries as they came.
        return entries.into_iter().map(|(_, t)| t).collect();
    }
    let mut slots: BTreeMap<u32, Vec<(i32, T)>> = BTreeMap::new();
    for (h, t) in entries {
        slots
            .entry(((h as u32) >> shift) & 31)
            .or_default()
            .push((h, t));
    }
    let mut own = Vec::new();
    let mut below = Vec::new();
    for (_, mut group) in slots {
        if group.len() == 1 {
            if let Some((_, t)) = group.pop() {
                own.push(t);
            }
        } else {
            below.extend(champ_order(group, shift + 5));
        }
    }
    own.extend(below);
    own
}

/// Java's `String.hashCode`.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::Version;

    #[test]
    fn scala_212_hash_table_order_is_the_order_spark_3_writes_an_enumeration_map_in() {
        // Real Spark 3.0.3 streams write TaskState's `vmap` (ordinals 0..6 added in order) as
        // 2, 5, 4, 1, 3, 0.
        let order = hash_table_212_order((0..6).map(|i| (i, i)).collect());
        assert_eq!(order, vec![2, 5, 4, 1, 3, 0]);
    }

    #[test]
    fn an_rpc_failure_reply_object_reads_back_as_the_failure_it_carries() {
        // What a Spark endpoint answers an ask it fails with: `RpcFailure(e)` in an RpcResponse.
        for version in [Version::V2, Version::V1] {
            let mut s = Scala::new(Release::of(version), None);
            // (Spark's endpoints fail with a SparkException, whose extra fields this writer does
            // not build; the reader takes any Throwable's class and detail message alike.)
            let error = ErrorDescription::new("java.lang.Exception", "Unsupported message");
            let e = s.exception(&error).expect("an exception");
            let v =
                s.b.object(super::super::map::RPC_FAILURE, &[("e", e)])
                    .expect("RpcFailure");
            let stream =
                serial::write(&s.b.finish(v), &super::super::java::limits()).expect("writes");
            let g = super::super::java::parse(&stream).expect("reads");
            assert_eq!(
                super::super::map::reply_value(g.root_node()).expect("a reply"),
                super::super::map::ReplyValue::Failure(error)
            );
        }
    }

    #[test]
    fn a_scala_212_object_with_fields_is_refused_without_an_original() {
        let mut b = Builder::new(Release::of(Version::V1).table());
        assert!(b.module("scala.None$").is_ok());
        let e = b
            .module("org.apache.spark.deploy.master.RecoveryState$")
            .expect_err("an enumeration object has fields");
        assert!(matches!(e, BuildError::Unsupported(_)), "{e}");
    }

    #[test]
    fn a_spark_3_enumeration_without_a_known_declaration_is_refused_with_a_reason() {
        let mut s = Scala::new(Release::of(Version::V1), None);
        let e = s
            .enumeration("org.apache.spark.deploy.master.RecoveryState$", 0)
            .expect_err("no original, no declaration");
        assert!(e.to_string().contains("whole"), "{e}");
        assert!(s.enumeration(TASK_STATE, 2).is_ok());
    }
}
