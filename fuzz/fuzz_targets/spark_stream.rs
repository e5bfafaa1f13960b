#![no_main]
//! Fuzz target `spark_stream`: see `sparkwire::fuzzing::spark_stream`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::spark_stream(data);
});
