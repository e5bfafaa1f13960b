#![no_main]
//! Fuzz target `binary_trace_reader`: see `sparkwire::fuzzing::binary_trace_reader`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::binary_trace_reader(data);
});
