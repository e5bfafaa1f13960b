#![no_main]
//! Fuzz target `java_roundtrip`: see `sparkwire::fuzzing::java_roundtrip`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::java_roundtrip(data);
});
