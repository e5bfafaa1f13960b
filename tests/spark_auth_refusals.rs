//! Refusals that cannot be bypassed (CVE-2020-9480's class): with a secret, EVERY message of the
//! deploy catalogue Spark 4.0.1 has, written as Spark writes it, sent to a sparkwire master's
//! Spark front as a one-way message and as an ask — straight, and after a failed bootstrap (the
//! wrong secret, with the auth engine and with SASL) on the same connection — is answered with
//! nothing but a failure, and the master's state stays empty: no worker, application or driver.

use std::time::Duration;

use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig, Security};
use sparkwire::definition::{Definition, MessageKind};
use sparkwire::messages::deploy::{MasterStateResponse, RequestMasterState};
use sparkwire::messages::{DeployMessage, Family, Version};
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::spark::auth::{client_handshake, AuthError, ClientAuth, ServerAuth};
use sparkwire::spark::{
    message_stream, start_front, Frame, FrameDecoder, FrontConfig, Release, RequestMessage, Typed,
    MASTER_ENDPOINT,
};
use sparkwire::wire::handshake::{Role, Secret};
use sparkwire::wire::vectors::{sample_message, Case};
use sparkwire::wire::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SECRET: &str = "refusal-s3cret";

fn security() -> Security {
    Security::with_secret(Secret::new(SECRET.as_bytes().to_vec()).expect("secret"))
}

/// Every deploy message of the definition that crosses Spark 4.0.1's wire, as Spark writes it:
/// (name, Java stream). Those the writer cannot make from a sample (the master's own state
/// objects) are counted apart.
fn catalogue() -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let release = Release::named("4.0.1").expect("4.0.1 is spoken");
    let def = Definition::builtin();
    let mut out = Vec::new();
    let mut unwritable = Vec::new();
    for msg in &def.messages {
        if msg.family != DeployMessage::FAMILY
            || !msg.exists_in(Version::V2)
            || msg.kind_in(Version::V2) == MessageKind::Local
        {
            continue;
        }
        let Ok(m) = sample_message::<DeployMessage>(def, msg, Case::Full) else {
            unwritable.push(msg.name.clone());
            continue;
        };
        match message_stream(&Typed::Deploy(m), release, None) {
            Ok(stream) => out.push((msg.name.clone(), stream)),
            Err(_) => unwritable.push(msg.name.clone()),
        }
    }
    (out, unwritable)
}

fn frame(ask: bool, stream: &[u8]) -> Vec<u8> {
    let body = RequestMessage {
        sender: Some(("127.0.0.1".into(), 45001)),
        receiver: Some(("127.0.0.1".into(), 7077)),
        endpoint: MASTER_ENDPOINT.into(),
        stream: stream.to_vec().into(),
    }
    .encode()
    .expect("header")
    .into();
    if ask {
        Frame::RpcRequest {
            request_id: 77,
            body,
        }
    } else {
        Frame::OneWay { body }
    }
    .encode()
    .expect("frame")
}

/// Everything the front sends until it closes the connection (bounded: 10 s).
async fn answers(s: &mut TcpStream) -> Vec<Frame> {
    let mut d = FrameDecoder::default();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => d.push(&buf[..n]),
            Ok(_) => break,
            Err(_) => panic!("the front kept a refused connection open"),
        }
    }
    let mut out = Vec::new();
    while let Some(item) = d.next_item() {
        out.push(item.frame.expect("the front writes Spark's frames"));
    }
    out
}

async fn state(master: &MasterHandle) -> (usize, usize, usize) {
    let stream = connect_tcp("127.0.0.1", master.addr().port(), Duration::from_secs(10))
        .await
        .expect("tcp");
    let config = ConnectionConfig::default().with_security(security());
    let ui: Connection<DeployMessage> = Connection::connect(stream, Role::Ui, "ui", config)
        .await
        .expect("a ui connection");
    match ui
        .ask(DeployMessage::from(RequestMasterState::new()))
        .await
        .expect("the state")
    {
        Reply::Message(DeployMessage::MasterStateResponse(s)) => {
            let s: MasterStateResponse = s;
            (
                s.workers.len(),
                s.active_apps.len() + s.completed_apps.len(),
                s.active_drivers.len() + s.completed_drivers.len(),
            )
        }
        other => panic!("a MasterStateResponse, not {other:?}"),
    }
}

#[derive(Debug, Clone, Copy)]
enum Before {
    Nothing,
    WrongEngine,
    WrongSasl,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_of_the_catalogue_reaches_the_master_without_the_bootstrap() {
    let (messages, unwritable) = catalogue();
    assert!(
        messages.len() >= 30,
        "the catalogue is written: {} messages ({unwritable:?} not)",
        messages.len()
    );
    for name in [
        "RegisterWorker",
        "RegisterApplication",
        "RequestSubmitDriver",
    ] {
        assert!(
            messages.iter().any(|(n, _)| n == name),
            "{name} is among those sent"
        );
    }
    let master = Master::start(MasterConfig {
        port: 0,
        security: security(),
        ..MasterConfig::default()
    })
    .await
    .expect("the master starts");
    let mut config = FrontConfig::new("127.0.0.1", 0, master.addr());
    config.auth = Some(ServerAuth::new(SECRET));
    config.master_security = security();
    let front = start_front(config).await.expect("the front starts");

    let mut sent = 0;
    for before in [Before::Nothing, Before::WrongEngine, Before::WrongSasl] {
        for (name, stream) in &messages {
            for ask in [false, true] {
                let mut s = TcpStream::connect(front.addr()).await.expect("connect");
                match before {
                    Before::Nothing => {}
                    Before::WrongEngine | Before::WrongSasl => {
                        let wrong = match before {
                            Before::WrongEngine => ClientAuth {
                                sasl_fallback: false,
                                ..ClientAuth::crypto("not-the-secret")
                            },
                            _ => ClientAuth::sasl("not-the-secret"),
                        };
                        let refused = client_handshake(&mut s, &wrong).await;
                        assert!(
                            matches!(refused, Err(AuthError::Refused(_))),
                            "{before:?}: {refused:?}"
                        );
                    }
                }
                // After a refusal the front may already have closed: the write may fail.
                let _ = s.write_all(&frame(ask, stream)).await;
                let back = answers(&mut s).await;
                assert!(
                    back.iter().all(|f| matches!(f, Frame::RpcFailure { .. })),
                    "{name} ({}, {before:?}) drew only failures, not {back:?}",
                    if ask { "ask" } else { "one-way" }
                );
                sent += 1;
            }
        }
    }
    assert_eq!(sent, messages.len() * 6);
    assert_eq!(
        state(&master).await,
        (0, 0, 0),
        "none of {sent} unauthenticated messages left a trace in the master's state"
    );
}
