//! Spark's auth bootstraps over TCP, sparkwire's client against sparkwire's server and against
//! peers that fail, stall or lie (the real Spark peers are in `spark_auth_real`): every failure is
//! a typed error of that one connection, in bounded time.

mod common;

use common::auth_echo::echo_server;
use std::time::Duration;

use sparkwire::spark::auth::{
    client_handshake, server_handshake, AuthError, AuthMessage, ClientAuth, EngineVersion,
    Negotiated, SaslMessage, ServerAuth, TransportCipher, MAX_AUTH_FRAME,
};
use sparkwire::spark::{Frame, FrameDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "s3cret";

async fn connect(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect")
}

async fn round_trip(port: u16, client: ClientAuth) -> Result<Negotiated, AuthError> {
    let mut s = client_handshake(connect(port).await, &client).await?;
    let negotiated = s.negotiated();
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    s.write_all(&payload).await?;
    s.flush().await?;
    let mut back = vec![0u8; payload.len()];
    s.read_exact(&mut back).await?;
    assert_eq!(
        back, payload,
        "the echo comes back intact through the session"
    );
    Ok(negotiated)
}

#[tokio::test]
async fn each_scheme_a_client_speaks_is_taken_by_the_default_server_and_carries_bytes() {
    for (client, expected) in [
        (ClientAuth::sasl(SECRET), Negotiated::Sasl),
        (
            ClientAuth::crypto(SECRET),
            Negotiated::Engine(EngineVersion::V1),
        ),
    ] {
        let (port, server) = echo_server(ServerAuth::new(SECRET)).await;
        assert_eq!(round_trip(port, client).await.expect("client"), expected);
        assert_eq!(server.await.expect("task").expect("server"), expected);
    }
    // Version 2 both sides.
    let (port, server) = echo_server(ServerAuth {
        version: EngineVersion::V2,
        ..ServerAuth::new(SECRET)
    })
    .await;
    let v2 = ClientAuth {
        version: EngineVersion::V2,
        ..ClientAuth::crypto(SECRET)
    };
    assert_eq!(
        round_trip(port, v2).await.expect("client"),
        Negotiated::Engine(EngineVersion::V2)
    );
    server.await.expect("task").expect("server");
}

#[tokio::test]
async fn sasl_encryption_seals_the_session_in_chunks_and_a_demanding_server_refuses_plain_sasl() {
    use sparkwire::spark::auth::SaslCipher;
    let encrypting = ClientAuth {
        sasl_encryption: true,
        ..ClientAuth::sasl(SECRET)
    };
    // The default server offers auth-conf beside auth; the client asks for auth-conf.
    let (port, server) = echo_server(ServerAuth::new(SECRET)).await;
    let s = client_handshake(connect(port).await, &encrypting)
        .await
        .expect("the bootstrap");
    assert_eq!(s.negotiated(), Negotiated::SaslEncrypted(SaslCipher::Rc4));
    assert!(s.is_encrypted());
    // More than two of Spark's 64 KiB blocks, so the stream is cut into several chunks.
    let payload: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = tokio::io::split(s);
    let writer = {
        let payload = payload.clone();
        tokio::spawn(async move {
            w.write_all(&payload).await.expect("write");
            w.flush().await.expect("flush");
            w
        })
    };
    let mut back = vec![0u8; payload.len()];
    r.read_exact(&mut back).await.expect("the echo");
    assert!(
        back == payload,
        "the echo comes back intact through the layer"
    );
    drop((r, writer.await.expect("writer")));
    assert_eq!(
        server.await.expect("task").expect("server"),
        Negotiated::SaslEncrypted(SaslCipher::Rc4)
    );

    // spark.network.sasl.serverAlwaysEncrypt: a client asking for auth only is refused by both
    // (the challenge offers no `auth`), and an encrypting client still passes.
    let always = ServerAuth {
        sasl_always_encrypt: true,
        crypto: false,
        ..ServerAuth::new(SECRET)
    };
    let (port, server) = echo_server(always.clone()).await;
    match client_handshake(connect(port).await, &ClientAuth::sasl(SECRET)).await {
        Err(AuthError::Unsupported(why)) => assert!(why.contains("auth"), "{why}"),
        other => panic!("a client asking for auth only is refused: {other:?}"),
    }
    drop(server);
    let (port, server) = echo_server(always).await;
    assert_eq!(
        round_trip(port, encrypting).await.expect("client"),
        Negotiated::SaslEncrypted(SaslCipher::Rc4)
    );
    server.await.expect("task").expect("server");
}

#[tokio::test]
async fn a_sasl_encrypted_session_refuses_a_chunk_altered_on_the_wire() {
    // A man in the middle flips one bit of the client's first sealed chunk: the server's
    // unwrap fails its MAC and the connection ends with an error, never with altered bytes.
    let (up_port, server) = echo_server(ServerAuth::new(SECRET)).await;
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let mitm = tokio::spawn(async move {
        let (mut c, _) = l.accept().await.expect("accept");
        let mut up = connect(up_port).await;
        // The bootstrap's frames pass untouched (two requests and two answers).
        let mut frames = 0;
        let mut from_client = FrameDecoder::new(MAX_AUTH_FRAME);
        let mut buf = vec![0u8; 4096];
        while frames < 2 {
            let n = c.read(&mut buf).await.expect("read");
            assert!(n > 0);
            from_client.push(&buf[..n]);
            up.write_all(&buf[..n]).await.expect("write");
            while from_client.next_item().is_some() {
                frames += 1;
                let mut d = FrameDecoder::new(MAX_AUTH_FRAME);
                loop {
                    let n = up.read(&mut buf).await.expect("read");
                    d.push(&buf[..n]);
                    c.write_all(&buf[..n]).await.expect("write");
                    if d.next_item().is_some() {
                        break;
                    }
                }
            }
        }
        let n = c.read(&mut buf).await.expect("read");
        buf[n - 8] ^= 0x01;
        up.write_all(&buf[..n]).await.expect("write");
        (c, up)
    });
    let client = ClientAuth {
        sasl_encryption: true,
        ..ClientAuth::sasl(SECRET)
    };
    let mut s = client_handshake(connect(port).await, &client)
        .await
        .expect("the bootstrap");
    s.write_all(b"RegisterWorker, honestly")
        .await
        .expect("write");
    s.flush().await.expect("flush");
    let got = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server ends")
        .expect("task");
    match got {
        Err(AuthError::Io(e)) => assert!(e.to_string().contains("MAC"), "{e}"),
        other => panic!("the altered chunk is refused: {other:?}"),
    }
    drop(mitm);
}

#[tokio::test]
async fn aes_gcm_sessions_carry_bytes_with_either_engine_version_and_refuse_a_ctr_peer() {
    for version in [EngineVersion::V1, EngineVersion::V2] {
        let (port, server) = echo_server(ServerAuth {
            version,
            cipher: TransportCipher::Gcm,
            ..ServerAuth::new(SECRET)
        })
        .await;
        let client = ClientAuth {
            version,
            cipher: TransportCipher::Gcm,
            ..ClientAuth::crypto(SECRET)
        };
        assert_eq!(
            round_trip(port, client).await.expect("client"),
            Negotiated::EngineGcm(version)
        );
        assert_eq!(
            server.await.expect("task").expect("server"),
            Negotiated::EngineGcm(version)
        );
    }
    // Spark does not negotiate the cipher: a CTR client's bytes fail the GCM server's reading.
    let (port, server) = echo_server(ServerAuth {
        cipher: TransportCipher::Gcm,
        ..ServerAuth::new(SECRET)
    })
    .await;
    let mut s = client_handshake(connect(port).await, &ClientAuth::crypto(SECRET))
        .await
        .expect("the bootstrap itself passes");
    s.write_all(&[0u8; 200]).await.expect("write");
    s.flush().await.expect("flush");
    let got = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server ends")
        .expect("task");
    assert!(got.is_err(), "the GCM server refuses CTR bytes: {got:?}");
}

#[tokio::test]
async fn a_crypto_client_falls_back_to_sasl_on_a_server_without_crypto() {
    let (port, server) = echo_server(ServerAuth {
        crypto: false,
        ..ServerAuth::new(SECRET)
    })
    .await;
    assert_eq!(
        round_trip(port, ClientAuth::crypto(SECRET))
            .await
            .expect("client"),
        Negotiated::Sasl
    );
    server.await.expect("task").expect("server");
    // Without fallback the client stops at the refusal.
    let (port, _server) = echo_server(ServerAuth {
        crypto: false,
        ..ServerAuth::new(SECRET)
    })
    .await;
    let strict = ClientAuth {
        sasl_fallback: false,
        ..ClientAuth::crypto(SECRET)
    };
    assert!(matches!(
        round_trip(port, strict).await,
        Err(AuthError::Refused(_))
    ));
}

#[tokio::test]
async fn a_server_with_sasl_fallback_off_refuses_sasl() {
    let (port, server) = echo_server(ServerAuth {
        sasl_fallback: false,
        ..ServerAuth::new(SECRET)
    })
    .await;
    assert!(matches!(
        round_trip(port, ClientAuth::sasl(SECRET)).await,
        Err(AuthError::Refused(why)) if why.contains("Unknown challenge")
    ));
    assert!(matches!(
        server.await.expect("task"),
        Err(AuthError::Unsupported(_))
    ));
}

#[tokio::test]
async fn the_wrong_secret_is_refused_by_either_side_in_either_scheme() {
    let strict = ClientAuth {
        sasl_fallback: false,
        ..ClientAuth::crypto("wrong")
    };
    for client in [ClientAuth::sasl("wrong"), strict] {
        let (port, server) = echo_server(ServerAuth {
            sasl_fallback: false,
            ..ServerAuth::new(SECRET)
        })
        .await;
        let crypto = client.crypto;
        let got = round_trip(port, client).await;
        if crypto {
            assert!(
                matches!(&got, Err(AuthError::Refused(why)) if why.contains("Authentication failed")),
                "{got:?}"
            );
        } else {
            assert!(got.is_err());
        }
        let server = server.await.expect("task");
        if crypto {
            assert!(matches!(server, Err(AuthError::Rejected(_))), "{server:?}");
        }
    }
    // SASL with the wrong secret against a server that takes SASL: the digest is wrong.
    let (port, server) = echo_server(ServerAuth::new(SECRET)).await;
    assert!(matches!(
        round_trip(port, ClientAuth::sasl("wrong")).await,
        Err(AuthError::Refused(why)) if why.contains("SaslException")
    ));
    assert!(matches!(
        server.await.expect("task"),
        Err(AuthError::Rejected(_))
    ));
}

/// A lying server: answers each bootstrap request with `answer(request_body, round)`.
async fn lying_server(answer: fn(&[u8], usize) -> Vec<u8>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let (mut tcp, _) = l.accept().await.expect("accept");
        let mut d = FrameDecoder::default();
        let mut buf = [0u8; 4096];
        let mut round = 0;
        loop {
            while let Some(item) = d.next_item() {
                if let Ok(Frame::RpcRequest { request_id, body }) = item.frame {
                    let f = Frame::RpcResponse {
                        request_id,
                        body: answer(&body, round).into(),
                    };
                    round += 1;
                    if tcp.write_all(&f.encode().expect("frame")).await.is_err() {
                        return;
                    }
                }
            }
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => d.push(&buf[..n]),
            }
        }
    });
    port
}

#[tokio::test]
async fn the_client_checks_the_server_holds_the_secret_too() {
    // The engine: a response sealed under another secret does not open.
    let port = lying_server(|_, _| {
        sparkwire::spark::auth::EngineClient::new("sparkSaslUser", "wrong", EngineVersion::V1)
            .expect("client")
            .challenge()
            .encode()
    })
    .await;
    let strict = ClientAuth {
        sasl_fallback: false,
        ..ClientAuth::crypto(SECRET)
    };
    let got = client_handshake(connect(port).await, &strict).await;
    assert!(matches!(got, Err(AuthError::Rejected(_))), "{got:?}");
    // SASL: a server that accepts any digest-response but cannot prove the secret (rspauth).
    let port = lying_server(|_, round| {
        if round == 0 {
            b"realm=\"default\",nonce=\"abc\",qop=\"auth\",charset=utf-8,algorithm=md5-sess"
                .to_vec()
        } else {
            b"rspauth=00000000000000000000000000000000".to_vec()
        }
    })
    .await;
    let got = client_handshake(connect(port).await, &ClientAuth::sasl(SECRET)).await;
    assert!(matches!(got, Err(AuthError::Rejected(_))), "{got:?}");
    // SASL: a server that only offers encryption (auth-conf) to a client that asks for `auth`
    // (spark.authenticate.enableSaslEncryption=false), as Java's client refuses it.
    let port = lying_server(|_, _| {
        b"realm=\"default\",nonce=\"abc\",qop=\"auth-conf\",charset=utf-8,cipher=\"rc4\",algorithm=md5-sess"
            .to_vec()
    })
    .await;
    let got = client_handshake(connect(port).await, &ClientAuth::sasl(SECRET)).await;
    assert!(matches!(got, Err(AuthError::Unsupported(_))), "{got:?}");
    // SASL encryption with a server whose ciphers are only DES ones, not spoken here: refused,
    // never weakened to `auth`.
    let port = lying_server(|_, _| {
        b"realm=\"default\",nonce=\"abc\",qop=\"auth-conf,auth\",charset=utf-8,cipher=\"3des,des\",algorithm=md5-sess"
            .to_vec()
    })
    .await;
    let encrypting = ClientAuth {
        sasl_encryption: true,
        ..ClientAuth::sasl(SECRET)
    };
    let got = client_handshake(connect(port).await, &encrypting).await;
    assert!(matches!(got, Err(AuthError::Unsupported(_))), "{got:?}");
}

/// A server bootstrap on a fresh connection, fed `bytes` by a raw peer; the server's error, and
/// what the peer read back.
async fn server_fed(auth: ServerAuth, bytes: Vec<u8>, then_close: bool) -> (AuthError, Vec<u8>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.expect("accept");
        server_handshake(tcp, &auth).await.map(|s| s.negotiated())
    });
    let mut peer = connect(port).await;
    peer.write_all(&bytes).await.expect("write");
    if then_close {
        peer.shutdown().await.expect("shutdown");
    }
    let err = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server ends in bounded time")
        .expect("task")
        .expect_err("the bootstrap fails");
    let mut back = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.read_to_end(&mut back)).await;
    (err, back)
}

fn rpc(id: i64, body: Vec<u8>) -> Vec<u8> {
    Frame::RpcRequest {
        request_id: id,
        body: body.into(),
    }
    .encode()
    .expect("frame")
}

#[tokio::test]
async fn a_message_before_authentication_is_never_taken() {
    // A one-way message (Spark's RegisterWorker travels as one) before any bootstrap.
    let one_way = Frame::OneWay {
        body: b"\x01RegisterWorker".to_vec().into(),
    }
    .encode()
    .expect("frame");
    let (err, back) = server_fed(ServerAuth::new(SECRET), one_way, false).await;
    assert!(
        matches!(err, AuthError::Protocol(ref w) if w.contains("OneWayMessage")),
        "{err:?}"
    );
    assert!(back.is_empty(), "nothing is answered to it");
    // An RPC that is neither bootstrap's first message.
    let (err, back) =
        server_fed(ServerAuth::new(SECRET), rpc(5, b"\x01junk".to_vec()), false).await;
    assert!(matches!(err, AuthError::Malformed(_)), "{err:?}");
    let mut d = FrameDecoder::default();
    d.push(&back);
    assert!(matches!(
        d.next_item().map(|i| i.frame),
        Some(Ok(Frame::RpcFailure { request_id: 5, .. }))
    ));
}

#[tokio::test]
async fn lying_peers_cost_their_connection_with_a_typed_error() {
    // An oversized frame during the bootstrap.
    let mut huge = (MAX_AUTH_FRAME + 1).to_be_bytes().to_vec();
    huge.push(3);
    let (err, _) = server_fed(ServerAuth::new(SECRET), huge, false).await;
    assert!(matches!(err, AuthError::Malformed(_)), "{err:?}");
    // An AuthMessage whose lengths run past its end.
    let mut m = AuthMessage {
        app_id: "sparkSaslUser".into(),
        salt: vec![1; 16],
        ciphertext: vec![2; 60],
    }
    .encode();
    m.truncate(30);
    let (err, _) = server_fed(ServerAuth::new(SECRET), rpc(1, m), false).await;
    assert!(matches!(err, AuthError::Malformed(_)), "{err:?}");
    // An AuthMessage of the right shape whose ciphertext is not the secret's.
    let forged = AuthMessage {
        app_id: "sparkSaslUser".into(),
        salt: vec![1; 16],
        ciphertext: vec![2; 60],
    }
    .encode();
    let (err, _) = server_fed(ServerAuth::new(SECRET), rpc(1, forged), false).await;
    assert!(matches!(err, AuthError::Rejected(_)), "{err:?}");
    // A SASL digest-response without a challenge first, with junk directives.
    let sasl = SaslMessage {
        app_id: "sparkSaslUser".into(),
        token: b"username=\"x".to_vec(),
    };
    let first = SaslMessage {
        app_id: "sparkSaslUser".into(),
        token: Vec::new(),
    };
    let bytes = [rpc(1, first.encode()), rpc(2, sasl.encode())].concat();
    let (err, _) = server_fed(ServerAuth::new(SECRET), bytes, false).await;
    assert!(matches!(err, AuthError::Malformed(_)), "{err:?}");
    // A peer that closes mid-bootstrap.
    let (err, _) = server_fed(ServerAuth::new(SECRET), vec![0, 0, 0], true).await;
    assert!(matches!(err, AuthError::Io(_)), "{err:?}");
    // Endless refused AuthMessages to a SASL-only server are bounded.
    let c = sparkwire::spark::auth::EngineClient::new("sparkSaslUser", SECRET, EngineVersion::V1)
        .expect("client");
    let bytes: Vec<u8> = (0..8)
        .flat_map(|i| rpc(i, c.challenge().encode()))
        .collect();
    let (err, _) = server_fed(
        ServerAuth {
            crypto: false,
            ..ServerAuth::new(SECRET)
        },
        bytes,
        false,
    )
    .await;
    assert!(matches!(err, AuthError::Protocol(_)), "{err:?}");
}

#[tokio::test]
async fn a_stalled_peer_times_out_on_either_side() {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let auth = ServerAuth {
        timeout: Duration::from_millis(300),
        ..ServerAuth::new(SECRET)
    };
    let server = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.expect("accept");
        server_handshake(tcp, &auth).await.map(|s| s.negotiated())
    });
    let _silent = connect(port).await;
    assert!(matches!(
        server.await.expect("task"),
        Err(AuthError::Timeout(_))
    ));
    // A server that never answers.
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let _hold = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.expect("accept");
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(tcp);
    });
    let client = ClientAuth {
        timeout: Duration::from_millis(300),
        ..ClientAuth::crypto(SECRET)
    };
    assert!(matches!(
        client_handshake(connect(port).await, &client).await,
        Err(AuthError::Timeout(_))
    ));
}

mod front {
    //! The master's Spark-wire front with Spark's authentication on (`FrontConfig::auth`): a
    //! reference master with a secret in this process, Spark peers written with the library.

    use super::*;
    use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig, Security};
    use sparkwire::messages::deploy::{MasterStateResponse, RegisterWorker, RequestMasterState};
    use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Resources, Version};
    use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
    use sparkwire::spark::{
        check_existence_stream, message_stream, start_front, FrontConfig, RequestMessage,
        ServerHandle, Typed, MASTER_ENDPOINT, VERIFIER,
    };
    use sparkwire::wire::handshake::{Role, Secret};
    use sparkwire::wire::Reply;
    use tokio::io::{AsyncRead, AsyncWrite};

    fn security() -> Security {
        Security::with_secret(Secret::new(SECRET.as_bytes().to_vec()).expect("secret"))
    }

    async fn cluster() -> (MasterHandle, ServerHandle) {
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
        // These peers play authentication, not a JVM: they would not answer the front's release
        // questions (SPEC §15.3), so the front asks none and takes the release their streams say.
        config.probe_timeout = Duration::ZERO;
        let front = start_front(config).await.expect("the front starts");
        (master, front)
    }

    async fn workers(master: &MasterHandle) -> usize {
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
                s.workers.len()
            }
            other => panic!("a MasterStateResponse, not {other:?}"),
        }
    }

    fn register_worker(id: &str, port: i32) -> DeployMessage {
        let at = Addr::new("127.0.0.1", port);
        DeployMessage::from(RegisterWorker::new(
            id.into(),
            at.host.clone(),
            port,
            EndpointRef::at(at, "Worker"),
            1,
            1024,
            String::new(),
            Addr::new("127.0.0.1", 7077),
            Resources::new(),
        ))
    }

    fn frame(request_id: Option<i64>, endpoint: &str, stream: Vec<u8>, port: i32) -> Vec<u8> {
        let body = RequestMessage {
            sender: Some(("127.0.0.1".into(), port)),
            receiver: Some(("127.0.0.1".into(), 1)),
            endpoint: endpoint.into(),
            stream: stream.into(),
        }
        .encode()
        .expect("header")
        .into();
        match request_id {
            Some(request_id) => Frame::RpcRequest { request_id, body },
            None => Frame::OneWay { body },
        }
        .encode()
        .expect("frame")
    }

    fn message(m: DeployMessage) -> Vec<u8> {
        message_stream(&Typed::Deploy(m), Version::V2, None).expect("stream")
    }

    /// Everything read from `s` until it closes (or 5 s pass).
    async fn frames_until_closed<S: AsyncRead + Unpin>(s: &mut S) -> Vec<Frame> {
        let mut d = FrameDecoder::default();
        let mut buf = [0u8; 4096];
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => d.push(&buf[..n]),
                _ => break,
            }
        }
        while let Some(item) = d.next_item() {
            if let Ok(f) = item.frame {
                out.push(f);
            }
        }
        out
    }

    async fn send<S: AsyncWrite + Unpin>(s: &mut S, bytes: &[u8]) {
        s.write_all(bytes).await.expect("write");
        s.flush().await.expect("flush");
    }

    #[tokio::test]
    async fn no_message_of_the_master_s_reaches_it_without_the_bootstrap() {
        // CVE-2020-9480's class: Spark RPCs sent straight, or after a failed bootstrap.
        let (master, front) = cluster().await;
        let attempts: Vec<Vec<u8>> = vec![
            frame(
                None,
                MASTER_ENDPOINT,
                message(register_worker("w-oneway", 41001)),
                41001,
            ),
            frame(
                Some(1),
                MASTER_ENDPOINT,
                message(register_worker("w-ask", 41002)),
                41002,
            ),
            frame(
                Some(2),
                MASTER_ENDPOINT,
                message(DeployMessage::from(RequestMasterState::new())),
                41003,
            ),
            frame(
                Some(3),
                VERIFIER,
                check_existence_stream("Master", Version::V2).expect("stream"),
                41004,
            ),
        ];
        for bytes in &attempts {
            let mut s = connect(front.addr().port()).await;
            send(&mut s, bytes).await;
            let answers = frames_until_closed(&mut s).await;
            assert!(
                answers
                    .iter()
                    .all(|f| matches!(f, Frame::RpcFailure { .. })),
                "nothing but a failure answers an unauthenticated RPC: {answers:?}"
            );
        }
        // After a failed bootstrap (the wrong secret), on the same connection.
        for bytes in &attempts {
            let mut s = connect(front.addr().port()).await;
            let wrong = ClientAuth {
                sasl_fallback: false,
                ..ClientAuth::crypto("wrong")
            };
            let refused = client_handshake(&mut s, &wrong).await;
            assert!(matches!(refused, Err(AuthError::Refused(_))), "{refused:?}");
            let _ = s.write_all(bytes).await;
            let answers = frames_until_closed(&mut s).await;
            assert!(answers.is_empty(), "{answers:?}");
        }
        assert_eq!(workers(&master).await, 0, "no worker registered");
    }

    #[tokio::test]
    async fn authenticated_spark_peers_register_with_either_scheme() {
        let (master, front) = cluster().await;
        let mut held = Vec::new();
        for (n, auth) in [ClientAuth::sasl(SECRET), ClientAuth::crypto(SECRET)]
            .into_iter()
            .enumerate()
        {
            let port = 42000 + n as i32;
            let tcp = connect(front.addr().port()).await;
            let mut s = client_handshake(tcp, &auth).await.expect("authenticates");
            let id = format!("worker-auth-{n}");
            send(
                &mut s,
                &frame(
                    None,
                    MASTER_ENDPOINT,
                    message(register_worker(&id, port)),
                    port,
                ),
            )
            .await;
            let start = std::time::Instant::now();
            while workers(&master).await < n + 1 {
                assert!(start.elapsed() < Duration::from_secs(10), "{id} registers");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            held.push(s);
        }
    }
}

#[tokio::test]
async fn the_proxy_terminates_spark_s_authentication_on_both_sides() {
    use sparkwire::spark::{start_proxy, ProxyOptions};
    // Upstream: a server taking SASL only; the proxy speaks SASL to it and the auth engine with
    // AES-CTR to its clients.
    let (up_port, upstream) = echo_server(ServerAuth {
        crypto: false,
        ..ServerAuth::new(SECRET)
    })
    .await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let options = ProxyOptions {
        auth: Some(ServerAuth {
            sasl_fallback: false,
            ..ServerAuth::new(SECRET)
        }),
        auth_upstream: Some(ClientAuth::sasl(SECRET)),
        ..ProxyOptions::default()
    };
    let proxy = start_proxy(listener, format!("127.0.0.1:{up_port}"), options).expect("proxy");
    let client = ClientAuth {
        sasl_fallback: false,
        ..ClientAuth::crypto(SECRET)
    };
    assert_eq!(
        round_trip(port, client.clone())
            .await
            .expect("through the proxy"),
        Negotiated::Engine(EngineVersion::V1)
    );
    assert_eq!(
        upstream.await.expect("task").expect("upstream"),
        Negotiated::Sasl,
        "the upstream side of the proxy spoke SASL"
    );
    // A client with the wrong secret is refused by the proxy and never reaches the upstream.
    let wrong = ClientAuth {
        secret: "wrong".into(),
        ..client
    };
    assert!(matches!(
        round_trip(port, wrong).await,
        Err(AuthError::Refused(_))
    ));
    let outcome = proxy.stop().await;
    assert_eq!(
        outcome.forwarded[0], 5000,
        "the echo's bytes, decrypted, once each way"
    );
}
