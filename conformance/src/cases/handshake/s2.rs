//! `handshake/2/…`: protocol/handshake.md §2.

/// The cases about client.
pub mod client {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::peer::Event;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::client::*;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::Refusal;
    use sparkwire::wire::handshake::RefusalReason;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/2/waits-for-answer".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} sends nothing after its hello until it has read the answer"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let (_run, mut c) = s.start(ctx.clone()).await?;
                hello(&ctx, &mut c).await?;
                match c.next(ctx.settings.quiet).await {
                    None => Ok(()),
                    Some(Event::Closed(how)) => Err(fail(
                        "the endpoint waiting for the answer",
                        format!("the connection closed ({how})"),
                    )),
                    Some(other) => Err(fail("nothing before the answer", format!("{other:?}"))),
                }
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/2/refused".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!("{name} closes the connection on reading a refusal"),
            body: bind(&s, move |ctx: Ctx, s| async move {
                closes(ctx, s, |_| {
                    let mut b = Vec::new();
                    sparkwire::wire::handshake::encode_answer(
                        &Answer::Refused(Refusal {
                            reason: RefusalReason::RoleNotAccepted,
                            message: "refused by the conformance suite".into(),
                            versions: vec![1, 2],
                        }),
                        &mut b,
                    );
                    frame(&b)
                })
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
    use sparkwire::wire::handshake::Answer;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/2/truncated-hello".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} does not accept a hello cut short by the end of the stream"
            ),
            body: bind(s, handshake_2_truncated_hello),
            ..Case::default()
        });
    }

    async fn handshake_2_truncated_hello(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
        let bytes = frame(&mp::map(&hello(&ctx, &s, &[1, 2])?));
        c.send_raw(
            &bytes[..bytes.len() - 3],
            "a hello missing its last 3 bytes",
        )
        .await?;
        c.shutdown_write().await;
        match c.next_or_close(wait(&ctx)).await {
            Some(Event::Closed(_)) => Ok(()),
            Some(Event::Frame(b)) => match sparkwire::wire::handshake::decode_answer(&b) {
                Ok(Answer::Accepted(_)) => Err(fail("no acceptance", "accepted")),
                _ => c.expect_closed(wait(&ctx), "the connection closed").await,
            },
            Some(Event::TooLarge(n)) => Err(fail(
                "the connection closed",
                format!("a prefix of {n} bytes"),
            )),
            None => Err(fail("the connection closed", "still open")),
        }
    }
}
