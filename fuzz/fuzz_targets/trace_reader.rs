#![no_main]
//! Fuzz target `trace_reader`: see `sparkwire::fuzzing::trace_reader`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::trace_reader(data);
});
