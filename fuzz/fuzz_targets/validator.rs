#![no_main]
//! Fuzz target `validator`: see `sparkwire::fuzzing::validator`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::validator(data);
});
