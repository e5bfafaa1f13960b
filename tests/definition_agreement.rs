//! The Rust types and `protocol/definition.json` agree on every message, field, type and version.
#![cfg(feature = "arbitrary")]

mod common;

use arbitrary::Arbitrary;
use bytes::Bytes;
use sparkwire::definition::{Definition, MessageKind, TypeExpr};
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::check::{check_message, Strictness};
use sparkwire::wire::write_message;

#[test]
fn definition_parses_and_every_type_expression_resolves() {
    let def = Definition::builtin();
    let mut named = Vec::new();
    let all_fields = def
        .messages
        .iter()
        .flat_map(|m| m.fields.iter())
        .chain(def.types.iter().flat_map(|t| t.fields.iter()))
        .chain(
            def.types
                .iter()
                .flat_map(|t| t.variants.iter().flat_map(|v| v.fields.iter())),
        );
    for f in all_fields {
        let t = f
            .type_expr()
            .unwrap_or_else(|e| panic!("field {}: {e}", f.name));
        t.named(&mut named);
        if f.since == Some(2) && f.until.is_none() {
            assert!(
                f.default.is_some(),
                "field {} is newer than v1 but documents no default",
                f.name
            );
        }
        if f.until == Some(1) {
            assert!(
                f.from_v2.is_some(),
                "v1-only field {} does not say how it is computed",
                f.name
            );
        }
    }
    for n in named {
        assert!(
            def.type_def(&n).is_some(),
            "type {n} is used but not defined"
        );
    }
    for m in &def.messages {
        for role in m.from.iter().chain(m.to.iter()) {
            let r = def
                .role(role)
                .unwrap_or_else(|| panic!("{}: unknown role {role}", m.name));
            assert_eq!(
                r.family, m.family,
                "{}: role {role} speaks another family",
                m.name
            );
        }
        match (m.kind, &m.reply) {
            (MessageKind::Ask, None) => panic!("ask {} names no reply type", m.name),
            (MessageKind::Send | MessageKind::Reply, Some(_)) => {
                panic!("{} is not an ask but names a reply", m.name)
            }
            (_, Some(r)) => {
                let is_message = def
                    .message(&m.family, r)
                    .is_some_and(|rm| rm.kind == MessageKind::Reply);
                let is_type = TypeExpr::parse(r).is_ok_and(|t| {
                    let mut n = Vec::new();
                    t.named(&mut n);
                    n.iter().all(|x| def.type_def(x).is_some())
                });
                assert!(
                    is_message || is_type,
                    "{}: reply {r} is neither a reply message nor a type",
                    m.name
                );
            }
            _ => {}
        }
    }
}

fn names_versions_and_locality_agree<F: Family>() {
    let def = Definition::builtin();
    let in_def: Vec<&str> = def
        .messages
        .iter()
        .filter(|m| m.family == F::FAMILY)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(
        in_def,
        F::NAMES.to_vec(),
        "{} messages differ between Rust and the definition",
        F::FAMILY
    );
    for name in F::NAMES {
        let m = def.message(F::FAMILY, name).expect("listed above");
        assert_eq!(
            F::since_of(name).map(|v| v.number()),
            Some(m.since),
            "{name}: since differs"
        );
        assert_eq!(
            F::is_local_name(name),
            Some(m.kind == MessageKind::Local),
            "{name}: locality differs"
        );
    }
}

#[test]
fn rust_message_names_versions_and_locality_match_the_definition() {
    names_versions_and_locality_agree::<DeployMessage>();
    names_versions_and_locality_agree::<CoarseMessage>();
}

fn layouts_agree<F: Family + for<'a> Arbitrary<'a>>(seed: u64) {
    let def = Definition::builtin();
    for m in common::samples_of_every_message::<F>(seed, 25) {
        for v in Version::ALL.into_iter().filter(|v| m.exists_in(*v)) {
            let mut body = Vec::new();
            write_message(&m, v, &mut body).unwrap_or_else(|e| panic!("{}: {e}", m.name()));
            if let Err(e) = check_message(def, F::FAMILY, v, &body, Strictness::Exact) {
                panic!(
                    "{} in {v} disagrees with the definition: {e}\nvalue: {m:?}",
                    m.name()
                );
            }
            // Whatever the encoder writes, a lenient reader accepts too.
            assert!(check_message(def, F::FAMILY, v, &body, Strictness::Lenient).is_ok());
        }
    }
}

#[test]
fn every_deploy_message_is_laid_out_exactly_as_the_definition_says_in_every_version() {
    layouts_agree::<DeployMessage>(11);
}

#[test]
fn every_coarse_message_is_laid_out_exactly_as_the_definition_says_in_every_version() {
    layouts_agree::<CoarseMessage>(12);
}

#[test]
fn checker_catches_a_missing_field_a_wrong_type_and_an_unknown_field() {
    let def = Definition::builtin();
    let good = sparkwire::messages::deploy::KillDriver::new("driver-1".into());
    let mut body = Vec::new();
    write_message(&DeployMessage::from(good), Version::V2, &mut body).expect("encodes");
    assert!(check_message(def, "deploy", Version::V2, &body, Strictness::Exact).is_ok());
    // {"KillDriver": {}}: driverId missing.
    let missing = [
        0x81, 0xaa, b'K', b'i', b'l', b'l', b'D', b'r', b'i', b'v', b'e', b'r', 0x80,
    ];
    let e = check_message(def, "deploy", Version::V2, &missing, Strictness::Lenient)
        .expect_err("missing");
    assert!(e.to_string().contains("driverId"), "{e}");
    // {"KillDriver": {"driverId": 5}}: wrong type.
    let mut wrong = missing[..12].to_vec();
    wrong.extend_from_slice(&[
        0x81, 0xa8, b'd', b'r', b'i', b'v', b'e', b'r', b'I', b'd', 0x05,
    ]);
    assert!(check_message(def, "deploy", Version::V2, &wrong, Strictness::Lenient).is_err());
    // {"KillDriver": {"driverId": "d", "extra": 1}}: unknown field, refused exactly, skipped leniently.
    let mut extra = missing[..12].to_vec();
    extra.extend_from_slice(&[
        0x82, 0xa8, b'd', b'r', b'i', b'v', b'e', b'r', b'I', b'd', 0xa1, b'd',
    ]);
    extra.extend_from_slice(&[0xa5, b'e', b'x', b't', b'r', b'a', 0x01]);
    assert!(check_message(def, "deploy", Version::V2, &extra, Strictness::Exact).is_err());
    assert!(check_message(def, "deploy", Version::V2, &extra, Strictness::Lenient).is_ok());
    let _ = Bytes::new();
}

#[test]
fn task_descriptions_are_laid_out_exactly_as_the_definition_says_and_round_trip() {
    use sparkwire::messages::TaskDescription;
    use sparkwire::wire::check::check_value;
    use sparkwire::wire::{decode_task, encode_task};
    let def = Definition::builtin();
    let ty = TypeExpr::Named("TaskDescription".into());
    let mut rng = common::Rng::new(21);
    let mut checked = 0;
    for _ in 0..400 {
        let data = rng.bytes(500);
        let Ok(task) = TaskDescription::arbitrary(&mut arbitrary::Unstructured::new(&data)) else {
            continue;
        };
        let bytes = encode_task(&task).expect("encodes");
        for v in Version::ALL {
            check_value(def, &ty, v, &bytes, Strictness::Exact).unwrap_or_else(|e| panic!("{e}"));
        }
        let frame = Bytes::from(bytes);
        let back = decode_task(&frame).expect("decodes");
        assert_eq!(back, task);
        if !back.serialized_task.is_empty() {
            let p = back.serialized_task.as_slice().as_ptr() as usize;
            let start = frame.as_ptr() as usize;
            assert!(
                p >= start && p < start + frame.len(),
                "serializedTask was copied, not sliced"
            );
        }
        checked += 1;
    }
    assert!(checked > 300);
}

#[test]
fn handshake_roles_are_the_definition_s_roles_with_the_same_families() {
    use sparkwire::wire::handshake::Role;
    let def = Definition::builtin();
    let names: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
    let mut in_def: Vec<&str> = def.roles.iter().map(|r| r.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    in_def.sort_unstable();
    assert_eq!(sorted, in_def);
    for r in Role::ALL {
        assert_eq!(
            def.role(r.name()).map(|d| d.family.as_str()),
            Some(r.family()),
            "{r}"
        );
    }
}

/// The definition's conversion expressions (`default`, `fromV2`), applied by the generic
/// converter, give exactly `vectors/conversions.json` (a version 2 value, its version 1 value, and
/// what reading that gives), which the Rust conversions wrote: a peer driven by the definition
/// alone converts as the reference does.
#[test]
fn conversion_vectors_follow_the_definition_s_expressions() {
    use sparkwire::definition::convert::convert_message;
    use sparkwire::wire::vectors::ConversionVector;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protocol/vectors/conversions.json"
    );
    let text = std::fs::read_to_string(path).expect("conversions.json");
    let vectors: Vec<ConversionVector> = serde_json::from_str(&text).expect("parses");
    assert!(vectors.len() >= 20);
    let def = Definition::builtin();
    for v in vectors {
        let at = |x: &serde_json::Value| x[&v.message].clone();
        let conv = |x: &serde_json::Value, from, to| {
            convert_message(def, &v.family, &v.message, &at(x), from, to)
                .unwrap_or_else(|e| panic!("{} {}: {e}", v.message, v.case))
        };
        assert_eq!(
            conv(&v.v2, Version::V2, Version::V1),
            at(&v.v1),
            "{} {}",
            v.message,
            v.case
        );
        assert_eq!(
            conv(&v.v1, Version::V1, Version::V2),
            at(&v.v2_from_v1),
            "{} {}",
            v.message,
            v.case
        );
    }
}

#[test]
fn close_envelopes_carry_the_definition_s_close_reason() {
    use sparkwire::wire::check::check_value;
    use sparkwire::wire::{encode_frame, CloseReason, Envelope};
    let def = Definition::builtin();
    let ty = TypeExpr::Named("CloseReason".into());
    let located = CloseReason {
        kind: "InvalidFields".into(),
        message: "bad".into(),
        path: Some("appDescription.command".into()),
        offset: Some(40),
    };
    for reason in [located, CloseReason::new("NotOwner", "not yours")] {
        let env: Envelope<sparkwire::messages::DeployMessage> = Envelope::Close(reason);
        let frame = encode_frame(&env, Version::V2).expect("encodes");
        // [4, reason]: the reason is what follows the 4-byte prefix, the array and the tag.
        assert_eq!(&frame[4..6], &[0x92, 0x04]);
        for v in Version::ALL {
            check_value(def, &ty, v, &frame[6..], Strictness::Exact)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
