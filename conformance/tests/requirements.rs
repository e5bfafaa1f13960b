//! A case's requirement is about one line: what the case checks, in the suite's words. The
//! protocol document's own words go in its `quote` (CASES.md renders the quote, then the
//! requirement). These tests keep it so.

use sparkwire_conformance::all_cases;

/// The longest a requirement may be, in characters.
const BOUND: usize = 120;

/// A requirement that quotes a protocol document inline, in the form `SPEC §N, "…": …` (or
/// `handshake.md §N`, `rules.md …`): its words belong in the case's `quote`.
fn quotes_inline(requirement: &str) -> bool {
    let cites = [
        "SPEC §",
        "handshake.md",
        "rules.md",
        "messages.md",
        "trace.md",
    ]
    .iter()
    .any(|c| requirement.starts_with(c));
    cites && requirement.contains("\": ")
}

#[test]
fn no_requirement_is_over_the_bound() {
    let all = all_cases();
    let over: Vec<String> = all
        .iter()
        .filter(|c| c.requirement.chars().count() > BOUND)
        .map(|c| {
            format!(
                "{} ({}, {} characters): {}",
                c.id,
                c.target,
                c.requirement.chars().count(),
                c.requirement
            )
        })
        .collect();
    assert!(
        over.is_empty(),
        "{} requirements are over {BOUND} characters (put the spec's words in `quote`, keep the \
         requirement to one line):\n{}",
        over.len(),
        over.join("\n")
    );
    let quoted = all.iter().filter(|c| !c.quote.is_empty()).count();
    eprintln!("{} planned cases: {quoted} with a quote", all.len());
}

#[test]
fn a_quote_is_cited_and_a_requirement_does_not_start_with_one() {
    let mut wrong = Vec::new();
    for c in all_cases() {
        if quotes_inline(&c.requirement) {
            wrong.push(format!("{}: requirement quotes the spec inline", c.id));
        }
        let cited = [
            "SPEC",
            "handshake.md",
            "rules.md",
            "messages.md",
            "trace.md",
            "protocol/",
        ]
        .iter()
        .any(|d| c.quote.contains(d));
        if !c.quote.is_empty() && !cited {
            wrong.push(format!(
                "{}: its quote names no document: {}",
                c.id, c.quote
            ));
        }
    }
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_rules_see_an_inline_quote() {
    assert!(quotes_inline(
        "SPEC §8.1, \"A refused ask is answered\": the master answers"
    ));
    assert!(!quotes_inline(
        "the master answers a refused ask with a failure"
    ));
}
