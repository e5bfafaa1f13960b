#![no_main]
//! Fuzz target `envelope`: see `sparkwire::fuzzing::envelope`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::envelope(data);
});
