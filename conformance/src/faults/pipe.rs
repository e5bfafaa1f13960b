//! The proxy's loop for every fault but the authentication ones, by phase: each direction of a
//! connection reads frames until its stream ends, and hands each to the phase it belongs to:
//! the client's hello ([`client_hello`]) and the server's answer ([`server_answer`]), each frame
//! after them ([`client_frame`], [`server_frame`]), a frame over the limit
//! ([`client_oversized`]), and the end of a stream ([`client_ended`], [`server_ended`]). The
//! fault's [`Behaviour`] decides at each.

use std::sync::{Arc, Mutex as StdMutex};

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{
    decode_answer, decode_hello, Accepted, Answer, Hello, Refusal, RefusalReason, Role,
};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::behaviour::{lock, Act, Behaviour, HelloAct};
use super::proxy::{Side, State};
use super::wire::{answer_bytes, close, framed, hello_bytes, write, Item, Reader, Writer};

/// One proxied connection: the fault's behaviour, which end the suite is, and what the proxy
/// knows of it.
struct Conn {
    behaviour: &'static dyn Behaviour,
    side: Side,
    /// The suite connects (the endpoint listens).
    suite_is_client: bool,
    /// The fault keeps the suite's side open ([`Behaviour::keeps_open`]).
    keep: bool,
    st: Arc<StdMutex<State>>,
}

/// Runs one connection through the fault: the client's frames to the server and the server's
/// to the client, until both streams end.
pub(super) async fn pipe(
    behaviour: &'static dyn Behaviour,
    side: Side,
    suite: TcpStream,
    endpoint: TcpStream,
) {
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
    let c = Conn {
        behaviour,
        side,
        suite_is_client,
        keep: behaviour.keeps_open(),
        st: Arc::new(StdMutex::new(State::default())),
    };
    tokio::join!(
        client_to_server(&c, cr, &sw, &cw),
        server_to_client(&c, sr, &cw, &sw)
    );
    if c.keep {
        // An endpoint that never closes: the suite's side stays open a while longer.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    }
    drop((cw, sw));
}

// ---- the client's frames, to the server ----

/// The client's frames to the server (`to`; `back` is the client): its hello, then every frame,
/// until its stream ends or a phase closes the connection.
async fn client_to_server(c: &Conn, half: OwnedReadHalf, to: &Writer, back: &Writer) {
    let mut r = Reader::new(half);
    let mut first = true;
    loop {
        let handshaking = lock(&c.st).version.is_none() && first;
        let go_on = match r.next(handshaking).await {
            Item::End => {
                client_ended(c, to).await;
                false
            }
            Item::Oversized(raw) => {
                client_oversized(c, &mut r, raw, first, to, back).await;
                false
            }
            Item::Frame(body, reads) if first => {
                first = false;
                client_hello(c, body, reads, to, back).await
            }
            Item::Frame(body, _) => client_frame(c, body, to, back).await,
        };
        if !go_on {
            break;
        }
    }
}

/// The client's hello: remembered, then passed on or replaced as the fault says. False when
/// the connection is closed.
async fn client_hello(c: &Conn, body: Bytes, reads: usize, to: &Writer, back: &Writer) -> bool {
    let hello = decode_hello(&body);
    if let Ok(h) = &hello {
        let mut g = lock(&c.st);
        g.offered = h.versions.clone();
        g.client_role = Some(h.role);
        g.seen.role = Some(h.role);
    }
    if !c.suite_is_client {
        let instead = hello
            .ok()
            .and_then(|h| c.behaviour.endpoint_hello(h, &body));
        match instead {
            Some(bytes) => write(to, &bytes).await,
            None => write(to, &framed(&body)).await,
        }
        return true;
    }
    match c
        .behaviour
        .suite_hello(hello.as_ref().map_err(|_| ()), &body, reads)
    {
        HelloAct::Pass => write(to, &framed(&body)).await,
        HelloAct::Send(bytes) => write(to, &bytes).await,
        HelloAct::AcceptAny => {
            let v = accept_any(&c.st, back, to, c.side).await;
            let role = lock(&c.st).client_role;
            let first = c.behaviour.first_frames(role, v);
            if !first.is_empty() {
                write(back, &first).await;
            }
        }
        HelloAct::Refuse(reason) => {
            refuse(back, reason).await;
            lock(&c.st).dead_suite_side = true;
            close(to).await;
            return false;
        }
    }
    true
}

/// A frame of the client's after its hello. False when the connection is closed.
async fn client_frame(c: &Conn, body: Bytes, to: &Writer, back: &Writer) -> bool {
    if !c.suite_is_client {
        let role = lock(&c.st).client_role;
        endpoint_frame(c.behaviour, body, &c.st, false, role, to).await;
        return true;
    }
    suite_frame(c.behaviour.suite_sent(body, &c.st), to, back).await
}

/// A frame over the limit from the client: an endpoint that takes an oversized hello accepts the
/// suite and drops what follows; otherwise the bytes pass as they are and the connection ends.
async fn client_oversized(
    c: &Conn,
    r: &mut Reader,
    raw: Vec<u8>,
    first: bool,
    to: &Writer,
    back: &Writer,
) {
    if first && c.suite_is_client && c.behaviour.accepts_oversized_hello() {
        accept_any(&c.st, back, to, c.side).await;
        // Whatever follows is dropped: the endpoint "took" the frame.
        while !matches!(r.next(false).await, Item::End) {}
        return;
    }
    write(to, &raw).await;
    let mut rest = vec![0u8; 8192];
    loop {
        match r.half.read(&mut rest).await {
            Ok(0) | Err(_) => break,
            Ok(n) => write(to, &rest[..n]).await,
        }
    }
    close(to).await;
}

/// The client's stream ended: what the fault adds, then the close passed on (but for an
/// endpoint's close the fault hides).
async fn client_ended(c: &Conn, to: &Writer) {
    if !c.suite_is_client {
        let last = c.behaviour.endpoint_ends(&c.st);
        if !last.is_empty() {
            write(to, &last).await;
        }
    }
    if c.suite_is_client {
        let role = lock(&c.st).client_role;
        if let Some(d) = c.behaviour.suite_end_delay(role) {
            tokio::time::sleep(d).await;
        }
    }
    // An endpoint that is the client: under keep-open and mute its close is not passed on to
    // the suite.
    if c.suite_is_client || !c.keep {
        close(to).await;
    }
}

// ---- the server's frames, to the client ----

/// The server's frames to the client (`to`; `back` is the server): its answer, then every
/// frame, until its stream ends or a phase closes the connection.
async fn server_to_client(c: &Conn, half: OwnedReadHalf, to: &Writer, back: &Writer) {
    let mut r = Reader::new(half);
    let mut first = true;
    loop {
        let go_on = match r.next(first).await {
            Item::End | Item::Oversized(_) => {
                server_ended(c, to).await;
                false
            }
            Item::Frame(body, _) => {
                if c.suite_is_client {
                    if let Some(d) = c.behaviour.endpoint_delay() {
                        tokio::time::sleep(d).await;
                    }
                }
                if first {
                    first = false;
                    server_answer(c, body, to).await;
                    true
                } else {
                    server_frame(c, body, to, back).await
                }
            }
        };
        if !go_on {
            break;
        }
    }
}

/// The server's answer to the hello: the version remembered, then swallowed (the proxy answered
/// itself), passed on, or replaced as the fault says.
async fn server_answer(c: &Conn, body: Bytes, to: &Writer) {
    let answer = decode_answer(&body);
    let swallow = {
        let mut g = lock(&c.st);
        if let Ok(Answer::Accepted(a)) = &answer {
            g.version = Some(a.version);
        }
        g.swallow_answer
    };
    if swallow {
        return;
    }
    if let (Ok(Answer::Refused(_)), true) = (&answer, c.suite_is_client) {
        if let Some(bytes) = c.behaviour.refusal(&body) {
            write(to, &bytes).await;
            return;
        }
    }
    let instead = match &answer {
        Ok(Answer::Accepted(a)) if c.suite_is_client => c.behaviour.acceptance(a),
        _ => None,
    };
    match instead {
        Some(a) => write(to, &answer_bytes(&Answer::Accepted(a))).await,
        None => write(to, &framed(&body)).await,
    }
}

/// A frame of the server's after its answer. False when the connection is closed.
async fn server_frame(c: &Conn, body: Bytes, to: &Writer, back: &Writer) -> bool {
    if !c.suite_is_client {
        // The suite's frames to an endpoint that connected.
        return suite_frame(c.behaviour.suite_sent_to_client(body, &c.st), to, back).await;
    }
    let role = match c.side {
        Side::SuiteConnects { server_role, .. } => Some(server_role),
        Side::EndpointConnects => None,
    };
    if !endpoint_frame(c.behaviour, body, &c.st, true, role, to).await {
        close(to).await;
        return false;
    }
    true
}

/// The server's stream ended: what the fault adds, then the close passed on (but for an
/// endpoint's close the fault hides).
async fn server_ended(c: &Conn, to: &Writer) {
    if c.suite_is_client {
        let last = c.behaviour.endpoint_ends(&c.st);
        if !last.is_empty() {
            write(to, &last).await;
        }
    }
    // An endpoint that is the server: under keep-open and mute the suite sees no close.
    let hide = c.keep || c.behaviour.hides_close_of(lock(&c.st).client_role);
    if !(c.suite_is_client && hide) {
        close(to).await;
    }
}

// ---- applying the fault to a frame ----

/// A frame of the suite's after the handshake, as the fault's verdict on it says: passed on,
/// dropped, or both sides closed (false).
async fn suite_frame(act: Act, to: &Writer, back: &Writer) -> bool {
    match act {
        Act::Forward(b) => write(to, &framed(&b)).await,
        Act::Drop => {}
        Act::Close => {
            close(to).await;
            close(back).await;
            return false;
        }
    }
    true
}

/// A frame of the endpoint's after the handshake, to the suite: the behaviour's verdict on it,
/// then what it adds. Returns false when the connection is to close.
async fn endpoint_frame(
    behaviour: &dyn Behaviour,
    body: Bytes,
    st: &StdMutex<State>,
    endpoint_listens: bool,
    role: Option<Role>,
    to: &Writer,
) -> bool {
    let body = match behaviour.endpoint_sent(body, st, endpoint_listens) {
        Act::Forward(b) => b,
        Act::Drop => return true,
        Act::Close => return false,
    };
    write(to, &framed(&body)).await;
    let extra = behaviour.after_endpoint_frame(&body, role, st);
    if !extra.is_empty() {
        write(to, &extra).await;
    }
    true
}

// ---- the proxy's own answers ----

/// Accepts the suite at once and says the proxy's own hello upstream; returns the version
/// accepted.
pub(super) async fn accept_any(
    st: &StdMutex<State>,
    back: &Writer,
    to: &Writer,
    side: Side,
) -> Version {
    let Side::SuiteConnects {
        client_role,
        server_role,
    } = side
    else {
        return Version::V2;
    };
    let offered = lock(st).offered.clone();
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
    lock(st).swallow_answer = true;
    write(
        to,
        &hello_bytes(&Hello::new(&[version], client_role, "proxy")),
    )
    .await;
    version
}

pub(super) async fn refuse(back: &Writer, reason: RefusalReason) {
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
