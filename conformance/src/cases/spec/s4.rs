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
                "{name} refuses a message name its family does not have \
            (UnknownMessage) and closes the connection"
            ),
            body: bind(s, spec_4_unknown_message),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/not-in-version".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses, on a version 1 connection, a message \
            only version 2 has (NotInVersion) and closes the connection"
            ),
            body: bind(s, spec_4_not_in_version),
            ..Case::default()
        });
        if on_route {
            cs.push(Case {
                id: "spec/4/invalid-fields".into(),
                level: Level::Must,
                targets: vec![Target::Master, Target::Driver],
                requirement: format!(
                    "{name} refuses a message with a field of the wrong type \
                    (SPEC §4, \"refuses ... a value of the wrong type ... (`InvalidFields`)\") and \
                    closes the connection: a message the peer's role may send it, as its kind says \
                    (SPEC §14.1), so that only the field is wrong"
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
    use crate::kit::support::spec4_encoder::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4/encoder/master".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            requirement: format!(
                "{SENTENCE}: RegisteredWorker, RegisteredApplication and the \
                MasterStateResponse (workers, applications, their descriptions) the master writes, \
                in each version it offers, hold exactly the definition's fields of that version, \
                in its order"
            ),
            body: run(master),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/worker".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: format!(
                "{SENTENCE}: what a registered worker writes to its master until \
                its first Heartbeat, and its ExecutorStateChanged for an executor it launched, in \
                each version it offers, hold exactly the definition's fields of that version, in \
                its order"
            ),
            body: run(worker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/driver".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement: format!(
                "{SENTENCE}: the driver's RegisterApplication (its description, \
                command and resource profile), and the SparkAppConfig (its resource profile) it \
                answers an executor with, in each version it offers, hold exactly the definition's \
                fields of that version, in its order"
            ),
            body: run(driver),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4/encoder/executor".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: format!(
                "{SENTENCE}: the executor's LaunchedExecutor and the \
                StatusUpdates of a task it runs (RUNNING, then FINISHED), in each version it \
                offers, hold exactly the definition's fields of that version, in its order"
            ),
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
    use crate::kit::support::spec4_fields::*;
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
            requirement: "a RegisterApplication whose nested TaskResourceRequest gives `amount` \
                twice (with the same value) is refused, the connection closed (InvalidFields where \
                closeReason was agreed, SPEC §8.1)"
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
            requirement: "a RegisterApplication whose nested TaskResourceRequest lists `amount` \
                before `resourceName` (the definition's order reversed) is answered \
                RegisteredApplication"
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
            requirement: "a RegisterApplication whose nested TaskResourceRequest has no `amount` \
                (an f64) is refused, the connection closed (InvalidFields where closeReason was \
                agreed, SPEC §8.1)"
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
