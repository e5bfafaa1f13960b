//! `spec/4.1/…`: SPEC §4.1 (protocol/SPEC.md).

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::messages::Version;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "spec/4.1/fields-as-array".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a message whose fields are an array, not a map (InvalidFields), \
                    and closes"
            ),
            body: bind(s, spec_4_1_fields_as_array),
            ..Case::default()
        });
    }

    async fn spec_4_1_fields_as_array(ctx: Ctx, s: Endpoint) -> Outcome {
        let fields: Vec<Vec<u8>> = (s.messages().probe.1)()
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let m = mp::map(&[(s.messages().probe.0, mp::arr(&fields))]);
        closes_after(
            ctx,
            s,
            Version::V2,
            frame(&mp::arr(&[mp::u(1), mp::u(5), m])),
            "an ask with its fields as an array",
        )
        .await
    }
}

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp::arr;
    use crate::harness::mp::bin;
    use crate::harness::mp::s;
    use crate::harness::peer::frame;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::executor::app_config;
    use crate::kit::executor::launched;
    use crate::kit::executor::registered;
    use crate::kit::executor::start;
    use crate::kit::spawned;
    use crate::kit::support::executor_layouts::*;
    use sparkwire::messages::coarse::LaunchTask;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::encode_envelope;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4.1/tuple-of-three-refused".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote:
                "SPEC §4.1, \"`tuple<A,B>` | array of exactly 2 elements | `sparkProperties` is \
                a list of `[key, value]` pairs\""
                    .into(),
            requirement:
                "a SparkAppConfig with a 3-element property pair is refused: the executor \
                closes, sends no RegisterExecutor"
                    .into(),
            body: run(tuple_of_three_refused),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4.1/bytes-as-string-refused".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §4.1, \"`bytes` | bin | never an array of integers\"".into(),
            requirement: "a LaunchTask whose `data` is the string \"abc\", not a bin, is refused: \
                the executor closes"
                .into(),
            body: run(bytes_as_string_refused),
            ..Case::default()
        });
    }

    async fn tuple_of_three_refused(ctx: Ctx) -> Outcome {
        let (_run, mut conn) = start(ctx.clone()).await?;
        let hello = conn.read_hello(spawned::startup(&ctx)).await?;
        spawned::accept(
            &ctx,
            &mut conn,
            &hello,
            &[Version::V1, Version::V2],
            "driver",
        )
        .await?;
        let id = conn
            .expect::<C, u64>(
                wait(&ctx),
                "the executor's RetrieveSparkAppConfig",
                |e| match e {
                    Envelope::Ask {
                        id,
                        message: C::RetrieveSparkAppConfig(_),
                    } => Some(*id),
                    _ => None,
                },
            )
            .await?;
        let mut body = Vec::new();
        encode_envelope(
            &Envelope::<C>::Reply {
                id,
                reply: Reply::Message(C::SparkAppConfig(app_config(128))),
            },
            conn.v(),
            &mut body,
        )
        .map_err(|e| fail("a SparkAppConfig encoded", e.to_string()))?;
        let body = splice(
            body,
            &arr(&[s("spark.task.cpus"), s("1")]),
            &arr(&[s("spark.task.cpus"), s("1"), s("2")]),
            "the pair [\"spark.task.cpus\", \"1\"]",
        )?;
        conn.send_raw(
            &frame(&body),
            "a SparkAppConfig whose pair [\"spark.task.cpus\", \"1\", \"2\"] has 3 elements",
        )
        .await?;
        closed_without_registering(&ctx, &mut conn).await
    }

    async fn bytes_as_string_refused(ctx: Ctx) -> Outcome {
        let mut e = registered(&ctx, &[Version::V2], 128).await?;
        launched(&ctx, &mut e).await?;
        let mut body = Vec::new();
        encode_envelope(
            &Envelope::Send(C::LaunchTask(LaunchTask::new(b"abc".to_vec().into()))),
            e.conn.v(),
            &mut body,
        )
        .map_err(|er| fail("a LaunchTask encoded", er.to_string()))?;
        let body = splice(body, &bin(b"abc"), &s("abc"), "the data bin `abc`")?;
        e.conn
            .send_raw(
                &frame(&body),
                "a LaunchTask whose data is the string \"abc\"",
            )
            .await?;
        e.conn
            .expect_closed(
                wait(&ctx),
                "the connection closed (a bytes field written as a string)",
            )
            .await
    }
}

/// The cases about fields.
pub mod fields {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp::arr;
    use crate::harness::mp::s;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::support::field_maps::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4.1/f64-nan-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4.1, \"`f64` | float 64 | finite: a decoder refuses NaN and the \
                infinities (`InvalidFields`)\""
                .into(),
            requirement:
                "a RegisterApplication whose TaskResourceRequest amount is NaN is refused \
                and closed"
                    .into(),
            body: run(f64_nan_refused),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4.1/f64-infinity-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4.1, \"`f64` | float 64 | finite: a decoder refuses NaN and the \
                infinities (`InvalidFields`)\""
                .into(),
            requirement: "a RegisterApplication whose task request amount is +infinity is refused \
                and closed"
                .into(),
            body: run(f64_infinity_refused),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4.1/f64-as-float32-taken".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4.1, \"`f64` | float 64 | ... it also accepts float 32\"".into(),
            requirement:
                "a RegisterApplication whose task request amount is written as a float 32 \
                (1.0) is answered RegisteredApplication"
                    .into(),
            body: run(f64_as_float32_taken),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/4.1/nested-struct-as-array".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §4.1, \"a struct name | map of its fields | ... never an array of the \
                values ...: a decoder refuses one (`InvalidFields`)\""
                .into(),
            requirement:
                "a RegisterApplication whose TaskResourceRequest is the array `[\"cpus\", \
                1.0]` is refused and closed"
                    .into(),
            body: run(nested_struct_as_array),
            ..Case::default()
        });
    }

    async fn f64_nan_refused(ctx: Ctx) -> Outcome {
        refused(
            &ctx,
            &canonical_request(),
            &request_with_amount("cpus", f64_bytes(f64::NAN)),
            "a RegisterApplication whose task request amount is NaN",
        )
        .await
    }

    async fn f64_infinity_refused(ctx: Ctx) -> Outcome {
        refused(
            &ctx,
            &canonical_request(),
            &request_with_amount("cpus", f64_bytes(f64::INFINITY)),
            "a RegisterApplication whose task request amount is +infinity",
        )
        .await
    }

    async fn f64_as_float32_taken(ctx: Ctx) -> Outcome {
        let mut f32_one = vec![0xca];
        f32_one.extend_from_slice(&1.0f32.to_be_bytes());
        taken(
            &ctx,
            &canonical_request(),
            &request_with_amount("cpus", f32_one),
            "a RegisterApplication whose task request amount is the float 32 1.0",
        )
        .await
    }

    async fn nested_struct_as_array(ctx: Ctx) -> Outcome {
        refused(
            &ctx,
            &canonical_request(),
            &arr(&[s("cpus"), f64_bytes(1.0)]),
            "a RegisterApplication whose task request is the array [\"cpus\", 1.0]",
        )
        .await
    }
}

/// The cases about points.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::offering_close_reason;
    use crate::kit::common::reaction_wait;
    use crate::kit::master::addr;
    use crate::kit::server::close_envelope;
    use crate::kit::support::open_points::*;
    use sparkwire::wire::handshake::Role;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/4.1/bin-for-str".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §4.1, `string`: \"Never `bin`, even holding valid UTF-8: a decoder \
                refuses a `bin` where a string value, a string map key or a field name is due \
                (`InvalidFields`)\""
                .into(),
            requirement: "the master refuses a string, a map key, a field name sent as bin \
                (decoder.json), each closed"
                .into(),
            body: run(bin_for_str),
            ..Case::default()
        });
    }

    async fn bin_for_str(ctx: Ctx) -> Outcome {
        let all = located();
        for start in BIN_VECTORS {
            let v = all
                .iter()
                .find(|v| v.name.starts_with(start))
                .ok_or_else(|| fail(format!("the decoder.json vector \"{start}…\""), "none"))?;
            let version = spoken(&ctx, &v.versions)?;
            crate::harness::peer::require_version(&ctx.log, version)?;
            let (mut c, taken) =
                offering_close_reason(&ctx, addr(&ctx)?, "ui", &[version], Role::Ui, "suite")
                    .await?;
            c.send_raw(&v.frame, &format!("the decoder.json vector \"{}\"", v.name))
                .await?;
            if taken {
                let want = format!(
                    "\"{}\" refused: a close envelope of kind InvalidFields, then the close",
                    v.name
                );
                let r = close_envelope(&ctx, &mut c, &want).await?;
                check(
                    r.kind == "InvalidFields",
                    want,
                    format!("a close envelope of kind {}", r.kind),
                )?;
            } else {
                c.expect_closed(
                    reaction_wait(&ctx),
                    &format!("\"{}\" refused: the connection closed", v.name),
                )
                .await?;
            }
        }
        Ok(())
    }
}
