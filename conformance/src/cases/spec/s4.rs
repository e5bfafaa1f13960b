//! `spec/4/…`: SPEC §4 (protocol/SPEC.md).

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::messages::Version;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        // Only where the message is on its route from `good_role` (a worker's UI takes no message
        // with fields: its decoder is checked on its master's connection, spec/11/live/…).
        let on_route = sparkwire::definition::Definition::builtin()
            .messages
            .iter()
            .any(|d| {
                d.name == s.messages().bad_fields.0
                    && d.from.iter().any(|r| r == s.suite_role.name())
                    && d.to.iter().any(|r| r == s.role.name())
            });
        cs.push(Case {
            id: "spec/4/unknown-message".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a message name its family does not have (UnknownMessage) and closes"
            ),
            body: bind(s, spec_4_unknown_message),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/not-in-version".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses at version 1 a message only version 2 has (NotInVersion) and closes"
            ),
            body: bind(s, spec_4_not_in_version),
            ..Case::default()
        });
        if on_route {
            cs.push(Case {
                id: "spec/4/invalid-fields".into(),
                level: Level::Must,
                targets: vec![Target::Master, Target::Driver],
                quote: "SPEC §4, \"refuses ... a value of the wrong type ... (`InvalidFields`)\""
                    .into(),
                requirement: format!(
                    "{name} refuses a message on its route with a field of the wrong type, and \
                        closes"
                ),
                body: bind(s, spec_4_invalid_fields),
                ..Case::default()
            });
        }
        cs.push(Case {
            id: "spec/4/unknown-field-skipped".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} skips a field it does not know (a later revision's) and answers the ask"
            ),
            body: bind(s, spec_4_unknown_field_skipped),
            ..Case::default()
        });
    }

    async fn spec_4_unknown_message(ctx: Ctx, s: Endpoint) -> Outcome {
        let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
        closes_after(
            ctx,
            s,
            Version::V2,
            frame(&mp::arr(&[mp::u(0), m])),
            "a send of RegisterBlockManager",
        )
        .await
    }

    async fn spec_4_not_in_version(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = match session(&ctx, &s, &at, Version::V1, "suite").await {
            Ok(c) => c,
            Err(_) => {
                return Err(Failure::Skipped(
                    "the endpoint does not speak version 1".into(),
                ))
            }
        };
        let m = mp::map(&[(s.messages().v2_only.0, mp::map(&(s.messages().v2_only.1)()))]);
        c.send_raw(
            &frame(&mp::arr(&[mp::u(1), mp::u(5), m])),
            "an ask of a version 2 message",
        )
        .await?;
        c.expect_closed(wait(&ctx), "the connection closed").await
    }

    async fn spec_4_unknown_field_skipped(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
        c.send_frame(&mp::arr(&[mp::u(1), mp::u(9), s.probe_body(true)]))
            .await?;
        expect_reply(&ctx, &mut c, 9, "a reply to the ask (id 9)").await
    }

    async fn spec_4_invalid_fields(ctx: Ctx, s: Endpoint) -> Outcome {
        let m = mp::map(&[(
            s.messages().bad_fields.0,
            mp::map(&(s.messages().bad_fields.1)()),
        )]);
        closes_after(
            ctx,
            s.clone(),
            Version::V2,
            frame(&as_its_kind(s.messages().bad_fields.0, m)),
            "a message with a mistyped field",
        )
        .await
    }
}

/// The cases about encoder.
pub mod encoder {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::verdict::Level;
    use crate::kit::support::field_order::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4/encoder/master".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: SENTENCE.into(),
            requirement:
                "RegisteredWorker, RegisteredApplication and MasterStateResponse hold each \
                version's fields in order"
                    .into(),
            body: run(master),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/worker".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote: SENTENCE.into(),
            requirement:
                "the worker's frames to its first Heartbeat, and its ExecutorStateChanged, hold \
                each version's fields in order"
                    .into(),
            body: run(worker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/driver".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote: SENTENCE.into(),
            requirement:
                "the driver's RegisterApplication and SparkAppConfig hold each version's fields \
                in order"
                    .into(),
            body: run(driver),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/executor".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: SENTENCE.into(),
            requirement:
                "the executor's LaunchedExecutor and StatusUpdates hold each version's fields \
                in order"
                    .into(),
            body: run(executor),
            ..Case::default()
        });
    }
}

/// The cases about fields.
pub mod fields {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp::s;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::support::field_maps::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4/field-given-twice".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4, \"A **decoder** ... refuses ... a field given twice ... \
                (`InvalidFields`)\", and §11.3, \"A struct's field map is not a `map<K,V>` ... a \
                field given twice is refused\""
                .into(),
            requirement: "a RegisterApplication whose TaskResourceRequest gives `amount` twice is \
                refused and closed"
                .into(),
            body: run(field_given_twice),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/fields-any-order".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4, \"A **decoder** accepts the fields in any order\", and §11.3, \"its \
                fields come in any order (§4)\""
                .into(),
            requirement: "a RegisterApplication whose TaskResourceRequest has its fields in \
                reverse order is answered"
                .into(),
            body: run(fields_any_order),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/missing-required-field".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4, \"A **decoder** ... refuses a missing field of any other type [than \
                `option<…>`] ... (`InvalidFields`)\""
                .into(),
            requirement: "a RegisterApplication whose TaskResourceRequest has no `amount` is \
                refused and closed"
                .into(),
            body: run(missing_required_field),
            ..Case::default()
        });
    }

    async fn field_given_twice(ctx: Ctx) -> Outcome {
        refused(
            &ctx,
            &canonical_request(),
            &task_request(&[
                ("resourceName", s("cpus")),
                ("amount", f64_bytes(1.0)),
                ("amount", f64_bytes(1.0)),
            ]),
            "a RegisterApplication whose task request gives amount twice",
        )
        .await
    }

    async fn fields_any_order(ctx: Ctx) -> Outcome {
        taken(
            &ctx,
            &canonical_request(),
            &task_request(&[("amount", f64_bytes(1.0)), ("resourceName", s("cpus"))]),
            "a RegisterApplication whose task request lists amount before resourceName",
        )
        .await
    }

    async fn missing_required_field(ctx: Ctx) -> Outcome {
        refused(
            &ctx,
            &canonical_request(),
            &task_request(&[("resourceName", s("cpus"))]),
            "a RegisterApplication whose task request has no amount",
        )
        .await
    }
}
