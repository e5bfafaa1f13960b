//! Replays every fuzz target's seed corpus and every file in `fuzz/regressions/<target>/` through
//! the same target functions cargo-fuzz runs, so what a fuzzer once found stays fixed.
//!
//! `fuzz/` is a crate of its own, which `cargo package` leaves out of the published crate: there
//! the test reads the directory `SPARKWIRE_FUZZ_REGRESSIONS` names (CI points it at the
//! repository's), and says so when it has none to read.

use std::path::Path;

use sparkwire::fuzzing::{run, seeds, TARGETS};

#[test]
fn every_target_has_seeds_and_they_run_clean() {
    for target in TARGETS {
        let corpus = seeds(target);
        assert!(!corpus.is_empty(), "{target} has no seeds");
        for input in &corpus {
            assert!(run(target, input), "{target} is not a target");
        }
    }
}

#[test]
fn every_regression_file_replays_clean() {
    let in_repository = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/regressions"));
    let root = match std::env::var_os("SPARKWIRE_FUZZ_REGRESSIONS") {
        Some(dir) => std::path::PathBuf::from(dir),
        None if in_repository.is_dir() => in_repository.to_path_buf(),
        None if !Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz")).exists() => {
            eprintln!(
                "a packaged crate has no fuzz/: set SPARKWIRE_FUZZ_REGRESSIONS to the \
                 repository's fuzz/regressions to replay them"
            );
            return;
        }
        None => panic!("fuzz/ has no regressions/ directory"),
    };
    let mut replayed = 0;
    for entry in std::fs::read_dir(&root).expect("the regressions directory exists") {
        let dir = entry.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        let target = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        assert!(
            TARGETS.contains(&target.as_str()),
            "fuzz/regressions/{target} names no target"
        );
        for file in std::fs::read_dir(&dir).expect("readable") {
            let path = file.expect("entry").path();
            let data = std::fs::read(&path).expect("readable");
            assert!(run(&target, &data));
            replayed += 1;
        }
    }
    println!("replayed {replayed} regression inputs");
}

#[test]
fn an_unknown_target_name_is_reported() {
    assert!(!run("no_such_target", b"x"));
}

/// The Spark targets start from every release's own forms: the stream of each class table's
/// RegisterWorker vector (`protocol/vectors/spark/RELEASE.json`) is a `java_roundtrip` seed as it
/// is, and a `spark_stream` seed inside a one-way frame to the master.
#[cfg(feature = "spark")]
#[test]
fn the_spark_targets_are_seeded_with_every_class_table_s_vectors() {
    use sparkwire::messages::from_hex;
    use sparkwire::spark::{Release, SparkVectors};
    let java = seeds("java_roundtrip");
    let wire = seeds("spark_stream");
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protocol/vectors/spark"
    ));
    let mut tables = 0;
    for release in Release::all().iter().filter(|r| r.names_its_table()) {
        let path = dir.join(format!("{}.json", release.name()));
        let text = std::fs::read_to_string(&path).expect("the table's vectors");
        let v: SparkVectors = serde_json::from_str(&text).expect("they parse");
        let x = v
            .vectors
            .iter()
            .find(|x| x.message == "deploy.RegisterWorker")
            .expect("a RegisterWorker vector");
        let stream = from_hex(&x.stream_hex).expect("hex");
        assert!(
            java.iter().any(|s| s.get(1..) == Some(&stream[..])),
            "{release}: no java_roundtrip seed is its RegisterWorker"
        );
        assert!(
            wire.iter()
                .any(|s| s.windows(stream.len()).any(|w| w == &stream[..])),
            "{release}: no spark_stream seed carries its RegisterWorker"
        );
        tables += 1;
    }
    assert!(tables >= 30, "{tables} class tables");
}
