//! `handshake/11/…`: protocol/handshake.md §11.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::own_server::OwnServer;
use crate::kit::own_server::Settings;
use sparkwire::connection::Connection;
use sparkwire::connection::ConnectionConfig;
use sparkwire::connection::Security;
use sparkwire::connection::TlsSettings;
use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::encode_hello;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;
use std::time::Duration;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "handshake/11/tls".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        quote: "handshake.md §11, \"A connection MAY run over TLS (1.2 or 1.3): the client starts \
            TLS on the TCP stream before its hello, and the whole handshake and every envelope \
            then travel inside it ... A side configured for TLS speaks nothing else\""
            .into(),
        requirement: "a server with a certificate serves a TLS client's handshake and asks, and \
            accepts no plain hello"
            .into(),
        body: run(tls),
        ..Case::default()
    });
}

async fn tls(ctx: Ctx) -> Outcome {
    let s = OwnServer::start(
        &ctx,
        Settings {
            tls: true,
            ..Settings::default()
        },
        &["tls_cert", "tls_key"],
    )
    .await?;
    let ca = s.ca_pem.clone().unwrap_or_default();
    let mut settings = TlsSettings::from_pem(None, None, Some(ca.as_bytes()))
        .map_err(|e| fail("TLS settings trusting the suite's authority", e.to_string()))?;
    settings.server_name = Some("127.0.0.1".into());
    let security = Security {
        tls: Some(settings),
        ..Security::default()
    };
    let want = "a TLS session, then the handshake inside it accepted";
    let tcp = tokio::time::timeout(wait(&ctx), tokio::net::TcpStream::connect(s.addr))
        .await
        .map_err(|_| fail(want, "connect timed out"))?
        .map_err(|e| fail(want, e.to_string()))?;
    ctx.log.push(format!(
        "[tls-ui] connected to {}; TLS, then the handshake as a ui (sparkwire::connection)",
        s.addr
    ));
    let config = ConnectionConfig::<D>::default()
        .with_versions(&[Version::V2])
        .with_handshake_timeout(wait(&ctx))
        .with_security(security);
    let conn = Connection::<D>::connect(tcp, Role::Ui, "suite", config)
        .await
        .map_err(|e| fail(want, e.to_string()))?;
    ctx.log
        .push("[tls-ui] handshake accepted inside TLS; asking RequestMasterState");
    let want = "a MasterStateResponse over TLS";
    let reply = conn
        .handle()
        .ask_with_timeout(D::RequestMasterState(RequestMasterState::new()), wait(&ctx))
        .await
        .map_err(|e| fail(want, e.to_string()))?;
    if !matches!(reply, Reply::Message(D::MasterStateResponse(_))) {
        return Err(fail(want, format!("{reply:?}")));
    }
    ctx.log.push("[tls-ui] MasterStateResponse received");
    // A plain hello: the server speaks only TLS, so it is never accepted.
    let mut plain = Conn::connect(s.addr, "plain-ui", Role::Ui, &ctx.log).await?;
    let mut body = Vec::new();
    encode_hello(&Hello::new(&[Version::V2], Role::Ui, "plain"), &mut body);
    plain.send_frame(&body).await?;
    let want = "no acceptance of a plain hello by a server configured for TLS";
    match plain.next_or_close(wait(&ctx)).await {
        Some(Event::Frame(b)) => match sparkwire::wire::handshake::decode_answer(&b) {
            Ok(Answer::Accepted(a)) => Err(fail(
                want,
                format!("accepted at version {}", a.version.number()),
            )),
            _ => Ok(()),
        },
        // Closed, a TLS record read as a huge prefix, or nothing at all: not accepted.
        _ => Ok(()),
    }
}
