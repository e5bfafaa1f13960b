#![no_main]
//! Fuzz target `task_description`: see `sparkwire::fuzzing::task_description`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sparkwire::fuzzing::task_description(data);
});
