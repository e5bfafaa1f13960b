//! `spec/11.3/…`: SPEC §11.3 (protocol/SPEC.md).

/// The cases about vectors.
pub mod vectors {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::support::decoding::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/11.3/map-keys-out-of-order".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key \
                given twice or out of order\""
                .into(),
            requirement: "a RegisterApplication whose command environment has its keys out of \
                order is refused, the connection closed"
                .into(),
            body: run(map_keys_out_of_order),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/11.3/map-key-twice".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key \
                given twice\""
                .into(),
            requirement: "a RegisterApplication whose command environment gives a key twice is \
                refused, the connection closed"
                .into(),
            body: run(map_key_twice),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/11.3/map-keys-ascending-taken".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §11.3, \"A `map<K,V>` is written with its keys distinct and in ascending \
                order ... strings compare by their UTF-8 bytes (so `\\\"GPU\\\"` comes before \
                `\\\"fpga\\\"`)\""
                .into(),
            requirement: "a RegisterApplication whose environment keys ascend by their bytes \
                (uppercase first) is answered RegisteredApplication"
                .into(),
            body: run(map_keys_ascending),
            ..Case::default()
        });
    }

    async fn map_keys_out_of_order(ctx: Ctx) -> Outcome {
        let mut c = send_registration(
            &ctx,
            pair_map(b'B', b'2', b'A', b'1'),
            "a RegisterApplication whose environment is {\"B\": \"2\", \"A\": \"1\"}",
        )
        .await?;
        c.expect_closed_silently(wait(&ctx), "the connection closed, nothing registered")
            .await
    }

    async fn map_key_twice(ctx: Ctx) -> Outcome {
        let mut c = send_registration(
            &ctx,
            pair_map(b'A', b'1', b'A', b'2'),
            "a RegisterApplication whose environment is {\"A\": \"1\", \"A\": \"2\"}",
        )
        .await?;
        c.expect_closed_silently(wait(&ctx), "the connection closed, nothing registered")
            .await
    }

    async fn map_keys_ascending(ctx: Ctx) -> Outcome {
        // "G" (0x47) before "f" (0x66): ascending by bytes, uppercase first.
        let mut c = send_registration(
            &ctx,
            pair_map(b'G', b'1', b'f', b'2'),
            "a RegisterApplication whose environment is {\"G\": \"1\", \"f\": \"2\"}",
        )
        .await?;
        c.expect::<D, ()>(wait(&ctx), "RegisteredApplication", |e| {
            matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
        })
        .await
    }
}

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::replay::refused_with;
    use crate::kit::replay::stays_open;
    use crate::kit::support::decoding_driver::*;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/11.3/map-inside-map-out-of-order".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key \
                given twice or out of order ... at any depth (a map inside a map included)\""
                .into(),
            requirement: "a StatusUpdate whose `resources` holds {\"gpu\": {\"b\": 2, \"a\": 1}} \
                is refused, the connection closed"
                .into(),
            body: run(map_inside_map_out_of_order),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/11.3/map-inside-map-ascending-taken".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote: "SPEC §11.3, \"A `map<K,V>` is written with its keys distinct and in ascending \
                order\", at any depth: the same StatusUpdate with {\"gpu\""
                .into(),
            requirement: "{\"a\": 1, \"b\": 2}} is taken, the executor's connection kept open"
                .into(),
            body: run(map_inside_map_ascending),
            ..Case::default()
        });
    }

    async fn map_inside_map_out_of_order(ctx: Ctx) -> Outcome {
        let (_d, mut e, bytes) = status_with_resources(&ctx, INNER_SWAPPED).await?;
        e.conn
            .send_raw(
                &bytes,
                "a StatusUpdate whose resources are {\"gpu\": {\"b\": 2, \"a\": 1}}",
            )
            .await?;
        refused_with(&ctx, &mut e.conn, "InvalidFields", false).await
    }

    async fn map_inside_map_ascending(ctx: Ctx) -> Outcome {
        let (_d, mut e, bytes) = status_with_resources(&ctx, INNER).await?;
        e.conn
            .send_raw(
                &bytes,
                "a StatusUpdate whose resources are {\"gpu\": {\"a\": 1, \"b\": 2}}",
            )
            .await?;
        stays_open(&ctx, &mut e.conn, false).await
    }
}

/// The cases about fields.
pub mod fields {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp::map;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::support::field_maps::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/11.3/nested-map-keys-out-of-order".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key \
                given twice or out of order ... at any depth\", and §4.1, \"`map<K,V>` | map | \
                keys distinct and ascending\""
                .into(),
            requirement: "a RegisterApplication whose `taskResources` keys are `gpu`, `cpus` is \
                refused (InvalidFields)"
                .into(),
            body: run(nested_map_keys_out_of_order),
            ..Case::default()
        });
    }

    async fn nested_map_keys_out_of_order(ctx: Ctx) -> Outcome {
        let canonical = map(&[("cpus", canonical_request())]);
        let unordered = map(&[
            ("gpu", request_with_amount("gpu", f64_bytes(1.0))),
            ("cpus", canonical_request()),
        ]);
        refused(
            &ctx,
            &canonical,
            &unordered,
            "a RegisterApplication whose taskResources is {\"gpu\": …, \"cpus\": …}",
        )
        .await
    }
}
