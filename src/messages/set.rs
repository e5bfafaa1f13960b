//! `set<T>` fields: an array whose elements are distinct and ascending (SPEC §4.1), read into a
//! `BTreeSet`. A MessagePack array with an element twice or out of order is refused; readable
//! forms (JSON), which keep no canonical order, are read as any array of distinct elements.

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

/// Reads a set, refusing a MessagePack array that is not distinct and ascending, and any array
/// with an element twice.
pub(crate) fn ascending<'de, D, T>(d: D) -> Result<BTreeSet<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Ord + fmt::Debug,
{
    let ordered = !d.is_human_readable();
    d.deserialize_seq(Ascending {
        ordered,
        of: PhantomData,
    })
}

struct Ascending<T> {
    ordered: bool,
    of: PhantomData<T>,
}

impl<'de, T: Deserialize<'de> + Ord + fmt::Debug> Visitor<'de> for Ascending<T> {
    type Value = BTreeSet<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of distinct elements in ascending order (a set)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BTreeSet<T>, A::Error> {
        let mut out = BTreeSet::new();
        while let Some(item) = seq.next_element::<T>()? {
            if let Some(last) = out.last() {
                if self.ordered && &item < last {
                    return Err(de::Error::custom(format!(
                        "set element {item:?} after {last:?}: a set is distinct and ascending"
                    )));
                }
            }
            if out.contains(&item) {
                return Err(de::Error::custom(format!(
                    "set element {item:?} given twice: a set is distinct and ascending"
                )));
            }
            out.insert(item);
        }
        Ok(out)
    }
}
