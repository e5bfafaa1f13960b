#![no_main]
//! Fuzz target `roundtrip`: see `sparkwire::fuzzing::roundtrip`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::roundtrip(data);
});
