//! Issue 25, items 1 and 2, end to end against the `sparkwire master` binary: a peer refused for
//! a decoding error or off its route reads why from the wire (SPEC §8.1), and the master's log,
//! at its default level, has exactly one WARN line naming the peer's address, its role, the
//! error kind and the reason.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use common::files::temp_dir;
use common::processes::announced_master;
use common::{raw_client_handshake_offering, read_raw_frame};
use sparkwire::messages::{from_hex, DeployMessage, Version};
use sparkwire::wire::handshake::{Role, CLOSE_REASON};
use sparkwire::wire::vectors::DecoderVector;
use sparkwire::wire::{decode_envelope, CloseReason, Envelope};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A `sparkwire master` on free ports, its standard error in a file; killed (by its own pid)
/// when dropped.
struct Master {
    child: Child,
    addr: String,
    log: std::path::PathBuf,
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = self.log.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn master() -> Master {
    master_with(&[])
}

fn master_with(extra: &[&str]) -> Master {
    let log = temp_dir("close-reason").join("master.log");
    let err = std::fs::File::create(&log).expect("log file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
        .args(["master", "--host", "127.0.0.1", "--port", "0", "--no-webui"])
        .args(extra)
        // The default level: what an operator sees without setting RUST_LOG.
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .expect("spawn sparkwire master");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the master's first line");
    let addr = announced_master(line.trim()).1.to_string();
    Master { child, addr, log }
}

/// An app client's connection to `master` whose hello offered closeReason.
async fn app_client(master: &Master) -> TcpStream {
    let mut stream = TcpStream::connect(&master.addr).await.expect("connect");
    let negotiated = raw_client_handshake_offering(
        &mut stream,
        &[Version::V2],
        Role::AppClient,
        &[CLOSE_REASON],
    )
    .await;
    assert!(negotiated.close_reason, "the master takes closeReason");
    stream
}

/// The close envelope that ends `stream`.
async fn reason_read(stream: &mut TcpStream) -> CloseReason {
    let read = async {
        let body = read_raw_frame(stream).await.expect("a close envelope");
        let env =
            decode_envelope::<DeployMessage>(&Bytes::from(body), Version::V2).expect("decodable");
        let Envelope::Close(reason) = env else {
            panic!("a close envelope, not {env:?}");
        };
        assert_eq!(read_raw_frame(stream).await, None, "then the end");
        reason
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("closed in time")
}

/// The master's WARN lines that name `addr`, once some have been written (or 10 s passed).
async fn warn_lines(master: &Master, addr: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&master.log).unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .filter(|l| l.contains("WARN") && l.contains(addr))
            .map(str::to_string)
            .collect();
        if !lines.is_empty() || tokio::time::Instant::now() > deadline {
            // Give a second line, if the master wrote one, the time to appear.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let text = std::fs::read_to_string(&master.log).unwrap_or_default();
            return text
                .lines()
                .filter(|l| l.contains("WARN") && l.contains(addr))
                .map(str::to_string)
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn decoder_vector(name: &str) -> DecoderVector {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/vectors/decoder.json");
    let all: Vec<DecoderVector> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("decoder.json"))
            .expect("decoder vectors");
    all.into_iter()
        .find(|v| v.name == name)
        .expect("the vector")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_keys_out_of_order_are_told_and_logged_once() {
    let master = master();
    let mut app = app_client(&master).await;
    let me = app.local_addr().expect("local address").to_string();
    // SPEC §11.3's vector: a deploy message whose map keys are out of order.
    let vector = decoder_vector("map keys out of order");
    let bad = from_hex(&vector.frame_hex).expect("hex");
    app.write_all(&bad).await.expect("write");
    let reason = reason_read(&mut app).await;
    assert_eq!(reason.kind, "InvalidFields");
    // SPEC §8.2: the path names the map, the offset is where the offending key starts: what the
    // vector says.
    assert!(
        reason.path.as_deref().is_some_and(|p| !p.is_empty()),
        "the field's path: {reason:?}"
    );
    assert_eq!(
        (reason.path.clone(), reason.offset),
        (vector.path.clone(), vector.offset)
    );
    let lines = warn_lines(&master, &me).await;
    assert_eq!(lines.len(), 1, "one WARN line: {lines:#?}");
    let line = &lines[0];
    for part in [
        "app-client",
        "InvalidFields",
        "keys are distinct and ascending",
        reason.path.as_deref().unwrap_or(""),
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_off_its_route_is_told_and_logged_once() {
    let master = master();
    let mut app = app_client(&master).await;
    let me = app.local_addr().expect("local address").to_string();
    // A worker's one-way Heartbeat, well-formed, from an application client (SPEC §14.1).
    let heartbeat = sparkwire::messages::deploy::Heartbeat::new(
        "worker-1".into(),
        sparkwire::messages::EndpointRef::at(
            sparkwire::messages::Addr::new("127.0.0.1", 9),
            "Worker",
        ),
    );
    let env: Envelope<DeployMessage> = Envelope::Send(heartbeat.into());
    app.write_all(&sparkwire::wire::encode_frame(&env, Version::V2).expect("encodes"))
        .await
        .expect("write");
    let reason = reason_read(&mut app).await;
    assert_eq!(reason.kind, "NotOnRoute");
    assert_eq!(
        reason.message,
        "a app-client may not send Heartbeat to a master"
    );
    assert_eq!((reason.path, reason.offset), (None, None));
    let lines = warn_lines(&master, &me).await;
    assert_eq!(lines.len(), 1, "one WARN line: {lines:#?}");
    for part in ["app-client", "NotOnRoute", "may not send Heartbeat"] {
        assert!(lines[0].contains(part), "{part:?} in {}", lines[0]);
    }
}

/// A fake master that takes closeReason, reads one frame after the handshake and closes with
/// `reason`; returns its address.
async fn refusing_master(reason: CloseReason) -> std::net::SocketAddr {
    use sparkwire::wire::handshake::{decode_hello, encode_answer, Accepted, Answer};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.expect("accept");
        let hello = decode_hello(&read_raw_frame(&mut s).await.expect("hello")).expect("a hello");
        assert!(hello.offers(CLOSE_REASON), "sparkwire offers closeReason");
        let mut answer = Vec::new();
        encode_answer(
            &Answer::Accepted(Accepted {
                version: Version::V2,
                versions: vec![2],
                role: Role::Master,
                id: "fake".into(),
                features: vec![CLOSE_REASON.into()],
            }),
            &mut answer,
        );
        s.write_all(&common::frame(&answer)).await.expect("answer");
        let _ask = read_raw_frame(&mut s).await.expect("the ask");
        let close: Envelope<DeployMessage> = Envelope::Close(reason);
        s.write_all(&sparkwire::wire::encode_frame(&close, Version::V2).expect("encodes"))
            .await
            .expect("close");
        let _ = s.shutdown().await;
        // Read until the client goes, so that nothing resets the close envelope away.
        let _ = read_raw_frame(&mut s).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_command_prints_the_reason_the_master_closed_with() {
    let reason = CloseReason::new("NotOnRoute", "a ui may not ask RequestMasterState today");
    let addr = refusing_master(reason).await;
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args(["status", &format!("sparkwire://{addr}")])
            .env("NO_COLOR", "1")
            .output()
            .expect("run sparkwire status")
    })
    .await
    .expect("joined");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "the peer closed the connection: NotOnRoute: a ui may not ask RequestMasterState today"
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_master_logs_each_violation_as_it_happens_with_its_connection() {
    let master = master_with(&["--strict"]);
    for _ in 0..2 {
        let mut app = app_client(&master).await;
        let me = app.local_addr().expect("local address").to_string();
        let heartbeat = sparkwire::messages::deploy::Heartbeat::new(
            "worker-1".into(),
            sparkwire::messages::EndpointRef::at(
                sparkwire::messages::Addr::new("127.0.0.1", 9),
                "Worker",
            ),
        );
        let env: Envelope<DeployMessage> = Envelope::Send(heartbeat.into());
        app.write_all(&sparkwire::wire::encode_frame(&env, Version::V2).expect("encodes"))
            .await
            .expect("write");
        // The validator refuses it before the route check: the rule it breaks is the reason.
        let reason = reason_read(&mut app).await;
        assert_eq!(reason.kind, "RuleViolation");
        assert!(reason.message.contains("M1"), "{reason}");
        // One line for it, while the master runs (not only a count at exit), naming the
        // connection: this peer's address, its role, the rule.
        let lines = warn_lines(&master, &me).await;
        assert_eq!(lines.len(), 1, "{lines:#?}");
        for part in ["app-client", "RuleViolation", "M1 route.defined", "conn="] {
            assert!(lines[0].contains(part), "{part:?} in {}", lines[0]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bad_frames_cannot_flood_the_log() {
    let master = master();
    let bad = from_hex(&decoder_vector("map keys out of order").frame_hex).expect("hex");
    let start = std::time::Instant::now();
    let flood = 60;
    for _ in 0..flood {
        let mut app = app_client(&master).await;
        app.write_all(&bad).await.expect("write");
        assert_eq!(reason_read(&mut app).await.kind, "InvalidFields");
    }
    // Each peer was told; the log holds at most the burst and what the time since refilled.
    let spent = start.elapsed().as_secs() + 1;
    let refill_wait = Duration::from_millis(1500);
    tokio::time::sleep(refill_wait).await;
    // One more after a pause: written, after the count of those dropped.
    let mut app = app_client(&master).await;
    app.write_all(&bad).await.expect("write");
    reason_read(&mut app).await;
    let me = app.local_addr().expect("local address").to_string();
    assert_eq!(
        warn_lines(&master, &me).await.len(),
        1,
        "the last one is written"
    );
    let text = std::fs::read_to_string(&master.log).expect("log");
    let written = text.lines().filter(|l| l.contains("kind=")).count() as u64;
    let allowed = u64::from(sparkwire::node::violations::BURST)
        + u64::from(sparkwire::node::violations::PER_SECOND) * (spent + 2);
    assert!(
        written <= allowed && written < flood + 1,
        "{written} lines for {} errors (at most {allowed})",
        flood + 1
    );
    let suppressed: u64 = text
        .lines()
        .filter_map(|l| {
            let at = l.find(" more refusals or protocol errors suppressed")?;
            l[..at].rsplit(' ').next()?.parse::<u64>().ok()
        })
        .sum();
    assert_eq!(
        written + suppressed,
        flood + 1,
        "every error written or counted"
    );
}
