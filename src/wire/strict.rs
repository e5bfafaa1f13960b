//! Struct layouts as SPEC §4.1 has them, for the readable forms (the JSON of the golden vectors
//! and of traces): a struct (a message's fields, a record, a union's variant) is an object of its
//! fields, never an array.
//!
//! serde_json on its own also takes an array of the field values in declaration order. [`Strict`]
//! wraps a deserializer, and with it every deserializer it hands to nested values, so that a struct
//! met as an array is refused with a typed error naming what was expected. Everything else passes
//! straight through. Readable forms keep no key order, so maps are not held to the canonical order
//! here; MessagePack is read by [`super::de`], which holds it to every rule of §4.1.

// Without the feature `trace` nothing reads the readable forms: only `from_slice` is used.
#![cfg_attr(not(feature = "trace"), allow(dead_code))]

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

pub(crate) use super::de::from_slice;
use super::de::StructAsMap;

/// A deserializer that refuses structs written as arrays (see the module documentation).
pub(crate) struct Strict<D>(pub(crate) D);

/// A visitor wrapper: nested values get [`Strict`] deserializers; `fields_of` is the struct's
/// name when the visitor builds a struct (an array is then refused).
struct Wrap<V> {
    inner: V,
    fields_of: Option<&'static str>,
}

fn plain<V>(inner: V) -> Wrap<V> {
    Wrap {
        inner,
        fields_of: None,
    }
}

fn fields_of<V>(name: &'static str, inner: V) -> Wrap<V> {
    Wrap {
        inner,
        fields_of: Some(name),
    }
}

macro_rules! forward_deserialize {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(plain(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier
    }

    /// What is skipped (an unknown field's value) is not examined: it only has to be one
    /// well-formed value.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_ignored_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, plain(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, plain(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, plain(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, plain(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, fields_of(name, visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, plain(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str)
        visit_borrowed_str(&'de str) visit_string(String) visit_bytes(&[u8])
        visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        match self.fields_of {
            Some(name) => Err(de::Error::invalid_type(Unexpected::Seq, &StructAsMap(name))),
            None => self.inner.visit_seq(Seq(seq)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Map(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Enum(data))
    }
}

/// A seed whose deserializer is wrapped in [`Strict`].
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

struct Seq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct Map<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct Enum<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(Seed(seed))
            .map(|(value, variant)| (value, Variant(variant)))
    }
}

struct Variant<A>(A);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, plain(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0
            .struct_variant(fields, fields_of("a union variant", visitor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Pair {
        a: i32,
        b: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Loss {
        Exited { code: i32 },
        Unknown,
    }

    fn mp<T: serde::Serialize>(v: &T) -> Vec<u8> {
        rmp_serde::to_vec_named(v).expect("encodes")
    }

    #[test]
    fn a_struct_as_a_map_decodes_and_as_an_array_is_refused() {
        let map = mp(&serde_json::json!({"a": 1, "b": "x"}));
        assert_eq!(
            from_slice::<Pair>(&map).ok(),
            Some(Pair {
                a: 1,
                b: Some("x".into())
            })
        );
        let array = mp(&serde_json::json!([1, "x"]));
        assert!(
            rmp_serde::from_slice::<Pair>(&array).is_ok(),
            "rmp-serde alone takes it"
        );
        let e = from_slice::<Pair>(&array).expect_err("refused");
        assert!(e.to_string().contains("a map of the fields of Pair"), "{e}");
    }

    #[test]
    fn nested_structs_and_union_variants_are_held_to_maps_too() {
        let nested = mp(&serde_json::json!([{"a": 1, "b": null}, [2, null]]));
        assert!(from_slice::<Vec<Pair>>(&nested).is_err());
        let in_option = mp(&serde_json::json!({"x": [1, null]}));
        assert!(
            from_slice::<std::collections::BTreeMap<String, Option<Pair>>>(&in_option).is_err()
        );
        let variant_map = mp(&serde_json::json!({"Exited": {"code": 137}}));
        assert_eq!(
            from_slice::<Loss>(&variant_map).ok(),
            Some(Loss::Exited { code: 137 })
        );
        let variant_array = mp(&serde_json::json!({"Exited": [137]}));
        assert!(from_slice::<Loss>(&variant_array).is_err());
        let unit = mp(&"Unknown");
        assert_eq!(from_slice::<Loss>(&unit).ok(), Some(Loss::Unknown));
        // Lists and tuples stay arrays.
        let tuple = mp(&serde_json::json!([["k", "v"]]));
        assert_eq!(
            from_slice::<Vec<(String, String)>>(&tuple).ok(),
            Some(vec![("k".to_string(), "v".to_string())])
        );
    }

    fn raw_map(keys: &[&[u8]]) -> Vec<u8> {
        // {k: 1, ...} with the keys as given (fixstr keys).
        let mut out = vec![0x80 | keys.len() as u8];
        for k in keys {
            out.push(0xa0 | k.len() as u8);
            out.extend_from_slice(k);
            out.push(0x01);
        }
        out
    }

    #[test]
    fn map_keys_must_be_distinct_and_ascending_in_messagepack() {
        type M = std::collections::BTreeMap<String, i32>;
        assert_eq!(
            from_slice::<M>(&raw_map(&[b"B", b"a", b"b"]))
                .map(|m| m.len())
                .ok(),
            Some(3)
        );
        let twice = from_slice::<M>(&raw_map(&[b"a", b"a"])).expect_err("duplicate");
        assert!(twice.to_string().contains("given twice"), "{twice}");
        let order = from_slice::<M>(&raw_map(&[b"b", b"a"])).expect_err("out of order");
        assert!(order.to_string().contains("after"), "{order}");
        // Integer keys by value: 2 before 10.
        let ints = [0x82, 0x02, 0x01, 0x0a, 0x01];
        assert!(from_slice::<std::collections::BTreeMap<i32, i32>>(&ints).is_ok());
        let back = [0x82, 0x0a, 0x01, 0x02, 0x01];
        assert!(from_slice::<std::collections::BTreeMap<i32, i32>>(&back).is_err());
        // A struct's field map takes its fields in any order.
        let fields = mp(&serde_json::json!({"b": "x", "a": 1}));
        assert!(from_slice::<Pair>(&fields).is_ok());
    }

    #[test]
    fn json_holds_structs_to_objects_but_keeps_no_key_order() {
        let array = serde_json::json!([1, "x"]);
        assert!(
            serde_json::from_value::<Pair>(array.clone()).is_ok(),
            "serde_json alone takes it"
        );
        let e = Pair::deserialize(Strict(array)).expect_err("refused");
        assert!(e.to_string().contains("a map of the fields of Pair"), "{e}");
        let object = serde_json::json!({"b": 2, "a": 1});
        let m = std::collections::BTreeMap::<String, i32>::deserialize(Strict(object));
        assert_eq!(m.map(|m| m.len()).ok(), Some(2));
    }
}
