//! Replays every simulator regression case in `tests/data/sim/`: a scenario shrunk from a
//! failing seed (`sparkwire sim --shrink-to`), whose first line says what it must do now:
//! `# expect ok` (a bug the search found in the cores, fixed) or `# expect INVARIANT` (a bug
//! planted in a core, which the oracle must keep finding).

use sparkwire::node::sim::search::{run, Scenario};

#[test]
fn every_regression_case_replays_as_it_expects() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sim");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/sim")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no case in {}", dir.display());
    for path in cases {
        let text = std::fs::read_to_string(&path).expect("readable");
        let expect = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect "))
            .unwrap_or_else(|| panic!("{}: no `# expect` line", path.display()))
            .trim()
            .to_string();
        let scenario = Scenario::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = run(&scenario, false);
        match (expect.as_str(), &outcome.failure) {
            ("ok", None) => {}
            ("ok", Some(f)) => panic!("{}: {f}", path.display()),
            (inv, Some(f)) => assert_eq!(f.invariant, inv, "{}: {f}", path.display()),
            (inv, None) => panic!("{}: expected {inv}, kept every invariant", path.display()),
        }
    }
}
