//! `handshake/10.1/…`: protocol/handshake.md §10.1.

/// The cases about admin.
pub mod admin {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::own_server::served;
    use crate::kit::own_server::OwnServer;
    use crate::kit::own_server::Settings;
    use crate::kit::support::admin::*;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::encode_hello;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::Hello;
    use sparkwire::wire::handshake::RefusalReason;
    use sparkwire::wire::handshake::Role;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "handshake/10.1/admin-proof-ignored".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "handshake.md §10.1, \"An admin proof sent to a server without an admin secret \
                is ignored (the peer is not an admin)\""
                .into(),
            requirement: "a server holding only a shared secret accepts a UI whose proof frame \
                carries an admin proof, and serves it"
                .into(),
            body: run(admin_proof_ignored),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/10.1/wrong-admin-proof-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "handshake.md §10.1, \"a wrong admin proof is refused with `authFailed`\" (and \
                step 4, \"if either does not verify it refuses with `authFailed`\")"
                .into(),
            requirement:
                "a server holding an admin secret refuses a UI whose admin proof was made \
                with another admin secret with authFailed"
                    .into(),
            body: run(wrong_admin_proof_refused),
            ..Case::default()
        });
    }

    async fn admin_proof_ignored(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(
            &ctx,
            Settings {
                secret: true,
                ..Settings::default()
            },
            &["secret_file"],
        )
        .await?;
        let admin = another_admin_secret()?;
        let (mut ui, _) = s
            .open(&ctx, Role::Ui, "ui-with-admin-proof", Some(&admin))
            .await?;
        served(&ctx, &mut ui, 1).await
    }

    async fn wrong_admin_proof_refused(ctx: Ctx) -> Outcome {
        let s = admin_server(&ctx).await?;
        let admin = another_admin_secret()?;
        let mut c = Conn::connect(s.addr, "ui-wrong-admin", Role::Ui, &ctx.log).await?;
        let hello =
            Hello::new(&[Version::V2], Role::Ui, "").with_auth(crate::harness::peer::nonce()?);
        let mut body = Vec::new();
        encode_hello(&hello, &mut body);
        c.send_frame(&body).await?;
        let want = "a refusal authFailed of a wrong admin proof";
        match c
            .read_answer_as(&body, s.secret.as_ref(), Some(&admin), wait(&ctx))
            .await?
        {
            Answer::Refused(r) if r.reason == RefusalReason::AuthFailed => Ok(()),
            other => Err(fail(want, format!("{other:?}"))),
        }
    }
}

/// The cases about auth.
pub mod auth {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Sharing;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::auth::*;
    use crate::kit::client::Start;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::auth::*;
    use sparkwire::messages::DeployMessage as D;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::encode_hello;
    use sparkwire::wire::handshake::frame_bytes;
    use sparkwire::wire::handshake::RefusalReason;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::handshake::NONCE_LEN;
    use std::time::Duration;

    /// The cases of this section for `s`, an endpoint holding the shared secret.
    pub fn for_secured(cs: &mut Vec<Case>, s: Endpoint) {
        let (name, what) = (s.name, s.change().what);
        cs.push(Case {
            id: "handshake/10.1/challenge".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} with a secret challenges an auth hello: hmac-sha256, a 32-byte nonce, a \
                    valid proof"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let c = challenged(&ctx, g.at.addr, g.role, "challenge", &k).await?;
                let nonce = crate::harness::mp::challenge_nonce(&c.challenge);
                check(
                    nonce.as_ref().is_some_and(|n| n.len() == NONCE_LEN)
                        && nonce.as_deref() != c.hello.auth.as_ref().map(|n| &n[..]),
                    "a nonce of 32 bytes, not the client's",
                    format!("{nonce:?}"),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/10.1/fresh-nonce".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} draws a new nonce for every handshake: two challenges \
                never carry the same nonce"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let a = challenged(&ctx, g.at.addr, g.role, "nonce", &k).await?;
                let b = challenged(&ctx, g.at.addr, g.role, "nonce", &k).await?;
                let na = crate::harness::mp::challenge_nonce(&a.challenge);
                let nb = crate::harness::mp::challenge_nonce(&b.challenge);
                check(
                    na.is_some() && na != nb,
                    "two different nonces",
                    format!("{na:?} and {nb:?}"),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/10.1/authenticated".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} with a secret accepts a peer that proves it and takes the {what} it then \
                    sends"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let mut c = Conn::open_authenticated(
                    g.at.addr,
                    "suite",
                    g.role,
                    "authenticated",
                    &[Version::V2],
                    &k,
                    &ctx.log,
                    wait(&ctx),
                )
                .await?;
                c.send_frame(&g.change).await?;
                let deadline = tokio::time::Instant::now() + wait(&ctx);
                loop {
                    if (g.seen)().await? {
                        return Ok(());
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(fail(
                            format!(
                                "the {} of an authenticated peer \
                            taken",
                                what
                            ),
                            "no change in the endpoint's state",
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/10.1/wrong-proof-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} refuses a proof made with another secret (authFailed), takes no later \
                    {what}"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let mut c = challenged(&ctx, g.at.addr, g.role, "wrong-proof", &k).await?;
                let mut bytes = frame_bytes(&c.proof(&wrong_secret(&k)?));
                bytes.extend_from_slice(&frame_bytes(&g.change));
                c.conn
                    .send_raw(
                        &bytes,
                        &format!("a proof made with another secret, then {}", what),
                    )
                    .await?;
                expect_refused(&ctx, &mut c.conn, &[RefusalReason::AuthFailed]).await?;
                unchanged(&g, what).await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/10.1/replayed-proof-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} refuses a proof from another exchange (authFailed), takes no {what} after"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let first = challenged(&ctx, g.at.addr, g.role, "replay", &k).await?;
                let mut second = challenged(&ctx, g.at.addr, g.role, "replay", &k).await?;
                let mut bytes = frame_bytes(&first.proof(&k));
                bytes.extend_from_slice(&frame_bytes(&g.change));
                second
                    .conn
                    .send_raw(
                        &bytes,
                        &format!("the first exchange's proof, then {}", what),
                    )
                    .await?;
                expect_refused(&ctx, &mut second.conn, &[RefusalReason::AuthFailed]).await?;
                unchanged(&g, what).await
            }),
            ..Case::default()
        });
    }

    /// The cases of this section for a client the suite starts (`start`), named `name`, which
    /// connects to a server of `server_role`.
    pub fn for_starter(cs: &mut Vec<Case>, start: Start, name: &'static str, _server_role: Role) {
        let st = start.clone();
        cs.push(Case {
            id: "handshake/10.1/client-hello".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: format!(
                "{name} holding a shared secret asks to authenticate in its \
                hello: auth hmac-sha256 and a 32-byte nonce"
            ),
            body: run(move |ctx: Ctx| {
                let st = st.clone();
                async move {
                    secret(&ctx)?;
                    let (_run, mut c) = st(ctx.clone()).await?;
                    authenticating_hello(&ctx, &mut c).await.map(|_| ())
                }
            }),
            ..Case::default()
        });
        let _st = start.clone();
        let st = start.clone();
        cs.push(Case {
            id: "handshake/10.1/client-proof".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: format!(
                "{name} answers the challenge with a client proof that verifies, then sends an \
                    envelope"
            ),
            body: run(move |ctx: Ctx| {
                let st = st.clone();
                async move {
                    let k = secret(&ctx)?;
                    let (_run, mut c) = st(ctx.clone()).await?;
                    let (hello, _) = authenticating_hello(&ctx, &mut c).await?;
                    let v = c
                        .accept_hello_with(
                            &hello,
                            &[Version::V1, Version::V2],
                            "suite",
                            Some(&k),
                            wait(&ctx),
                        )
                        .await?;
                    let body = c
                        .frame_body(wait(&ctx), "the endpoint's first envelope")
                        .await?;
                    let ok = if c.family == "coarse" {
                        sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(
                            &body, v,
                        )
                        .is_ok()
                    } else {
                        sparkwire::wire::decode_envelope::<D>(&body, v).is_ok()
                    };
                    check(
                        ok,
                        format!(
                            "an envelope decoding at version \
                        {}",
                            v.number()
                        ),
                        crate::harness::peer::describe(c.family, &body, v),
                    )
                }
            }),
            ..Case::default()
        });
        let _st = start.clone();
        let _st = start.clone();
        let st = start.clone();
        cs.push(Case {
            id: "handshake/10.1/wrong-server-proof".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: format!(
                "{name} closes, sending nothing more, when the server's proof is made with another \
                    secret"
            ),
            body: run(move |ctx: Ctx| {
                client_closes(
                    ctx,
                    st.clone(),
                    |k, _, frame| challenge_body(&wrong_secret(k)?, frame),
                    "a server proof \
                    made with another secret",
                )
            }),
            ..Case::default()
        });
        let _st = start.clone();
        let _st = start.clone();
        let _st = start.clone();
        let st = start.clone();
        cs.push(Case {
            id: "handshake/10.1/replayed-server-proof".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: format!(
                "{name} closes, sending nothing more, when the server's proof is for another \
                    exchange"
            ),
            body: run(move |ctx: Ctx| {
                client_closes(
                    ctx,
                    st.clone(),
                    |k, hello, _| {
                        let nonce = crate::harness::peer::nonce()?;
                        let mut other = Vec::new();
                        encode_hello(&hello.clone().with_auth(nonce), &mut other);
                        challenge_body(k, &frame_bytes(&other))
                    },
                    "a server proof for another exchange",
                )
            }),
            ..Case::default()
        });
    }
}
