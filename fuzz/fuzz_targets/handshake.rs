#![no_main]
//! Fuzz target `handshake`: see `sparkwire::fuzzing::handshake`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::handshake(data);
});
