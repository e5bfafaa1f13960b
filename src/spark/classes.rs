//! The class descriptors of Spark's messages, dumped from Spark's own jars
//! (`protocol/spark/classes-*.json`, made by `scripts/spark/classes.sh`): what a writer needs to
//! put a class descriptor on the wire exactly as the JVM does.

use std::collections::HashMap;

use serde::Deserialize;

use crate::messages::Version;

/// One field of a class, as the table gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FieldEntry {
    /// The type code (`I`, `L`, `[`, …).
    #[serde(rename = "type")]
    pub code: String,
    /// The field's name.
    pub name: String,
    /// For object and array fields, the type's signature (`Ljava/lang/String;`).
    #[serde(default)]
    pub class: Option<String>,
}

/// One class, as `ObjectStreamClass.lookup` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ClassEntry {
    /// The class's name.
    pub name: String,
    /// Its `serialVersionUID`, in decimal.
    pub suid: String,
    /// Its `SC_*` flags.
    pub flags: u8,
    /// Its serializable fields, in stream order.
    pub fields: Vec<FieldEntry>,
    /// Its serializable superclass.
    #[serde(rename = "super")]
    pub super_class: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TableFile {
    spark: String,
    java: String,
    classes: Vec<ClassEntry>,
}

/// The classes of one Spark version.
#[derive(Debug)]
pub struct ClassTable {
    spark: String,
    java: String,
    classes: HashMap<String, ClassEntry>,
}

impl ClassTable {
    /// Reads a table from its JSON text.
    pub fn from_json(text: &str) -> Result<ClassTable, String> {
        let file: TableFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut classes = HashMap::with_capacity(file.classes.len());
        for c in file.classes {
            c.suid
                .parse::<i64>()
                .map_err(|_| format!("{}: serialVersionUID {:?}", c.name, c.suid))?;
            classes.insert(c.name.clone(), c);
        }
        Ok(ClassTable {
            spark: file.spark,
            java: file.java,
            classes,
        })
    }

    /// The table of Spark's release that protocol `version` follows (1: Spark 3.0.3, 2: Spark
    /// 4.0.1; see [`super::Release::of`]).
    pub fn of(version: Version) -> Option<&'static ClassTable> {
        Some(super::release::Release::of(version).table())
    }

    /// Whether Scala `object`s are written as themselves (Scala 2.12, Spark 3), not through
    /// Scala 2.13's `ModuleSerializationProxy` (Spark 4).
    pub fn writes_modules_whole(&self) -> bool {
        self.get("scala.runtime.ModuleSerializationProxy").is_none()
    }

    /// The Spark release the table was dumped from.
    pub fn spark(&self) -> &str {
        &self.spark
    }

    /// The Java version that dumped it.
    pub fn java(&self) -> &str {
        &self.java
    }

    /// Class `name`.
    pub fn get(&self, name: &str) -> Option<&ClassEntry> {
        self.classes.get(name)
    }

    /// How many classes it has.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Every class, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &ClassEntry> {
        self.classes.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spark_4_table_loads_and_has_the_message_classes() {
        let t = ClassTable::of(Version::V2).expect("the 4.0.1 table loads");
        assert_eq!(t.spark(), "4.0.1");
        let rw = t
            .get("org.apache.spark.deploy.DeployMessages$RegisterWorker")
            .expect("RegisterWorker");
        assert_eq!(rw.suid, "3085801672543586679");
        assert_eq!(rw.fields[0].name, "cores");
        assert!(t.get("scala.runtime.ModuleSerializationProxy").is_some());
    }
}
