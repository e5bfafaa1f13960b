//! `handshake/10.2/…`: protocol/handshake.md §10.2.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Sharing;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Level;
use crate::kit::client::Start;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::auth::*;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::encode_answer;
use sparkwire::wire::handshake::Accepted;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;
use std::time::Duration;

/// The cases of this section for `s`, an endpoint holding the shared secret.
pub fn for_secured(cs: &mut Vec<Case>, s: Endpoint) {
    let (name, _what) = (s.name, s.change().what);
    cs.push(Case {
        id: "handshake/10.2/no-auth-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} with a secret refuses a hello without auth with authRequired and closes"
        ),
        body: secured(&s, move |ctx: Ctx, _k, g| async move {
            let mut c = Conn::connect(g.at.addr, "suite", g.role, &ctx.log).await?;
            c.send_hello(&Hello::new(&[Version::V2], g.role, "no-auth"))
                .await?;
            expect_refused(&ctx, &mut c, &[RefusalReason::AuthRequired]).await
        }),
        ..Case::default()
    });
}

/// The cases of this section for a client the suite starts (`start`), named `name`, which
/// connects to a server of `server_role`.
pub fn for_starter(cs: &mut Vec<Case>, start: Start, name: &'static str, server_role: Role) {
    cs.push(Case {
        id: "handshake/10.2/unauthenticated-server".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!(
            "{name} with a secret closes at once, sending nothing, when a server accepts it \
                without a challenge"
        ),
        body: run(move |ctx: Ctx| {
            client_closes(
                ctx,
                start.clone(),
                move |_, hello, _| {
                    let version = if hello.versions.contains(&2) {
                        Version::V2
                    } else {
                        Version::V1
                    };
                    let mut out = Vec::new();
                    encode_answer(
                        &Answer::Accepted(Accepted {
                            version,
                            versions: vec![1, 2],
                            role: server_role,
                            id: "suite".into(),
                            features: Vec::new(),
                        }),
                        &mut out,
                    );
                    Ok(out)
                },
                "an acceptance without a challenge",
            )
        }),
        ..Case::default()
    });
}
