//! The original auth protocol of `spark.network.crypto` (Spark 2.2 to 3.1.2, CVE-2021-38296)
//! over TCP, sparkwire's client against sparkwire's server: taken only with
//! `sparkwire.legacyAuthEngine=true` (SPEC §15.6); refused otherwise as Spark 3.1.3's server
//! refuses it, with SASL after it when SASL is taken. The real Spark 3.0.3 peers are in
//! `scripts/spark/daemons-auth.sh 3.0.3 legacy`.

mod common;

use common::auth_echo::echo_server;
use sparkwire::spark::auth::{
    client_handshake, AuthError, ClientAuth, LegacyClient, Negotiated, ServerAuth, TransportCipher,
};
use sparkwire::spark::{Frame, FrameDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "s3cret";

fn legacy_client(secret: &str) -> ClientAuth {
    let mut c = ClientAuth::crypto(secret);
    c.set("sparkwire.legacyAuthEngine", "true")
        .expect("setting");
    c
}

fn legacy_server(secret: &str) -> ServerAuth {
    let mut s = ServerAuth::new(secret);
    s.set("sparkwire.legacyAuthEngine", "true")
        .expect("setting");
    s
}

async fn round_trip(port: u16, client: ClientAuth) -> Result<Negotiated, AuthError> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut s = client_handshake(tcp, &client).await?;
    let negotiated = s.negotiated();
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
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
async fn an_opted_in_server_takes_the_original_protocol_and_the_session_is_aes_ctr() {
    let (port, server) = echo_server(legacy_server(SECRET)).await;
    assert_eq!(
        round_trip(port, legacy_client(SECRET))
            .await
            .expect("client"),
        Negotiated::Legacy
    );
    assert_eq!(
        server.await.expect("task").expect("server"),
        Negotiated::Legacy
    );
    // The opted-in server still takes the X25519 engine and SASL.
    for client in [ClientAuth::crypto(SECRET), ClientAuth::sasl(SECRET)] {
        let (port, server) = echo_server(legacy_server(SECRET)).await;
        let n = round_trip(port, client).await.expect("client");
        assert_ne!(n, Negotiated::Legacy);
        server.await.expect("task").expect("server");
    }
}

#[tokio::test]
async fn the_bytes_after_the_original_protocol_are_encrypted_on_the_wire() {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let (mut tcp, _) = l.accept().await.expect("accept");
        // Read the challenge and answer it by hand, then read the raw bytes that follow.
        let mut len = [0u8; 8];
        tcp.read_exact(&mut len).await.expect("len");
        let mut rest = vec![0u8; u64::from_be_bytes(len) as usize - 8];
        tcp.read_exact(&mut rest).await.expect("rest");
        let mut d = FrameDecoder::new(1 << 16);
        d.push(&len);
        d.push(&rest);
        let (id, body) = match d.next_item().expect("a frame").frame.expect("frame") {
            Frame::RpcRequest { request_id, body } => (request_id, body),
            other => panic!("{}", other.kind()),
        };
        assert_eq!(body[0], 0xFA, "a ClientChallenge");
        let m = sparkwire::spark::auth::ClientChallenge::decode(&body).expect("decode");
        let (answer, _) = sparkwire::spark::auth::legacy::respond(SECRET, &m).expect("respond");
        let f = Frame::RpcResponse {
            request_id: id,
            body: answer.encode().into(),
        };
        tcp.write_all(&f.encode().expect("encode"))
            .await
            .expect("write");
        let mut raw = vec![0u8; 32];
        tcp.read_exact(&mut raw).await.expect("raw");
        raw
    });
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut s = client_handshake(tcp, &legacy_client(SECRET))
        .await
        .expect("client");
    assert!(s.is_encrypted());
    let plain = [b'x'; 32];
    s.write_all(&plain).await.expect("write");
    s.flush().await.expect("flush");
    let raw = server.await.expect("task");
    assert_ne!(raw, plain.to_vec(), "the wire carries ciphertext");
}

#[tokio::test]
async fn a_wrong_secret_is_refused_by_an_opted_in_server_and_the_client_learns_why() {
    let (port, server) = echo_server(legacy_server(SECRET)).await;
    let mut client = legacy_client("another");
    client.sasl_fallback = false;
    let e = round_trip(port, client).await.expect_err("refused");
    assert!(
        matches!(&e, AuthError::Refused(t) if t.contains("Authentication failed")),
        "{e}"
    );
    let e = server.await.expect("task").expect_err("server refuses");
    assert!(matches!(e, AuthError::Rejected(_)), "{e}");
}

#[tokio::test]
async fn by_default_a_server_refuses_the_original_protocol_and_a_client_with_fallback_goes_on_with_sasl(
) {
    let (port, server) = echo_server(ServerAuth::new(SECRET)).await;
    // A Spark 3.0 client with crypto on and fallback (its defaults): SASL after the refusal.
    assert_eq!(
        round_trip(port, legacy_client(SECRET))
            .await
            .expect("client"),
        Negotiated::Sasl
    );
    assert_eq!(
        server.await.expect("task").expect("server"),
        Negotiated::Sasl
    );
}

#[tokio::test]
async fn without_sasl_fallback_a_server_refuses_the_original_protocol_with_a_typed_error() {
    let mut auth = ServerAuth::new(SECRET);
    auth.set("spark.network.crypto.saslFallback", "false")
        .expect("setting");
    let (port, server) = echo_server(auth).await;
    let mut client = legacy_client(SECRET);
    client.sasl_fallback = false;
    let e = round_trip(port, client).await.expect_err("refused");
    assert!(
        matches!(&e, AuthError::Refused(t) if t.contains("Unknown challenge message")),
        "{e}"
    );
    let e = server.await.expect("task").expect_err("server refuses");
    assert!(
        matches!(&e, AuthError::Unsupported(t) if t.contains("CVE-2021-38296")),
        "{e}"
    );
}

#[tokio::test]
async fn a_server_with_crypto_off_answers_a_challenge_as_a_sasl_only_server() {
    let mut auth = legacy_server(SECRET);
    auth.set("spark.network.crypto.enabled", "false")
        .expect("setting");
    let (port, server) = echo_server(auth).await;
    assert_eq!(
        round_trip(port, legacy_client(SECRET))
            .await
            .expect("client"),
        Negotiated::Sasl
    );
    server.await.expect("task").expect("server");
}

#[tokio::test]
async fn a_malformed_or_out_of_bounds_challenge_costs_only_its_connection() {
    let (port, server) = echo_server(legacy_server(SECRET)).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let c = LegacyClient::new("sparkSaslUser", SECRET).expect("client");
    let mut m = c.challenge().clone();
    m.iterations = 10_000_000;
    let f = Frame::RpcRequest {
        request_id: 5,
        body: m.encode().into(),
    };
    tcp.write_all(&f.encode().expect("encode"))
        .await
        .expect("write");
    let mut all = Vec::new();
    tcp.read_to_end(&mut all).await.expect("read");
    let mut d = FrameDecoder::new(1 << 16);
    d.push(&all);
    match d.next_item().expect("an answer").frame.expect("frame") {
        Frame::RpcFailure { request_id, error } => {
            assert_eq!(request_id, 5);
            assert!(error.contains("Authentication failed"), "{error}");
        }
        other => panic!("{}", other.kind()),
    }
    let e = server.await.expect("task").expect_err("server refuses");
    assert!(matches!(e, AuthError::Unsupported(_)), "{e}");
    // A truncated challenge: malformed.
    let (port, server) = echo_server(legacy_server(SECRET)).await;
    let mut tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let body = c.challenge().encode();
    let f = Frame::RpcRequest {
        request_id: 6,
        body: body[..body.len() - 3].to_vec().into(),
    };
    tcp.write_all(&f.encode().expect("encode"))
        .await
        .expect("write");
    let mut all = Vec::new();
    tcp.read_to_end(&mut all).await.expect("read");
    let e = server.await.expect("task").expect_err("server refuses");
    assert!(matches!(e, AuthError::Malformed(_)), "{e}");
}

#[test]
fn the_original_protocol_runs_aes_ctr_only() {
    let mut c = legacy_client(SECRET);
    c.cipher = TransportCipher::Gcm;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let e = rt.block_on(async {
        let (port, _server) = echo_server(legacy_server(SECRET)).await;
        round_trip(port, c).await.expect_err("refused")
    });
    assert!(matches!(e, AuthError::Unsupported(_)), "{e}");
}
