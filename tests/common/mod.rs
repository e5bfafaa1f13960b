//! What the integration tests share, by what it fakes or provides: connection pairs, hand-driven
//! raw peers and hand-made frames (here), the `sparkwire` processes (`processes`), their files
//! (`files`), the values tests start from (`builders`, `samples`, `scenarios`), in-process masters
//! and workers with a test application client and fake workers (`cluster`), a driver with
//! in-process and child-process executors (`driver`), a peer that floods a master with asks and
//! never reads (`flood`), a high-availability group of master processes and a real ZooKeeper
//! (`ha`), a counting allocator for the binaries that measure memory (`counting`), and the
//! commands of a document's shell blocks (`shell`).

#![allow(dead_code)]

#[cfg(feature = "spark-proxy")]
pub mod auth_echo;
#[cfg(feature = "reference")]
pub mod builders;
#[cfg(feature = "reference")]
pub mod cluster;
pub mod counting;
#[cfg(feature = "cli")]
pub mod driver;
pub mod files;
#[cfg(feature = "tokio")]
pub mod flood;
#[cfg(feature = "cli")]
pub mod ha;
#[cfg(feature = "cli")]
pub mod processes;
pub mod samples;
#[cfg(feature = "testing")]
pub mod scenarios;
pub mod shell;

use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError, Incoming};
use sparkwire::messages::{Family, Version};
use sparkwire::wire::handshake::{
    check_answer, decode_hello, encode_answer, encode_hello, Accepted, Answer, Hello, Negotiated,
    Role,
};
use sparkwire::wire::{encode_frame, Envelope, Reply};
use tokio::io::{duplex, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

/// Buffer of each in-memory pipe: small, so that large frames really cross in pieces.
pub const PIPE: usize = 64 * 1024;

/// A client and a server connection over an in-memory pipe, both handshakes run concurrently.
pub async fn duplex_pair<F: Family + Send + 'static>(
    client_role: Role,
    client: ConnectionConfig<F>,
    server_role: Role,
    server: ConnectionConfig<F>,
) -> (
    Result<Connection<F>, ConnectionError>,
    Result<Connection<F>, ConnectionError>,
) {
    let (a, b) = duplex(PIPE);
    tokio::join!(
        Connection::connect(a, client_role, "client-id", client),
        Connection::accept(b, server_role, "server-id", server),
    )
}

/// Like [`duplex_pair`], for pairs expected to connect.
pub async fn connected<F: Family + Send + 'static>(
    client_role: Role,
    client: ConnectionConfig<F>,
    server_role: Role,
    server: ConnectionConfig<F>,
) -> (Connection<F>, Connection<F>) {
    let (c, s) = duplex_pair(client_role, client, server_role, server).await;
    (c.expect("client connects"), s.expect("server accepts"))
}

/// A client and a server connection over loopback TCP, through `listener`.
pub async fn tcp_pair<F: Family + Send + 'static>(
    listener: &TcpListener,
    client_role: Role,
    client: ConnectionConfig<F>,
    server_role: Role,
    server: ConnectionConfig<F>,
) -> (
    Result<Connection<F>, ConnectionError>,
    Result<Connection<F>, ConnectionError>,
) {
    let addr = listener.local_addr().expect("listener address");
    let accept = async {
        let (stream, _) = listener.accept().await.expect("accept");
        Connection::accept(stream, server_role, "server-id", server).await
    };
    let connect = async {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Connection::connect(stream, client_role, "client-id", client).await
    };
    tokio::join!(connect, accept)
}

/// A loopback listener on a free port.
pub async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback")
}

/// `body` with its 4-byte big-endian length prefix.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// Reads one frame body, or `None` at the end of the stream.
pub async fn read_raw_frame<R: AsyncRead + Unpin>(io: &mut R) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    io.read_exact(&mut prefix).await.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    io.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Runs the client side of the handshake by hand with the sans-IO functions.
pub async fn raw_client_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    versions: &[Version],
    role: Role,
) -> Negotiated {
    raw_client_handshake_offering(io, versions, role, &[]).await
}

/// [`raw_client_handshake`], the hello offering `features` (protocol/handshake.md §12).
pub async fn raw_client_handshake_offering<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    versions: &[Version],
    role: Role,
    features: &[&str],
) -> Negotiated {
    let hello = Hello::new(versions, role, "raw-client").with_features(features);
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    io.write_all(&frame(&body)).await.expect("write hello");
    let answer = read_raw_frame(io).await.expect("an answer");
    check_answer(&answer, &hello).expect("accepted")
}

/// Runs the server side of the handshake by hand, accepting at `version`.
pub async fn raw_server_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    version: Version,
    role: Role,
) -> Hello {
    raw_server_handshake_taking(io, version, role, &[]).await
}

/// [`raw_server_handshake`], the answer taking `features` (protocol/handshake.md §12).
pub async fn raw_server_handshake_taking<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    version: Version,
    role: Role,
    features: &[&str],
) -> Hello {
    let body = read_raw_frame(io).await.expect("a hello");
    let hello = decode_hello(&body).expect("a valid hello");
    let answer = Answer::Accepted(Accepted {
        version,
        versions: vec![u64::from(version.number())],
        role,
        id: "raw-server".to_string(),
        features: features.iter().map(|f| f.to_string()).collect(),
    });
    let mut out = Vec::new();
    encode_answer(&answer, &mut out);
    io.write_all(&frame(&out)).await.expect("write answer");
    hello
}

/// A server connection of family `F` at `versions`, and the raw stream of a hand-driven client
/// that completed the handshake as `role`.
pub async fn raw_client_and_server<F: Family + Send + 'static>(
    versions: &[Version],
    role: Role,
    server_role: Role,
    server: ConnectionConfig<F>,
) -> (DuplexStream, Connection<F>) {
    raw_client_offering_and_server(versions, role, server_role, server, &[]).await
}

/// [`raw_client_and_server`], the raw client's hello offering `features`.
pub async fn raw_client_offering_and_server<F: Family + Send + 'static>(
    versions: &[Version],
    role: Role,
    server_role: Role,
    server: ConnectionConfig<F>,
    features: &[&str],
) -> (DuplexStream, Connection<F>) {
    let (mut raw, io) = duplex(PIPE);
    let (negotiated, accepted) = tokio::join!(
        raw_client_handshake_offering(&mut raw, versions, role, features),
        Connection::accept(io, server_role, "server-id", server),
    );
    let accepted = accepted.expect("server accepts the raw client");
    assert_eq!(negotiated.close_reason, accepted.tells_close_reason());
    (raw, accepted)
}

/// The frame of a one-way message named `name` with no fields, built by hand (for names the
/// typed encoder refuses to send).
pub fn send_frame_named(name: &str) -> Vec<u8> {
    let mut body = Vec::new();
    rmp::encode::write_array_len(&mut body, 2).expect("vec write");
    rmp::encode::write_uint(&mut body, 0).expect("vec write");
    rmp::encode::write_map_len(&mut body, 1).expect("vec write");
    rmp::encode::write_str(&mut body, name).expect("vec write");
    rmp::encode::write_map_len(&mut body, 0).expect("vec write");
    frame(&body)
}

/// The frame of `env` in `version`, from the library's encoder.
pub fn envelope_frame<F: Family>(env: &Envelope<F>, version: Version) -> Vec<u8> {
    encode_frame(env, version).expect("encodable envelope")
}

/// Asks `message` on `asker` while `answerer` receives it and replies `true`; returns the reply.
pub async fn ask_answered_true<F: Family + Send + 'static>(
    asker: &Connection<F>,
    answerer: &mut Connection<F>,
    message: F,
) -> Result<Reply<F>, ConnectionError> {
    let expected = message.clone();
    let answer = async {
        match answerer.recv().await? {
            Incoming::Ask { id, message } => {
                assert_eq!(message, expected);
                answerer.reply(id, Reply::Bool(true)).await
            }
            other => panic!("expected an ask, got {other:?}"),
        }
    };
    let (reply, answered) = tokio::join!(asker.ask(message), answer);
    answered?;
    reply
}

/// A connected Worker → Master pair at the newest version, to show a failure elsewhere leaves it
/// working.
pub async fn bystander() -> (
    Connection<sparkwire::messages::DeployMessage>,
    Connection<sparkwire::messages::DeployMessage>,
) {
    connected(
        Role::Worker,
        ConnectionConfig::default(),
        Role::Master,
        ConnectionConfig::default(),
    )
    .await
}

/// Proves a pair still works: open on both sides, an ask answered, a message delivered.
pub async fn still_works(
    client: &Connection<sparkwire::messages::DeployMessage>,
    server: &mut Connection<sparkwire::messages::DeployMessage>,
) {
    assert_eq!(client.close_reason(), None);
    assert_eq!(server.close_reason(), None);
    let reply = ask_answered_true(client, server, samples::executor_state_changed().into()).await;
    assert_eq!(reply, Ok(Reply::Bool(true)));
    let heartbeat = sparkwire::messages::DeployMessage::from(samples::heartbeat());
    assert_eq!(client.send(heartbeat.clone()).await, Ok(()));
    assert_eq!(server.recv().await, Ok(Incoming::Message(heartbeat)));
}

#[cfg(feature = "arbitrary")]
use arbitrary::{Arbitrary, Unstructured};

/// A small deterministic generator (xorshift64*), so failures reproduce from the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

#[cfg(feature = "arbitrary")]
/// Random messages of family `F` until every message name has at least `per_name` samples.
pub fn samples_of_every_message<F>(seed: u64, per_name: usize) -> Vec<F>
where
    F: Family + for<'a> Arbitrary<'a>,
{
    let mut rng = Rng::new(seed);
    let mut counts = std::collections::BTreeMap::<&'static str, usize>::new();
    let mut out = Vec::new();
    for _ in 0..200_000 {
        let data = rng.bytes(600);
        let mut u = Unstructured::new(&data);
        if let Ok(m) = F::arbitrary(&mut u) {
            let c = counts.entry(m.name()).or_insert(0);
            if *c < per_name {
                *c += 1;
                out.push(m);
            }
        }
        if counts.len() == F::NAMES.len() && counts.values().all(|c| *c >= per_name) {
            return out;
        }
    }
    panic!("arbitrary did not produce every message: got {counts:?}");
}
