#![no_main]
//! Fuzz target `message_body`: see `sparkwire::fuzzing::message_body`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::message_body(data);
});
