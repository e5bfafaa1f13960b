//! Faults the suite can put between itself and the endpoint under test, to prove that every case
//! can fail: a man-in-the-middle proxy that breaks a correct endpoint's behaviour in one named way.
//! `--fault NAME` (hidden from `--help`) turns one on; the suite's own tests run every target
//! under every fault and check that each case fails under at least one.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{
    client_proof, decode_answer, decode_hello, decode_proof, encode_answer, encode_challenge,
    encode_hello, encode_proof, frame_bytes, fresh_nonce, read_hello, read_server_frame,
    server_proof, Accepted, Answer, Challenge, ClientNext, Hello, Identity, Nonce, Proof, Refusal,
    RefusalReason, Role, Secret, ServerHello,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// One way to break an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The endpoint accepts every hello, whatever it holds (at version 2).
    AcceptAnyHello,
    /// The endpoint chooses the lowest version offered, not the highest; as a client, it offers
    /// only its lowest version but takes any.
    LowestVersion,
    /// The endpoint refuses a peer that offers a single version, claiming it speaks 1 and 2; as
    /// a client, it offers only its highest version but takes any.
    RefuseSingleVersion,
    /// The endpoint declares the wrong role in its handshake frame.
    WrongRole,
    /// The endpoint takes only hellos encoded exactly as sparkwire encodes them, in one segment,
    /// with an id, under 64 KiB; as a client, it writes its hello's keys in reverse order.
    Pedantic,
    /// The endpoint never closes a connection (it stops answering instead).
    KeepOpen,
    /// After the handshake the endpoint sends nothing and never closes.
    Mute,
    /// After the handshake the endpoint sends every frame twice.
    Duplicate,
    /// The endpoint holds a secret but authenticates nobody: as a server it accepts every hello
    /// at once, without a challenge, and takes whatever follows (the proxy proves the secret to
    /// the real endpoint on the suite's behalf); as a client it says hello without asking to
    /// authenticate (the proxy authenticates with the real client). Needs `--secret-file`.
    AuthBypass,
    /// The endpoint checks no proof: as a server it challenges, but takes any client proof,
    /// right or wrong (the proxy replaces the suite's proof with the right one); as a client it
    /// takes any server proof, or none (the proxy shows the real client a right one, and proves
    /// the secret to the suite for it). Needs `--secret-file`.
    AnyProof,
    /// The endpoint's own proof does not verify: as a server its challenge carries a wrong
    /// server proof, as a client it sends a wrong client proof (the proxy flips a bit of the
    /// right one). Needs `--secret-file`.
    BadOwnProof,
    /// The endpoint takes `closeReason` in the handshake but closes connections without the
    /// close envelope it agreed to send (SPEC §8.1): the proxy drops every close envelope.
    SilentClose,
    /// The master does not check whose id a message names (SPEC §14.2): the proxy rewrites the
    /// worker or application id of a Heartbeat, WorkerLatestState, UnregisterApplication,
    /// RequestExecutors or KillExecutors to the one registered over that connection.
    OwnershipUnchecked,
    /// The master redacts nothing in MasterStateResponse (SPEC §14.4): the proxy puts back the
    /// values the suite registered.
    NoRedaction,
    /// The endpoint takes frames nested deeper than 64 levels (SPEC §2): the proxy drops them.
    DeepTaken,
    /// The endpoint refuses frames of exactly 64 levels (SPEC §2): the proxy closes on them.
    DepthOffByOne,
    /// The endpoint takes fields of the wrong type (SPEC §4): the proxy drops frames refused
    /// with InvalidFields for anything but a map's or set's order.
    WrongTypeTaken,
    /// The endpoint takes maps and sets out of order or with a key twice (SPEC §11.3): the proxy
    /// drops the frames refused for it.
    UnorderedTaken,
    /// The master does not kill what a WorkerLatestState lists and it does not know
    /// (SPARK-13604, SPEC §14.2 Z2): the proxy drops KillExecutor and KillDriver for executors
    /// and drivers never launched over that connection.
    No13604,
    /// The master never sends ReconnectWorker (SPEC §14.2 Z2): the proxy drops it.
    NoReconnect,
    /// A server without a secret accepts a hello asking to authenticate (handshake.md §5 step
    /// 4): the proxy removes `auth` and `nonce` from the suite's hello.
    AuthNotConfiguredTaken,
    /// The endpoint's failure envelopes lack their `message` (SPEC §3: `error` is
    /// `{"className": str, "message": str}`): the proxy drops the key. Only the case's judge
    /// (strict decoding of every frame the endpoint sends) sees it.
    FailureWithoutMessage,
    /// The endpoint sends a message off its route (SPEC §14.1): after the first one-way message
    /// it sends on a connection, the proxy adds one its role never sends (a master a Heartbeat, a
    /// worker or application client a KillDriver, a driver a LaunchedExecutor, an executor a
    /// StopExecutor). Only the case's judge (routes of every frame) sees it.
    OffRoute,
}

impl Fault {
    /// True for the faults that break authentication ([`Fault::AuthBypass`],
    /// [`Fault::AnyProof`], [`Fault::BadOwnProof`]).
    pub fn breaks_auth(self) -> bool {
        matches!(
            self,
            Fault::AuthBypass | Fault::AnyProof | Fault::BadOwnProof
        )
    }

    /// True for the faults that break only what a master does (ownership, redaction,
    /// SPARK-13604, ReconnectWorker, its decoder and handshake as the master target checks
    /// them): the other targets' cases of the same kinds fail under the generic faults
    /// (`mute`, `keep-open`, `accept-any-hello`).
    pub fn master_only(self) -> bool {
        matches!(
            self,
            Fault::OwnershipUnchecked
                | Fault::NoRedaction
                | Fault::DeepTaken
                | Fault::DepthOffByOne
                | Fault::WrongTypeTaken
                | Fault::UnorderedTaken
                | Fault::No13604
                | Fault::NoReconnect
                | Fault::AuthNotConfiguredTaken
                | Fault::FailureWithoutMessage
        )
    }

    /// Every fault.
    pub const ALL: [Fault; 23] = [
        Fault::AcceptAnyHello,
        Fault::LowestVersion,
        Fault::RefuseSingleVersion,
        Fault::WrongRole,
        Fault::Pedantic,
        Fault::KeepOpen,
        Fault::Mute,
        Fault::Duplicate,
        Fault::AuthBypass,
        Fault::AnyProof,
        Fault::BadOwnProof,
        Fault::SilentClose,
        Fault::OwnershipUnchecked,
        Fault::NoRedaction,
        Fault::DeepTaken,
        Fault::DepthOffByOne,
        Fault::WrongTypeTaken,
        Fault::UnorderedTaken,
        Fault::No13604,
        Fault::NoReconnect,
        Fault::AuthNotConfiguredTaken,
        Fault::FailureWithoutMessage,
        Fault::OffRoute,
    ];

    /// The fault's name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::AcceptAnyHello => "accept-any-hello",
            Fault::LowestVersion => "lowest-version",
            Fault::RefuseSingleVersion => "refuse-single-version",
            Fault::WrongRole => "wrong-role",
            Fault::Pedantic => "pedantic",
            Fault::KeepOpen => "keep-open",
            Fault::Mute => "mute",
            Fault::Duplicate => "duplicate",
            Fault::AuthBypass => "auth-bypass",
            Fault::AnyProof => "any-proof",
            Fault::BadOwnProof => "bad-own-proof",
            Fault::SilentClose => "silent-close",
            Fault::OwnershipUnchecked => "ownership-unchecked",
            Fault::NoRedaction => "no-redaction",
            Fault::DeepTaken => "deep-taken",
            Fault::DepthOffByOne => "depth-off-by-one",
            Fault::WrongTypeTaken => "wrong-type-taken",
            Fault::UnorderedTaken => "unordered-taken",
            Fault::No13604 => "no-spark-13604",
            Fault::NoReconnect => "no-reconnect",
            Fault::AuthNotConfiguredTaken => "auth-not-configured-taken",
            Fault::FailureWithoutMessage => "failure-without-message",
            Fault::OffRoute => "off-route",
        }
    }

    /// The fault named `name`.
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A running proxy; dropping it stops accepting connections.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which end of each proxied connection the suite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The suite connects (through the proxy) to the endpoint, which listens at the upstream.
    SuiteConnects {
        /// A role the endpoint takes, used when the proxy says hello itself.
        client_role: Role,
        /// The role the endpoint declares.
        server_role: Role,
    },
    /// The endpoint connects (through the proxy) to the suite, which listens at the upstream.
    EndpointConnects,
}

/// Starts a proxy on 127.0.0.1 in front of `upstream`. `secret` is the endpoint's shared
/// secret, which the authentication faults use to stand in for the suite.
pub async fn start(
    fault: Fault,
    upstream: SocketAddr,
    side: Side,
    secret: Option<Secret>,
) -> Result<Proxy, String> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|e| format!("fault proxy: cannot listen: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let task = tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let secret = secret.clone();
            tokio::spawn(async move {
                if let Ok(outbound) = TcpStream::connect(upstream).await {
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (suite, endpoint) = match side {
                        Side::SuiteConnects { .. } => (inbound, outbound),
                        Side::EndpointConnects => (outbound, inbound),
                    };
                    match (fault, side, secret) {
                        (
                            Fault::AuthBypass | Fault::AnyProof | Fault::BadOwnProof,
                            Side::SuiteConnects { server_role, .. },
                            Some(secret),
                        ) => auth_fault(fault, server_role, &secret, suite, endpoint).await,
                        (
                            Fault::AuthBypass | Fault::AnyProof | Fault::BadOwnProof,
                            Side::EndpointConnects,
                            Some(secret),
                        ) => client_auth_fault(fault, &secret, suite, endpoint).await,
                        _ => pipe(fault, side, suite, endpoint).await,
                    }
                }
            });
        }
    });
    Ok(Proxy { addr, task })
}

#[derive(Debug, Default)]
struct State {
    version: Option<Version>,
    /// What [`frame_fault`] remembers of the connection.
    seen: Seen,
    /// The role the client's hello declared.
    client_role: Option<Role>,
    /// Whether the off-route message was added on this connection.
    off_route_sent: bool,
    offered: Vec<u64>,
    swallow_answer: bool,
    dead_suite_side: bool,
}

struct Reader {
    half: OwnedReadHalf,
    buf: BytesMut,
    reads: usize,
}

enum Item {
    Frame(Bytes, usize),
    Oversized(Vec<u8>),
    End,
}

impl Reader {
    async fn next(&mut self, before_handshake: bool) -> Item {
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                let limit = if before_handshake { 65536 } else { 64 << 20 };
                if n > limit {
                    return Item::Oversized(self.buf.split().to_vec());
                }
                if self.buf.len() >= 4 + n {
                    self.buf.advance(4);
                    let reads = std::mem::take(&mut self.reads);
                    return Item::Frame(self.buf.split_to(n).freeze(), reads);
                }
            }
            match self.half.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Item::End,
                Ok(_) => self.reads += 1,
            }
        }
    }
}

/// Under [`Fault::OffRoute`], the frame to add after `body`, a frame of an endpoint of `role`:
/// after its first one-way message on the connection, one its role never sends.
async fn off_route(
    fault: Fault,
    body: &[u8],
    role: Option<Role>,
    st: &Mutex<State>,
) -> Option<Vec<u8>> {
    use sparkwire::messages::{coarse, deploy, CoarseMessage, DeployMessage, EndpointRef};
    use sparkwire::wire::{encode_envelope, Envelope};
    if fault != Fault::OffRoute || !(body.len() >= 2 && body[0] == 0x92 && body[1] == 0x00) {
        return None;
    }
    let mut st = st.lock().await;
    if st.off_route_sent {
        return None;
    }
    st.off_route_sent = true;
    let v = st.version.unwrap_or(Version::V2);
    let mut out = Vec::new();
    let encoded = match role? {
        Role::Master => encode_envelope(
            &Envelope::Send(DeployMessage::from(deploy::Heartbeat::new(
                "worker-off-route".into(),
                EndpointRef::client("Worker"),
            ))),
            v,
            &mut out,
        ),
        Role::Driver => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::LaunchedExecutor::new(
                "1".into(),
            ))),
            v,
            &mut out,
        ),
        Role::Executor => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::StopExecutor::new())),
            v,
            &mut out,
        ),
        _ => encode_envelope(
            &Envelope::Send(DeployMessage::from(deploy::KillDriver::new(
                "driver-off-route".into(),
            ))),
            v,
            &mut out,
        ),
    };
    encoded.ok().map(|()| framed(&out))
}

/// Whether a frame body after the handshake is a close envelope, `[4, …]` (SPEC §8.1).
fn is_close_envelope(body: &[u8]) -> bool {
    body.len() >= 2 && body[0] == 0x92 && body[1] == 0x04
}

fn framed(body: &[u8]) -> Vec<u8> {
    crate::peer::frame(body)
}

fn answer_bytes(a: &Answer) -> Vec<u8> {
    let mut b = Vec::new();
    encode_answer(a, &mut b);
    framed(&b)
}

fn hello_bytes(h: &Hello) -> Vec<u8> {
    let mut b = Vec::new();
    encode_hello(h, &mut b);
    framed(&b)
}

type Writer = Arc<Mutex<Option<OwnedWriteHalf>>>;

async fn write(w: &Writer, bytes: &[u8]) {
    let mut g = w.lock().await;
    if let Some(h) = g.as_mut() {
        if h.write_all(bytes).await.is_err() {
            *g = None;
        }
    }
}

async fn close(w: &Writer) {
    let mut g = w.lock().await;
    if let Some(mut h) = g.take() {
        let _ = h.shutdown().await;
    }
}

fn other_role(r: Role) -> Role {
    if r == Role::Worker {
        Role::Ui
    } else {
        Role::Worker
    }
}

async fn pipe(fault: Fault, side: Side, suite: TcpStream, endpoint: TcpStream) {
    let suite_is_client = matches!(side, Side::SuiteConnects { .. });
    let (client, server) = if suite_is_client {
        (suite, endpoint)
    } else {
        (endpoint, suite)
    };
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let cw: Writer = Arc::new(Mutex::new(Some(cw)));
    let sw: Writer = Arc::new(Mutex::new(Some(sw)));
    let st = Arc::new(Mutex::new(State::default()));
    let keep = matches!(fault, Fault::KeepOpen | Fault::Mute);

    // The client's frames, to the server.
    let up = {
        let (from, to, back, st) = (cr, sw.clone(), cw.clone(), st.clone());
        async move {
            let mut r = Reader {
                half: from,
                buf: BytesMut::new(),
                reads: 0,
            };
            let mut first = true;
            loop {
                let handshaking = st.lock().await.version.is_none() && first;
                match r.next(handshaking).await {
                    Item::End => {
                        // An endpoint that is the client: under keep-open and mute its close is
                        // not passed on to the suite.
                        if suite_is_client || !keep {
                            close(&to).await;
                        }
                        break;
                    }
                    Item::Oversized(raw) => {
                        if first && suite_is_client && fault == Fault::AcceptAnyHello {
                            accept_any(&st, &back, &to, side).await;
                            // Whatever follows is dropped: the endpoint "took" the frame.
                            loop {
                                if let Item::End = r.next(false).await {
                                    break;
                                }
                            }
                            break;
                        }
                        write(&to, &raw).await;
                        let mut rest = vec![0u8; 8192];
                        loop {
                            match r.half.read(&mut rest).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => write(&to, &rest[..n]).await,
                            }
                        }
                        close(&to).await;
                        break;
                    }
                    Item::Frame(body, reads) => {
                        if first {
                            first = false;
                            let hello = decode_hello(&body);
                            if let Ok(h) = &hello {
                                let mut st = st.lock().await;
                                st.offered = h.versions.clone();
                                st.client_role = Some(h.role);
                            }
                            if let Ok(h) = &hello {
                                st.lock().await.seen.role = Some(h.role);
                            }
                            if suite_is_client {
                                match fault {
                                    Fault::AuthNotConfiguredTaken => {
                                        if let Ok(mut h) = hello {
                                            h.auth = None;
                                            write(&to, &hello_bytes(&h)).await;
                                            continue;
                                        }
                                    }
                                    Fault::AcceptAnyHello => {
                                        accept_any(&st, &back, &to, side).await;
                                        continue;
                                    }
                                    Fault::LowestVersion => {
                                        if let Ok(mut h) = hello {
                                            if let Some(min) = h
                                                .versions
                                                .iter()
                                                .copied()
                                                .filter(|v| Version::from_number(*v).is_some())
                                                .min()
                                            {
                                                h.versions = vec![min];
                                            }
                                            write(&to, &hello_bytes(&h)).await;
                                            continue;
                                        }
                                    }
                                    Fault::RefuseSingleVersion => {
                                        if let Ok(h) = &hello {
                                            let mut vs = h.versions.clone();
                                            vs.sort_unstable();
                                            vs.dedup();
                                            if vs.len() == 1 {
                                                refuse(&back, RefusalReason::NoCommonVersion).await;
                                                st.lock().await.dead_suite_side = true;
                                                close(&to).await;
                                                break;
                                            }
                                        }
                                    }
                                    Fault::Pedantic => {
                                        let canonical = hello.as_ref().ok().map(|h| {
                                            let mut b = Vec::new();
                                            encode_hello(h, &mut b);
                                            b
                                        });
                                        let ok = canonical.as_deref() == Some(&body[..])
                                            && hello.as_ref().is_ok_and(|h| !h.id.is_empty())
                                            && body.len() < 65536
                                            && reads <= 1
                                            && hello.as_ref().is_ok_and(|h| {
                                                h.versions
                                                    .iter()
                                                    .all(|v| Version::from_number(*v).is_some())
                                            });
                                        if !ok {
                                            refuse(&back, RefusalReason::BadMagic).await;
                                            st.lock().await.dead_suite_side = true;
                                            close(&to).await;
                                            break;
                                        }
                                    }
                                    _ => {}
                                }
                            } else if let Ok(mut h) = hello {
                                match fault {
                                    Fault::LowestVersion => {
                                        if let Some(min) = h
                                            .versions
                                            .iter()
                                            .copied()
                                            .filter(|v| Version::from_number(*v).is_some())
                                            .min()
                                        {
                                            h.versions = vec![min];
                                        }
                                        write(&to, &hello_bytes(&h)).await;
                                        continue;
                                    }
                                    Fault::RefuseSingleVersion => {
                                        // As a client: it claims to speak only its highest version.
                                        if let Some(max) = h
                                            .versions
                                            .iter()
                                            .copied()
                                            .filter(|v| Version::from_number(*v).is_some())
                                            .max()
                                        {
                                            h.versions = vec![max];
                                        }
                                        write(&to, &hello_bytes(&h)).await;
                                        continue;
                                    }
                                    Fault::Duplicate => {
                                        // An eager client: its hello twice, before any answer.
                                        write(&to, &framed(&body)).await;
                                        write(&to, &framed(&body)).await;
                                        continue;
                                    }
                                    Fault::WrongRole => {
                                        h.role = other_role(h.role);
                                        write(&to, &hello_bytes(&h)).await;
                                        continue;
                                    }
                                    Fault::Pedantic => {
                                        // The same hello with its keys in reverse order.
                                        let entries = crate::mp::hello_entries(
                                            &h.versions,
                                            h.role.name(),
                                            &h.id,
                                        );
                                        let mut e = entries;
                                        e.reverse();
                                        write(&to, &framed(&crate::mp::map(&e))).await;
                                        continue;
                                    }
                                    _ => {}
                                }
                            }
                            write(&to, &framed(&body)).await;
                            continue;
                        }
                        if !suite_is_client && fault == Fault::Mute {
                            continue;
                        }
                        let body = if suite_is_client {
                            match frame_fault(fault, true, body, &st).await {
                                Act::Forward(b) => b,
                                Act::Drop => continue,
                                Act::Close => {
                                    close(&to).await;
                                    close(&back).await;
                                    break;
                                }
                            }
                        } else {
                            body
                        };
                        if !suite_is_client
                            && fault == Fault::SilentClose
                            && is_close_envelope(&body)
                        {
                            continue;
                        }
                        write(&to, &framed(&body)).await;
                        if !suite_is_client {
                            let role = st.lock().await.client_role;
                            if let Some(extra) = off_route(fault, &body, role, &st).await {
                                write(&to, &extra).await;
                            }
                        }
                        if !suite_is_client && fault == Fault::Duplicate {
                            write(&to, &framed(&body)).await;
                        }
                    }
                }
            }
        }
    };

    // The server's frames, to the client.
    let down = {
        let (from, to, st) = (sr, cw.clone(), st.clone());
        async move {
            let mut r = Reader {
                half: from,
                buf: BytesMut::new(),
                reads: 0,
            };
            let mut first = true;
            loop {
                let handshaking = first;
                match r.next(handshaking).await {
                    Item::End | Item::Oversized(_) => {
                        // An endpoint that is the server: under keep-open and mute the suite
                        // sees no close.
                        if !(suite_is_client && keep) {
                            close(&to).await;
                        }
                        break;
                    }
                    Item::Frame(body, _) => {
                        if first {
                            first = false;
                            let swallow = st.lock().await.swallow_answer;
                            let answer = decode_answer(&body);
                            if let Ok(Answer::Accepted(a)) = &answer {
                                st.lock().await.version = Some(a.version);
                            }
                            if swallow {
                                continue;
                            }
                            if suite_is_client && fault == Fault::WrongRole {
                                if let Ok(Answer::Accepted(mut a)) = answer {
                                    a.role = other_role(a.role);
                                    write(&to, &answer_bytes(&Answer::Accepted(a))).await;
                                    continue;
                                }
                            }
                            write(&to, &framed(&body)).await;
                            continue;
                        }
                        let endpoint_to_suite = suite_is_client;
                        if endpoint_to_suite && fault == Fault::Mute {
                            continue;
                        }
                        let body = if endpoint_to_suite {
                            match frame_fault(fault, false, body, &st).await {
                                Act::Forward(b) => b,
                                Act::Drop => continue,
                                Act::Close => {
                                    close(&to).await;
                                    break;
                                }
                            }
                        } else {
                            body
                        };
                        if endpoint_to_suite
                            && fault == Fault::SilentClose
                            && is_close_envelope(&body)
                        {
                            continue;
                        }
                        write(&to, &framed(&body)).await;
                        if let (true, Side::SuiteConnects { server_role, .. }) =
                            (endpoint_to_suite, side)
                        {
                            if let Some(extra) =
                                off_route(fault, &body, Some(server_role), &st).await
                            {
                                write(&to, &extra).await;
                            }
                        }
                        if endpoint_to_suite && fault == Fault::Duplicate {
                            write(&to, &framed(&body)).await;
                        }
                    }
                }
            }
        }
    };
    tokio::join!(up, down);
    if keep {
        // An endpoint that never closes: the suite's side stays open a while longer.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    }
    drop((cw, sw));
}

async fn accept_any(st: &Arc<Mutex<State>>, back: &Writer, to: &Writer, side: Side) {
    let Side::SuiteConnects {
        client_role,
        server_role,
    } = side
    else {
        return;
    };
    let offered = st.lock().await.offered.clone();
    let version = if offered.contains(&2) || offered.is_empty() || !offered.contains(&1) {
        Version::V2
    } else {
        Version::V1
    };
    write(
        back,
        &answer_bytes(&Answer::Accepted(Accepted {
            version,
            versions: vec![1, 2],
            role: server_role,
            id: String::new(),
            features: Vec::new(),
        })),
    )
    .await;
    st.lock().await.swallow_answer = true;
    write(
        to,
        &hello_bytes(&Hello::new(&[version], client_role, "proxy")),
    )
    .await;
}

async fn refuse(back: &Writer, reason: RefusalReason) {
    write(
        back,
        &answer_bytes(&Answer::Refused(Refusal {
            reason,
            message: "refused by the fault proxy".into(),
            versions: vec![1, 2],
        })),
    )
    .await;
    close(back).await;
}

/// Reads one frame body of at most the pre-handshake limit.
async fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).await.ok()?;
    let n = u32::from_be_bytes(prefix) as usize;
    if n > 65536 {
        return None;
    }
    let mut body = vec![0u8; n];
    stream.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Reads a client's hello: its frame body and what it says.
async fn read_hello_frame(stream: &mut TcpStream) -> Option<(Vec<u8>, Hello)> {
    let body = read_frame(stream).await?;
    let hello = decode_hello(&body).ok()?;
    Some((body, hello))
}

/// The authentication faults: the proxy authenticates to the endpoint itself and lets the suite
/// through unauthenticated ([`Fault::AuthBypass`]) or with any proof ([`Fault::AnyProof`]).
async fn auth_fault(
    fault: Fault,
    server_role: Role,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut suite).await else {
        return;
    };
    if fault == Fault::BadOwnProof {
        // The hello passes as it is; the endpoint's challenge reaches the suite with a wrong
        // server proof.
        let hello_frame = frame_bytes(&hello_body);
        let _ = endpoint.write_all(&hello_frame).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let nonce = crate::mp::challenge_nonce(&challenge)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok());
        let shown = match nonce {
            Some(nonce) => {
                let mut proof = server_proof(secret, &hello_frame, &nonce);
                proof[0] ^= 1;
                let mut out = Vec::new();
                encode_challenge(&Challenge { nonce, proof }, &mut out);
                out
            }
            None => challenge,
        };
        let _ = suite.write_all(&frame_bytes(&shown)).await;
    } else if fault == Fault::AnyProof {
        // Hello and challenge pass as they are; the suite's proof becomes the right one.
        let _ = endpoint.write_all(&frame_bytes(&hello_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let _ = suite.write_all(&frame_bytes(&challenge)).await;
        let Some(next) = read_frame(&mut suite).await else {
            return;
        };
        let forwarded = if decode_proof(&next).is_ok() {
            let proof = Proof {
                proof: client_proof(secret, &frame_bytes(&hello_body), &frame_bytes(&challenge)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            out
        } else {
            next
        };
        let _ = endpoint.write_all(&frame_bytes(&forwarded)).await;
    } else {
        // The suite is accepted at once; the proxy's own authenticated hello goes upstream.
        let version = if hello.versions.contains(&2) || !hello.versions.contains(&1) {
            Version::V2
        } else {
            Version::V1
        };
        let accepted = Answer::Accepted(Accepted {
            version,
            versions: vec![1, 2],
            role: server_role,
            id: String::new(),
            features: Vec::new(),
        });
        let _ = suite.write_all(&answer_bytes(&accepted)).await;
        let Ok(nonce) = fresh_nonce() else {
            return;
        };
        let own = Hello::new(&[version], hello.role, hello.id.clone()).with_auth(nonce);
        let mut own_body = Vec::new();
        encode_hello(&own, &mut own_body);
        let _ = endpoint.write_all(&frame_bytes(&own_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let local = Identity::new(hello.role, hello.id.clone())
            .with_versions(&[version])
            .with_secret(Some(secret.clone()));
        let Ok(ClientNext::SendProof(proof)) =
            read_server_frame(&challenge, &own, &own_body, &local)
        else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&proof)).await;
        // The endpoint's answer is the proxy's, not the suite's.
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}

/// A challenge body that proves `secret` for the hello frame `hello_frame` with `nonce`.
fn right_challenge(secret: &Secret, hello_frame: &[u8], nonce: Nonce) -> Vec<u8> {
    let mut out = Vec::new();
    let challenge = Challenge {
        nonce,
        proof: server_proof(secret, hello_frame, &nonce),
    };
    encode_challenge(&challenge, &mut out);
    out
}

/// The authentication faults of a client (the endpoint connects to the suite): the proxy does
/// the endpoint's authentication for it, so that the suite sees a client that does not
/// authenticate ([`Fault::AuthBypass`]) or one that takes any server proof ([`Fault::AnyProof`]).
async fn client_auth_fault(
    fault: Fault,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut endpoint).await else {
        return;
    };
    let hello_frame = frame_bytes(&hello_body);
    if hello.auth.is_none() {
        // A client that does not authenticate anyway: nothing to break.
        let _ = suite.write_all(&hello_frame).await;
    } else if fault == Fault::BadOwnProof {
        // Hello and challenge pass as they are; the endpoint's proof reaches the suite wrong.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&first)).await;
        let Some(next) = read_frame(&mut endpoint).await else {
            return;
        };
        let sent = match decode_proof(&next) {
            Ok(mut proof) => {
                proof.proof[0] ^= 1;
                let mut out = Vec::new();
                encode_proof(&proof, &mut out);
                out
            }
            Err(_) => next,
        };
        let _ = suite.write_all(&frame_bytes(&sent)).await;
    } else if fault == Fault::AuthBypass {
        // The proxy is the endpoint's server: it challenges it and takes its proof ...
        let local = Identity::new(Role::Driver, "proxy").with_secret(Some(secret.clone()));
        let ServerHello::Challenge(auth) = read_hello(&hello_body, &local, |_| true, fresh_nonce)
        else {
            return;
        };
        let _ = endpoint
            .write_all(&frame_bytes(auth.challenge_body()))
            .await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        // ... and says hello to the suite without asking to authenticate; the suite's answer
        // goes to the endpoint as the answer to its proof.
        let mut plain = hello.clone();
        plain.auth = None;
        let _ = suite.write_all(&hello_bytes(&plain)).await;
    } else {
        // Any proof: the hello passes as it is; the endpoint is shown a right proof whatever
        // the suite sends, and the suite gets the endpoint's proof made right.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let nonce = match crate::mp::challenge_nonce(&first)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok())
        {
            Some(n) => Some(n),
            None if decode_answer(&first).is_ok() => fresh_nonce().ok(),
            None => None,
        };
        let Some(nonce) = nonce else {
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
            let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
            return;
        };
        let shown = right_challenge(secret, &hello_frame, nonce);
        let _ = endpoint.write_all(&frame_bytes(&shown)).await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        if crate::mp::challenge_nonce(&first).is_some() {
            let proof = Proof {
                proof: client_proof(secret, &hello_frame, &frame_bytes(&first)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            let _ = suite.write_all(&frame_bytes(&out)).await;
        } else {
            // The suite accepted without a challenge: that acceptance is the endpoint's answer.
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}

// ---- faults on the frames after the handshake (the suite is the client) ----

/// What the proxy remembers of one connection for [`frame_fault`].
#[derive(Debug, Default)]
struct Seen {
    role: Option<Role>,
    own_worker: Option<String>,
    own_app: Option<String>,
    launched_executors: std::collections::BTreeSet<(String, i32)>,
    launched_drivers: std::collections::BTreeSet<String>,
}

/// What to do with one frame.
enum Act {
    Forward(Bytes),
    Drop,
    Close,
}

/// The values the suite registered, by their redacted form: what [`Fault::NoRedaction`] puts
/// back (all connections of the process share it: the UI that reads is not the client that
/// registered).
fn unredacted() -> &'static std::sync::Mutex<std::collections::BTreeMap<String, String>> {
    static MAP: std::sync::OnceLock<std::sync::Mutex<std::collections::BTreeMap<String, String>>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(Default::default)
}

const REDACTED: &str = "*********(redacted)";

/// The frame-level faults: `to_endpoint` says which way `body` goes (the suite is the client).
async fn frame_fault(fault: Fault, to_endpoint: bool, body: Bytes, st: &Mutex<State>) -> Act {
    use sparkwire::messages::DeployMessage as D;
    use sparkwire::wire::{decode_envelope, encode_envelope, error_kind, Envelope, Error};
    let (version, role) = {
        let g = st.lock().await;
        (g.version, g.seen.role)
    };
    let Some(version) = version else {
        return Act::Forward(body);
    };
    let deploy = role.is_none_or(|r| r.family() == "deploy");
    let encode = |env: &Envelope<D>| {
        let mut out = Vec::new();
        match encode_envelope(env, version, &mut out) {
            Ok(()) => Act::Forward(Bytes::from(out)),
            Err(_) => Act::Forward(body.clone()),
        }
    };
    let decoded = if deploy {
        decode_envelope::<D>(&body, version).map(Some)
    } else {
        decode_envelope::<sparkwire::messages::CoarseMessage>(&body, version).map(|_| None)
    };
    match (fault, to_endpoint, decoded) {
        (Fault::DeepTaken, true, Err(Error::TooDeep { .. })) => Act::Drop,
        (Fault::DepthOffByOne, true, Ok(_)) => {
            // 64 levels exactly: one more array around it is too deep.
            let mut wrapped = vec![0x91];
            wrapped.extend_from_slice(&body);
            match sparkwire::wire::msgpack::value_len(&wrapped) {
                Err(Error::TooDeep { .. }) => Act::Close,
                _ => Act::Forward(body),
            }
        }
        (Fault::WrongTypeTaken | Fault::UnorderedTaken, true, Err(e))
            if error_kind(&e) == "InvalidFields" =>
        {
            let order = e.to_string().contains("distinct and ascending");
            if order == (fault == Fault::UnorderedTaken) {
                Act::Drop
            } else {
                Act::Forward(body)
            }
        }
        (Fault::OwnershipUnchecked, true, Ok(Some(env))) => {
            let mut g = st.lock().await;
            let (w, a) = (g.seen.own_worker.clone(), g.seen.own_app.clone());
            let rewritten = match env {
                Envelope::Send(D::RegisterWorker(r)) => {
                    g.seen.own_worker = Some(r.id.clone());
                    return Act::Forward(body);
                }
                Envelope::Send(D::Heartbeat(mut h)) if w.is_some() => {
                    h.worker_id = w.unwrap_or_default();
                    Envelope::Send(D::Heartbeat(h))
                }
                Envelope::Send(D::WorkerLatestState(mut l)) if w.is_some() => {
                    l.id = w.unwrap_or_default();
                    Envelope::Send(D::WorkerLatestState(l))
                }
                Envelope::Send(D::UnregisterApplication(mut u)) if a.is_some() => {
                    u.app_id = a.unwrap_or_default();
                    Envelope::Send(D::UnregisterApplication(u))
                }
                Envelope::Ask {
                    id,
                    message: D::RequestExecutors(mut r),
                } if a.is_some() => {
                    r.app_id = a.unwrap_or_default();
                    Envelope::Ask {
                        id,
                        message: D::RequestExecutors(r),
                    }
                }
                Envelope::Ask {
                    id,
                    message: D::KillExecutors(mut k),
                } if a.is_some() => {
                    k.app_id = a.unwrap_or_default();
                    Envelope::Ask {
                        id,
                        message: D::KillExecutors(k),
                    }
                }
                _ => return Act::Forward(body),
            };
            drop(g);
            encode(&rewritten)
        }
        (
            Fault::OwnershipUnchecked,
            false,
            Ok(Some(Envelope::Send(D::RegisteredApplication(r)))),
        ) => {
            st.lock().await.seen.own_app = Some(r.app_id.clone());
            Act::Forward(body)
        }
        (Fault::NoRedaction, true, Ok(Some(Envelope::Send(D::RegisterApplication(r))))) => {
            let cmd = &r.app_description.command;
            if let Ok(mut m) = unredacted().lock() {
                for (k, v) in &cmd.environment {
                    m.insert(format!("env {k}"), v.clone());
                }
                for o in cmd.java_opts.iter().chain(&cmd.arguments) {
                    if let Some((k, _)) = o.split_once('=') {
                        m.insert(format!("{k}={REDACTED}"), o.clone());
                    }
                }
            }
            Act::Forward(body)
        }
        (
            Fault::NoRedaction,
            false,
            Ok(Some(Envelope::Reply {
                id,
                reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(mut s)),
            })),
        ) => {
            let Ok(m) = unredacted().lock().map(|m| m.clone()) else {
                return Act::Forward(body);
            };
            for a in s.active_apps.iter_mut().chain(s.completed_apps.iter_mut()) {
                let cmd = &mut a.desc.command;
                for (k, v) in cmd.environment.iter_mut() {
                    if let Some(orig) = m.get(&format!("env {k}")) {
                        v.clone_from(orig);
                    }
                }
                for o in cmd.java_opts.iter_mut().chain(cmd.arguments.iter_mut()) {
                    if let Some(orig) = m.get(o.as_str()) {
                        o.clone_from(orig);
                    }
                }
            }
            encode(&Envelope::Reply {
                id,
                reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(s)),
            })
        }
        (Fault::No13604, false, Ok(Some(Envelope::Send(m)))) => {
            let mut g = st.lock().await;
            match m {
                D::LaunchExecutor(l) => {
                    g.seen.launched_executors.insert((l.app_id, l.exec_id));
                    Act::Forward(body)
                }
                D::LaunchDriver(l) => {
                    g.seen.launched_drivers.insert(l.driver_id);
                    Act::Forward(body)
                }
                D::KillExecutor(k)
                    if !g
                        .seen
                        .launched_executors
                        .contains(&(k.app_id.clone(), k.exec_id)) =>
                {
                    Act::Drop
                }
                D::KillDriver(k) if !g.seen.launched_drivers.contains(&k.driver_id) => Act::Drop,
                _ => Act::Forward(body),
            }
        }
        (Fault::NoReconnect, false, Ok(Some(Envelope::Send(D::ReconnectWorker(_))))) => Act::Drop,
        (Fault::FailureWithoutMessage, false, _) => {
            // [3, id, {"className": …, "message": …}] → [3, id, {"className": …}], any family.
            let failure = if deploy {
                match decode_envelope::<D>(&body, version) {
                    Ok(Envelope::Failure { id, error }) => Some((id, error.class_name)),
                    _ => None,
                }
            } else {
                match decode_envelope::<sparkwire::messages::CoarseMessage>(&body, version) {
                    Ok(Envelope::Failure { id, error }) => Some((id, error.class_name)),
                    _ => None,
                }
            };
            match failure {
                Some((id, class)) => Act::Forward(Bytes::from(crate::mp::arr(&[
                    crate::mp::u(3),
                    crate::mp::u(id),
                    crate::mp::map(&[("className", crate::mp::s(&class))]),
                ]))),
                None => Act::Forward(body),
            }
        }
        _ => Act::Forward(body),
    }
}
