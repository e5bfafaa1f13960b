#![no_main]
//! Fuzz target `frame_decoder`: see `sparkwire::fuzzing::frame_decoder`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::frame_decoder(data);
});
