//! `spec/2/…`: SPEC §2 (protocol/SPEC.md).

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::executor::*;
    use sparkwire::messages::Version;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/2/executor-closes-on-garbage".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement:
                "an executor that reads a frame that is not MessagePack closes its connection"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                e.conn
                    .send_raw(&frame(&[0xc1]), "a frame holding 0xc1")
                    .await?;
                e.conn
                    .expect_closed(wait(&ctx), "the connection closed")
                    .await
            }),
            ..Case::default()
        });
    }
}

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::peer::Event;
    use crate::harness::verdict::fail;
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
        // ---- framing after the handshake ----
        cs.push(Case {
            id: "spec/2/size-limit".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} closes a connection whose frame prefix declares 4 GiB - 1, not waiting for \
                    the body"
            ),
            body: bind(s, spec_2_size_limit),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/truncated-frame".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} closes a connection that ends inside a frame, \
            and does not act on the partial frame"
            ),
            body: bind(s, spec_2_truncated_frame),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/trailing-bytes".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a frame with bytes after its one value (TrailingBytes) and closes"
            ),
            body: bind(s, spec_2_trailing_bytes),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/nesting-depth".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote: "SPEC §2, \"A decoder MUST accept 64 levels and refuse 65 (`TooDeep`), even \
                inside a field it skips\""
                .into(),
            requirement: format!(
                "{name} refuses a frame nested 65 deep (envelope counted) in a skipped field, and \
                    closes"
            ),
            body: bind(s, spec_2_nesting_depth),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/nesting-64-accepted".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote: "SPEC §2, \"A decoder MUST accept 64 levels\"".into(),
            requirement: format!(
                "{name} accepts a frame nested 64 deep (envelope counted) in a skipped field and \
                    answers it"
            ),
            body: bind(s, spec_2_nesting_64_accepted),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/nesting-1000".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote: "SPEC §2, `TooDeep`".into(),
            requirement: format!(
                "{name} refuses a frame nested 1,000 deep in a skipped field, and closes the \
                    connection"
            ),
            body: bind(s, spec_2_nesting_1000),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/extension-type".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a frame holding a MessagePack extension type and closes the connection"
            ),
            body: bind(s, spec_2_extension_type),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/reserved-marker".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a frame holding the reserved marker 0xc1 and closes the connection"
            ),
            body: bind(s, spec_2_reserved_marker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/2/count-past-end".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses an array of more elements than the frame holds, allocating \
                    nothing, and closes"
            ),
            body: bind(s, spec_2_count_past_end),
            ..Case::default()
        });
    }

    async fn spec_2_size_limit(ctx: Ctx, s: Endpoint) -> Outcome {
        closes_after(
            ctx,
            s,
            Version::V2,
            u32::MAX.to_be_bytes().to_vec(),
            "a prefix declaring 4294967295 bytes",
        )
        .await
    }

    async fn spec_2_truncated_frame(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
        let f = frame(&mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]));
        c.send_raw(&f[..f.len() - 2], "an ask missing its last 2 bytes")
            .await?;
        c.shutdown_write().await;
        match c.next_or_close(wait(&ctx)).await {
            Some(Event::Closed(_)) => Ok(()),
            Some(Event::Frame(b)) => Err(fail(
                "the connection closed, no answer",
                crate::harness::peer::describe(c.family, &b, c.v()),
            )),
            Some(Event::TooLarge(n)) => {
                Err(fail("the connection closed", format!("a prefix of {n}")))
            }
            None => Err(fail("the connection closed", "still open")),
        }
    }

    async fn spec_2_trailing_bytes(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut body = mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]);
        body.push(0xc0);
        closes_after(
            ctx,
            s,
            Version::V2,
            frame(&body),
            "an ask with a trailing nil",
        )
        .await
    }

    async fn spec_2_nesting_depth(ctx: Ctx, s: Endpoint) -> Outcome {
        closes_after(
            ctx,
            s.clone(),
            Version::V2,
            frame(&nested_probe(&s, 65)),
            "the probe ask, 65 levels deep in an unknown field",
        )
        .await
    }

    async fn spec_2_nesting_64_accepted(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
        c.send_frame(&nested_probe(&s, 64)).await?;
        expect_reply(
            &ctx,
            &mut c,
            5,
            "a reply to the probe ask (id 5), 64 levels deep",
        )
        .await
    }

    async fn spec_2_nesting_1000(ctx: Ctx, s: Endpoint) -> Outcome {
        closes_after(
            ctx,
            s.clone(),
            Version::V2,
            frame(&nested_probe(&s, 1000)),
            "the probe ask, 1000 levels deep in an unknown field",
        )
        .await
    }

    async fn spec_2_extension_type(ctx: Ctx, s: Endpoint) -> Outcome {
        let body = mp::arr(&[
            mp::u(1),
            mp::u(5),
            mp::map(&[(
                s.messages().probe.0,
                mp::map(&[("x", vec![0xd4, 0x01, 0x00])]),
            )]),
        ]);
        closes_after(ctx, s, Version::V2, frame(&body), "an ask holding fixext 1").await
    }

    async fn spec_2_reserved_marker(ctx: Ctx, s: Endpoint) -> Outcome {
        closes_after(ctx, s, Version::V2, frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]").await
    }

    async fn spec_2_count_past_end(ctx: Ctx, s: Endpoint) -> Outcome {
        closes_after(
            ctx,
            s,
            Version::V2,
            frame(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]),
            "an array declaring 4294967295 elements in 6 bytes",
        )
        .await
    }
}
