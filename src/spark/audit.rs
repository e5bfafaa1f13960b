//! A read-only security audit of a running Spark master or worker over Spark's own wire
//! (`sparkwire spark audit spark://HOST:PORT`; feature `spark-rest`).
//!
//! Every probe is a question the target answers without changing anything: an
//! `RpcEndpointVerifier$CheckExistence` ask, the first step of each authentication bootstrap
//! (abandoned before it completes, unless the secret is given), `RequestMasterState` /
//! `RequestWorkerState` (asked only where the target takes them), and HTTP `GET`s of the REST
//! submission server's status of a submission that does not exist and of the web UI's `/json/`.
//! Nothing is registered, submitted, killed or launched; each probe has its own connection,
//! closed when it is done.
//!
//! What is checked, each a [`Check`] in the [`AuditReport`]:
//!
//! - `rpc-auth`: whether Spark RPC is taken without authentication (CVE-2020-9480's class: what an
//!   unauthenticated peer can ask, it can also register or submit);
//! - `sasl`, `engine`, `legacy-engine`: which of Spark's bootstraps the target speaks — SASL
//!   DIGEST-MD5 (and the qualities of protection its challenge offers: `auth-conf` only with
//!   `spark.network.sasl.serverAlwaysEncrypt`), the auth engine of `spark.network.crypto` (its
//!   failure on a challenge sealed with a wrong secret says it is there), and the original
//!   AES-based protocol of Spark 2.2 to 3.1.2 (`ClientChallenge`, CVE-2021-38296);
//! - `downgrade`: SASL taken where the auth engine is (`spark.network.crypto.saslFallback=true`,
//!   Spark's default), or no encryption after authentication at all;
//! - `secret`: with the secret, whether it is taken and over which scheme, engine version and
//!   transport cipher (AES-CTR, or AES-GCM with `spark.network.crypto.cipher=AES/GCM/NoPadding`);
//! - `state`: whether the master's or worker's state answer can be read, and whether it carries
//!   secrets (`spark.authenticate.secret`, `_SPARK_AUTH_SECRET`, passwords) — shown redacted;
//! - `rest`: whether the REST submission port answers without credentials (CVE-2018-11770's class);
//! - `web-ui`: whether the web UI's `/json/` is readable, and whether it carries secrets.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::auth::sasl::parse_directives;
use super::auth::{
    client_handshake, AuthError, ClientAuth, EngineClient, EngineVersion, Negotiated, SaslMessage,
    TransportCipher, SASL_USER,
};
use super::release::{Detector, Release};
use super::{
    check_existence_stream, message_stream, parse_stream, reply_value, Entry, Frame, FrameDecoder,
    ReplyValue, RequestMessage, Typed, VERIFIER,
};
use crate::messages::deploy::{RequestMasterState, RequestWorkerState};
use crate::messages::DeployMessage;

/// Largest frame an audit reads (a master's state answer of a busy cluster is large).
pub const MAX_AUDIT_FRAME: u64 = 16 * 1024 * 1024;

/// Largest HTTP body an audit reads.
pub const MAX_HTTP_BODY: usize = 4 * 1024 * 1024;

/// The text every report carries: what the audit does not do.
pub const READ_ONLY: &str = "read-only: nothing was registered, submitted, killed or changed on \
     the target; each probe was a question (CheckExistence, the first step of each \
     authentication bootstrap, the state asks, HTTP GETs) on its own connection";

/// An HTTP port the audit looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpPort {
    /// Spark's default for the target's role (REST 6066; web UI 8080 for a master, 8081 for a
    /// worker).
    Default,
    /// This port.
    At(u16),
    /// Not looked at.
    Off,
}

/// What to audit and how.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The target's host.
    pub host: String,
    /// Its Spark RPC port.
    pub port: u16,
    /// `spark.authenticate.secret`, to check that it is taken and to read what only an
    /// authenticated peer may.
    pub secret: Option<String>,
    /// The REST submission server's port.
    pub rest_port: HttpPort,
    /// The web UI's port.
    pub ui_port: HttpPort,
    /// How long each probe may take.
    pub timeout: Duration,
}

impl AuditOptions {
    /// An audit of `host:port` without the secret, Spark's default HTTP ports, 10 s a probe.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        AuditOptions {
            host: host.into(),
            port,
            secret: None,
            rest_port: HttpPort::Default,
            ui_port: HttpPort::Default,
            timeout: Duration::from_secs(10),
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; not an opening by itself.
    Low,
    /// Weakens what authentication gives (a downgrade, traffic readable on the network).
    Medium,
    /// Anyone who can reach the port can act as a member of the cluster or read its secrets.
    High,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        })
    }
}

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Something to fix.
    Finding(Severity),
    /// As it should be.
    Pass,
    /// A fact, neither good nor bad (or a check that could not be made).
    Info,
}

/// One check of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Its id (`rpc-auth`, `sasl`, `engine`, `legacy-engine`, `downgrade`, `secret`, `state`,
    /// `rest`, `web-ui`).
    pub id: &'static str,
    /// Its verdict.
    pub outcome: Outcome,
    /// What was seen, in words.
    pub text: String,
}

/// What the target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetRole {
    /// Its `Master` endpoint exists.
    Master,
    /// Its `Worker` endpoint exists.
    Worker,
    /// A Spark RPC endpoint with neither (a driver or an executor).
    Other,
}

/// What the target's SASL server offered in its challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslOffer {
    /// The qualities of protection offered (`auth-conf`, `auth`).
    pub qop: Vec<String>,
    /// The ciphers offered for `auth-conf`, if any.
    pub ciphers: Vec<String>,
}

impl SaslOffer {
    /// Whether a session without encryption (`auth`) is taken.
    pub fn plaintext(&self) -> bool {
        self.qop.iter().any(|q| q == "auth")
    }
}

/// What an answer to the REST status request showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body, at most [`MAX_HTTP_BODY`] bytes, as text.
    pub body: String,
}

/// A secret seen in a state answer or a page, with its value redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// The key or word it followed (`spark.authenticate.secret`, `-Dspark.ssl.keyPassword`).
    pub key: String,
    /// The length of the value, which is not shown.
    pub value_len: usize,
}

impl std::fmt::Display for Exposure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}=<{} characters, redacted>", self.key, self.value_len)
    }
}

/// The facts the checks were judged from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Whether an unauthenticated `CheckExistence` was answered (`Some(true)`), refused
    /// (`Some(false)`), or neither could be told.
    pub rpc_without_auth: Option<bool>,
    /// What the target is, if it could be told.
    pub role: Option<TargetRole>,
    /// The Scala line whose Java forms the target took (`2.13`), if it answered an ask.
    pub scala: Option<String>,
    /// The releases the Java forms of its state answer fit, oldest first (empty when it was not
    /// read).
    pub releases: Vec<String>,
    /// The release its REST server names (`serverSparkVersion`).
    pub rest_version: Option<String>,
    /// SASL's challenge, when the target takes SASL.
    pub sasl: Option<SaslOffer>,
    /// Whether the auth engine is spoken (`None`: could not be told).
    pub engine: Option<bool>,
    /// Whether the original AES protocol (`ClientChallenge`) is spoken.
    pub legacy_engine: Option<bool>,
    /// With the secret: what a bootstrap with it agreed on and whether requests then went through.
    pub secret_session: Option<Negotiated>,
    /// Whether the state answer (`RequestMasterState` / `RequestWorkerState`) was read.
    pub state_read: bool,
    /// Secrets seen in the state answer.
    pub state_exposures: Vec<Exposure>,
    /// The REST server's answer to the status of a submission that does not exist (`None`: the
    /// port is closed or was not looked at).
    pub rest: Option<HttpAnswer>,
    /// The web UI's `/json/` answer.
    pub web_ui: Option<HttpAnswer>,
    /// Secrets seen in the web UI's `/json/`.
    pub web_ui_exposures: Vec<Exposure>,
}

/// The report of an audit.
#[derive(Debug, Clone)]
pub struct AuditReport {
    /// `host:port`.
    pub target: String,
    /// The facts.
    pub facts: Facts,
    /// The checks, in the order they were made.
    pub checks: Vec<Check>,
}

impl AuditReport {
    /// The checks that are findings.
    pub fn findings(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Finding(_)))
    }

    /// The check `id`, if it was made.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The report as text: a line per check, then the count of findings.
    pub fn render(&self) -> String {
        let mut out = format!(
            "sparkwire spark audit of spark://{}\n{READ_ONLY}\n",
            self.target
        );
        let role = match self.facts.role {
            Some(TargetRole::Master) => "a Spark master (its Master endpoint exists)",
            Some(TargetRole::Worker) => "a Spark worker (its Worker endpoint exists)",
            Some(TargetRole::Other) => "a Spark RPC endpoint, neither master nor worker",
            None => "a Spark RPC endpoint (master or worker cannot be told without the secret)",
        };
        out.push_str(&format!("target: {role}"));
        if let Some(s) = &self.facts.scala {
            out.push_str(&format!("; it takes the Java forms of Scala {s}"));
        }
        match self.facts.releases.as_slice() {
            [] => {}
            [one] => out.push_str(&format!("; its state answer is Spark {one}'s")),
            [first, .., last] => {
                out.push_str(&format!("; its state answer fits Spark {first} to {last}"))
            }
        }
        if let Some(v) = &self.facts.rest_version {
            out.push_str(&format!("; its REST server says Spark {v}"));
        }
        out.push('\n');
        for c in &self.checks {
            let verdict = match c.outcome {
                Outcome::Finding(s) => format!("FINDING {s}"),
                Outcome::Pass => "ok".to_string(),
                Outcome::Info => "info".to_string(),
            };
            out.push_str(&format!("  {verdict:<15} {:<14} {}\n", c.id, c.text));
        }
        let mut by = [0usize; 3];
        for c in self.findings() {
            if let Outcome::Finding(s) = c.outcome {
                by[s as usize] += 1;
            }
        }
        out.push_str(&format!(
            "findings: {} ({} high, {} medium, {} low)\n",
            by.iter().sum::<usize>(),
            by[2],
            by[1],
            by[0]
        ));
        out
    }
}

/// Why an audit could not be made at all.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The RPC port could not be reached.
    #[error("cannot connect to {0}: {1}")]
    Connect(String, std::io::Error),
    /// The RPC port does not speak Spark's transport.
    #[error("{0} does not speak Spark's RPC transport: {1}")]
    NotSpark(String, String),
}

/// What an ask got.
#[derive(Debug)]
enum Answer {
    Response(Bytes),
    Failure(String),
    /// The connection closed before an answer.
    Closed,
    /// Nothing within the timeout.
    Silent,
    /// Bytes that are not Spark's frames.
    Garbage(String),
}

/// One probe's connection: asks and their answers, each bounded in size and time.
struct Probe<S> {
    s: S,
    dec: FrameDecoder,
    next_id: i64,
    timeout: Duration,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Probe<S> {
    fn new(s: S, timeout: Duration) -> Self {
        Probe {
            s,
            dec: FrameDecoder::new(MAX_AUDIT_FRAME),
            // Spark's clients number requests from a random start; any positive id will do.
            next_id: 0x5157_0000,
            timeout,
        }
    }

    async fn ask(&mut self, body: Vec<u8>) -> Answer {
        self.next_id += 1;
        let id = self.next_id;
        let frame = match (Frame::RpcRequest {
            request_id: id,
            body: body.into(),
        })
        .encode()
        {
            Ok(b) => b,
            Err(e) => return Answer::Garbage(format!("cannot write the ask: {e}")),
        };
        let t = self.timeout;
        let exchange = async {
            if self.s.write_all(&frame).await.is_err() || self.s.flush().await.is_err() {
                return Answer::Closed;
            }
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                while let Some(item) = self.dec.next_item() {
                    match item.frame {
                        Ok(Frame::RpcResponse { request_id, body }) if request_id == id => {
                            return Answer::Response(body)
                        }
                        Ok(Frame::RpcFailure { request_id, error }) if request_id == id => {
                            return Answer::Failure(error)
                        }
                        Ok(_) => {}
                        Err(e) => return Answer::Garbage(e.to_string()),
                    }
                }
                match self.s.read(&mut buf).await {
                    Ok(0) | Err(_) => return Answer::Closed,
                    Ok(n) => self.dec.push(&buf[..n]),
                }
            }
        };
        tokio::time::timeout(t, exchange)
            .await
            .unwrap_or(Answer::Silent)
    }
}

/// An RPC ask's body: `endpoint` at the target, from a client-mode sender (as an executor's).
fn rpc_body(target: &(String, i32), endpoint: &str, stream: Vec<u8>) -> Option<Vec<u8>> {
    RequestMessage {
        sender: None,
        receiver: Some(target.clone()),
        endpoint: endpoint.into(),
        stream: stream.into(),
    }
    .encode()
    .ok()
}

/// One release per Java form of the verifier's ask, newest first: a target refuses the form of
/// another Scala line with a failure, and is asked in the next.
fn release_forms() -> Vec<&'static Release> {
    let mut out: Vec<&'static Release> = Vec::new();
    for r in Release::all().iter().rev() {
        if !out.iter().any(|o| o.scala() == r.scala()) {
            out.push(r);
        }
    }
    out
}

fn bool_of(body: &Bytes) -> Option<bool> {
    let g = parse_stream(body).ok()?;
    match reply_value(g.root_node()).ok()? {
        ReplyValue::Bool(b) => Some(b),
        _ => None,
    }
}

/// The outcome of asking which endpoints exist.
enum Existence {
    /// Answered: the role, and the release whose form was taken.
    Answered(TargetRole, &'static Release),
    /// Refused or failed, with the last answer's text.
    Refused(String),
    /// The connection closed or went silent.
    Gone(&'static str),
    /// Not Spark's framing.
    Garbage(String),
}

async fn existence<S: AsyncRead + AsyncWrite + Unpin>(
    p: &mut Probe<S>,
    target: &(String, i32),
) -> Existence {
    let mut last = String::new();
    for release in release_forms() {
        let mut found = None;
        for (name, role) in [
            ("Master", TargetRole::Master),
            ("Worker", TargetRole::Worker),
        ] {
            let Ok(stream) = check_existence_stream(name, release) else {
                continue;
            };
            let Some(body) = rpc_body(target, VERIFIER, stream) else {
                continue;
            };
            match p.ask(body).await {
                Answer::Response(b) => match bool_of(&b) {
                    Some(true) => return Existence::Answered(role, release),
                    Some(false) => found = Some(TargetRole::Other),
                    None => {
                        last = "an answer that is not a Boolean".into();
                        break;
                    }
                },
                Answer::Failure(e) => {
                    last = e;
                    break;
                }
                Answer::Closed => return Existence::Gone("closed the connection"),
                Answer::Silent => return Existence::Gone("did not answer"),
                Answer::Garbage(e) => return Existence::Garbage(e),
            }
        }
        if let Some(role) = found {
            return Existence::Answered(role, release);
        }
        if is_auth_refusal(&last) {
            break;
        }
    }
    Existence::Refused(last)
}

/// Whether a failure's text is an authentication layer's refusal (Spark's SASL handler's, its
/// auth engine's, or sparkwire's front's).
fn is_auth_refusal(text: &str) -> bool {
    [
        "Expected SaslMessage",
        "Unknown challenge message",
        "Authentication failed",
        "Unauthenticated",
    ]
    .iter()
    .any(|n| text.contains(n))
}

/// The first line of a failure's text (Spark sends whole stack traces), at most 160 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let mut s: String = line.chars().take(160).collect();
    if line.chars().count() > 160 {
        s.push('…');
    }
    s
}

async fn connect(o: &AuditOptions) -> std::io::Result<TcpStream> {
    match tokio::time::timeout(o.timeout, TcpStream::connect((o.host.as_str(), o.port))).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no connection within {:?}", o.timeout),
        )),
    }
}

/// The `ClientChallenge` of the original AES protocol (Spark 2.2 to 3.1.2), with random bytes where
/// the sealed challenge goes: a server that speaks it fails it as a wrong secret.
fn legacy_challenge() -> Vec<u8> {
    let mut nonce = [0u8; 16];
    let mut challenge = [0u8; 32];
    let _ = getrandom::getrandom(&mut nonce);
    let _ = getrandom::getrandom(&mut challenge);
    let mut out = vec![0xFA];
    let put = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_be_bytes());
        out.extend_from_slice(b);
    };
    put(&mut out, SASL_USER.as_bytes());
    put(&mut out, b"PBKDF2WithHmacSHA1");
    out.extend_from_slice(&1024u32.to_be_bytes());
    put(&mut out, b"AES/CTR/NoPadding");
    out.extend_from_slice(&128u32.to_be_bytes());
    put(&mut out, &nonce);
    put(&mut out, &challenge);
    out
}

/// Reads a DIGEST-MD5 challenge's offer.
fn sasl_offer(token: &[u8]) -> Option<SaslOffer> {
    let ds = parse_directives(token).ok()?;
    ds.iter().find(|(k, _)| k == "nonce")?;
    let list = |key: &str| -> Vec<String> {
        ds.iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let mut qop = list("qop");
    if qop.is_empty() {
        // RFC 2831: a challenge without qop offers `auth`.
        qop.push("auth".into());
    }
    Some(SaslOffer {
        qop,
        ciphers: list("cipher"),
    })
}

/// What a bootstrap's first step drew from the target.
enum FirstStep {
    Response(Bytes),
    Failure(String),
    Gone(&'static str),
}

async fn first_step(o: &AuditOptions, body: Vec<u8>) -> Result<FirstStep, AuditError> {
    let tcp = connect(o)
        .await
        .map_err(|e| AuditError::Connect(format!("{}:{}", o.host, o.port), e))?;
    let mut p = Probe::new(tcp, o.timeout);
    Ok(match p.ask(body).await {
        Answer::Response(b) => FirstStep::Response(b),
        Answer::Failure(e) => FirstStep::Failure(e),
        Answer::Closed => FirstStep::Gone("closed the connection"),
        Answer::Silent => FirstStep::Gone("did not answer"),
        Answer::Garbage(_) => FirstStep::Gone("answered with bytes that are not Spark's frames"),
    })
}

/// What names a secret, lower case.
const NEEDLES: [&str; 7] = [
    "spark.authenticate.secret",
    "_spark_auth_secret",
    "password",
    "passwd",
    "secretkey",
    "secret.key",
    "access.key",
];

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')
}

/// Secrets in a Java stream's strings: those in `key=value` text (a Java option, say), and a
/// string that is a secret's key followed by its value (a map's entries are written key, then
/// value).
pub fn scan_strings<'a>(strings: impl IntoIterator<Item = &'a str>) -> Vec<Exposure> {
    let strings: Vec<&str> = strings.into_iter().collect();
    let mut out: Vec<Exposure> = Vec::new();
    let add = |e: Exposure, out: &mut Vec<Exposure>| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for (i, s) in strings.iter().enumerate() {
        for e in scan_secrets(s) {
            add(e, &mut out);
        }
        let key = s.trim();
        let lower = key.to_ascii_lowercase();
        if key.is_empty()
            || !key.bytes().all(is_key_byte)
            || !NEEDLES.iter().any(|n| lower.contains(n))
        {
            continue;
        }
        if let Some(value) = strings.get(i + 1) {
            if !value.is_empty() && !value.contains("redacted") {
                add(
                    Exposure {
                        key: key.to_string(),
                        value_len: value.chars().count(),
                    },
                    &mut out,
                );
            }
        }
    }
    out
}

/// Secrets in `text`: values after the keys and words that name them, redacted.
pub fn scan_secrets(text: &str) -> Vec<Exposure> {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut out: Vec<Exposure> = Vec::new();
    for needle in NEEDLES {
        let mut from = 0;
        while let Some(at) = lower[from..].find(needle) {
            let start = from + at;
            from = start + needle.len();
            // The whole key around the needle.
            let mut a = start;
            while a > 0 && is_key_byte(bytes[a - 1]) {
                a -= 1;
            }
            let mut b = start + needle.len();
            while b < bytes.len() && is_key_byte(bytes[b]) {
                b += 1;
            }
            // A separator, then a value.
            let mut v = b;
            let mut separated = false;
            while v < bytes.len() && matches!(bytes[v], b'=' | b':' | b'"' | b' ' | b'\'') {
                separated |= matches!(bytes[v], b'=' | b':');
                v += 1;
            }
            let mut e = v;
            while e < bytes.len()
                && !matches!(
                    bytes[e],
                    b'"' | b'\'' | b',' | b'}' | b']' | b';' | b'&' | b'\n' | b' ' | b'\t'
                )
            {
                e += 1;
            }
            if !separated || e == v {
                continue;
            }
            let value = &text[v..e];
            if value.contains("redacted") || value == "null" {
                continue;
            }
            let key = text[a..b].to_string();
            let value_len = value.chars().count();
            if !out.iter().any(|x| x.key == key && x.value_len == value_len) {
                out.push(Exposure { key, value_len });
            }
        }
    }
    out
}

/// An HTTP GET of `path` on `host:port`: `Ok(None)` when nothing listens there.
async fn http_get(
    host: &str,
    port: u16,
    path: &str,
    timeout: Duration,
) -> Result<Option<HttpAnswer>, String> {
    let get = async {
        let tcp = match TcpStream::connect((host, port)).await {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(None),
            Err(e) => return Err(format!("cannot connect: {e}")),
        };
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        let driver = tokio::spawn(conn);
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let req = Request::get(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::USER_AGENT, "sparkwire-audit")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("HTTP request: {e}"))?;
        let res = send
            .send_request(req)
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        let status = res.status().as_u16();
        let body = Limited::new(res.into_body(), MAX_HTTP_BODY)
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        driver.abort();
        Ok(Some(HttpAnswer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        }))
    };
    tokio::time::timeout(timeout, get)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
}

/// The id asked after on the REST port: no submission has it.
fn absent_submission() -> String {
    let mut r = [0u8; 6];
    let _ = getrandom::getrandom(&mut r);
    let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
    format!("driver-00000000000000-sparkwire-audit-{hex}")
}

/// A session opened with the secret, not yet asked anything, and what the checked one showed.
struct SecretSession {
    probe: Probe<super::auth::AuthStream<TcpStream>>,
    negotiated: Negotiated,
    role: TargetRole,
    release: &'static Release,
}

/// A session with the secret, and the requests through it.
async fn secret_session(
    o: &AuditOptions,
    secret: &str,
    engine: bool,
) -> Result<SecretSession, String> {
    // Spark negotiates neither the engine's version nor the cipher: each is tried, and the first
    // whose session carries a request is the target's.
    let tries: Vec<ClientAuth> = if engine {
        [TransportCipher::Ctr, TransportCipher::Gcm]
            .into_iter()
            .flat_map(|cipher| {
                [EngineVersion::V1, EngineVersion::V2]
                    .into_iter()
                    .map(move |version| (cipher, version))
            })
            .map(|(cipher, version)| ClientAuth {
                version,
                cipher,
                sasl_fallback: false,
                timeout: o.timeout,
                ..ClientAuth::crypto(secret)
            })
            .collect()
    } else {
        vec![ClientAuth {
            timeout: o.timeout,
            ..ClientAuth::sasl(secret)
        }]
    };
    let target = (o.host.clone(), i32::from(o.port));
    let mut why = String::new();
    for auth in tries {
        let tcp = connect(o)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let s = match client_handshake(tcp, &auth).await {
            Ok(s) => s,
            Err(AuthError::Refused(e)) => return Err(format!("refused: {}", first_line(&e))),
            Err(e) => return Err(e.to_string()),
        };
        let negotiated = s.negotiated();
        let mut p = Probe::new(s, o.timeout);
        // The session is proved by a request through it: with the other engine version's key
        // (or another cipher) the target reads noise and closes.
        match existence(&mut p, &target).await {
            Existence::Answered(role, release) => {
                // A fresh session for the caller's ask, its first request: Spark 4.0's AES-GCM
                // reader opens only the first message of a connection (4.1 reads them all).
                let tcp = connect(o)
                    .await
                    .map_err(|e| format!("cannot connect: {e}"))?;
                let s = client_handshake(tcp, &auth)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok(SecretSession {
                    probe: Probe::new(s, o.timeout),
                    negotiated,
                    role,
                    release,
                });
            }
            Existence::Refused(e) => why = format!("requests after it failed: {}", first_line(&e)),
            Existence::Gone(e) => why = format!("the target {e} after it"),
            Existence::Garbage(e) => why = format!("the answers did not decrypt: {e}"),
        }
    }
    Err(why)
}

/// The state ask of `role`, and what it exposes; `Err` says why it could not be read.
async fn read_state<S: AsyncRead + AsyncWrite + Unpin>(
    p: &mut Probe<S>,
    target: &(String, i32),
    role: TargetRole,
    release: &'static Release,
) -> Result<(Vec<Exposure>, Vec<String>), String> {
    let (endpoint, m) = match role {
        TargetRole::Master => ("Master", DeployMessage::from(RequestMasterState::new())),
        TargetRole::Worker => ("Worker", DeployMessage::from(RequestWorkerState::new())),
        TargetRole::Other => return Err("the target is neither master nor worker".into()),
    };
    let stream = message_stream(&Typed::Deploy(m), release, None)
        .map_err(|e| format!("the ask cannot be written: {e}"))?;
    let body = rpc_body(target, endpoint, stream).ok_or("the ask cannot be written")?;
    match p.ask(body).await {
        Answer::Response(b) => Ok(match parse_stream(&b) {
            Ok(g) => {
                let mut d = Detector::new();
                let releases = match d.observe(&g) {
                    Ok(_) => d
                        .candidates()
                        .iter()
                        .map(|r| r.name().to_string())
                        .collect(),
                    Err(_) => Vec::new(),
                };
                let strings = g.entries().iter().filter_map(|e| match e {
                    Entry::String(s) => Some(s.as_str()),
                    _ => None,
                });
                (scan_strings(strings), releases)
            }
            Err(_) => (scan_secrets(&String::from_utf8_lossy(&b)), Vec::new()),
        }),
        Answer::Failure(e) => Err(format!("the ask was refused: {}", first_line(&e))),
        Answer::Closed => Err("the target closed the connection".into()),
        Answer::Silent => Err("the target did not answer".into()),
        Answer::Garbage(e) => Err(format!("the answer is not Spark's framing: {e}")),
    }
}

fn exposures_text(e: &[Exposure]) -> String {
    e.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Audits the target. `Err` only when it cannot be audited at all (nothing listens, or it does
/// not speak Spark's transport); every other failure is a check's text.
pub async fn audit(o: &AuditOptions) -> Result<AuditReport, AuditError> {
    let name = format!("{}:{}", o.host, o.port);
    let target = (o.host.clone(), i32::from(o.port));
    let mut facts = Facts::default();
    let mut checks = Vec::new();
    // Whether any probe drew a Spark frame: a port that answers none is not a Spark RPC port.
    let mut spoke = false;
    // Why the state answer of a target that answered asks could not be read.
    let mut state_unread: Option<String> = None;

    // 1. Spark RPC without authentication.
    let tcp = connect(o)
        .await
        .map_err(|e| AuditError::Connect(name.clone(), e))?;
    let mut p = Probe::new(tcp, o.timeout);
    match existence(&mut p, &target).await {
        Existence::Answered(role, release) => {
            spoke = true;
            facts.rpc_without_auth = Some(true);
            facts.role = Some(role);
            facts.scala = Some(release.scala().to_string());
            checks.push(Check {
                id: "rpc-auth",
                outcome: Outcome::Finding(Severity::High),
                text: format!(
                    "Spark RPC is taken without authentication (spark.authenticate is off): an \
                     unauthenticated CheckExistence was answered; any peer that reaches this \
                     port can {}",
                    match role {
                        TargetRole::Master => "register workers and applications or submit drivers",
                        TargetRole::Worker => {
                            "tell it to launch executors and drivers, which run its commands"
                        }
                        TargetRole::Other =>
                            "send its endpoints messages as a member of the cluster",
                    }
                ),
            });
            match read_state(&mut p, &target, role, release).await {
                Ok((exposures, releases)) => {
                    facts.state_read = true;
                    facts.state_exposures = exposures;
                    facts.releases = releases;
                }
                Err(why) => state_unread = Some(why),
            }
        }
        Existence::Refused(e) => {
            spoke = true;
            facts.rpc_without_auth = Some(false);
            checks.push(Check {
                id: "rpc-auth",
                outcome: if is_auth_refusal(&e) {
                    Outcome::Pass
                } else {
                    Outcome::Info
                },
                text: format!(
                    "an unauthenticated CheckExistence was refused: {}",
                    first_line(&e)
                ),
            });
        }
        Existence::Gone(why) => {
            facts.rpc_without_auth = Some(false);
            checks.push(Check {
                id: "rpc-auth",
                outcome: Outcome::Pass,
                text: format!(
                    "an unauthenticated CheckExistence went unanswered: the target {why}"
                ),
            });
        }
        Existence::Garbage(e) => return Err(AuditError::NotSpark(name, e)),
    }
    drop(p);

    // 2. The bootstraps' first steps (never completed without the secret).
    let auth_on = facts.rpc_without_auth == Some(false);
    let sasl_first = SaslMessage {
        app_id: SASL_USER.into(),
        token: Vec::new(),
    }
    .encode();
    let sasl_step = first_step(o, sasl_first).await?;
    spoke |= !matches!(sasl_step, FirstStep::Gone(_));
    match sasl_step {
        FirstStep::Response(token) => match sasl_offer(&token) {
            Some(offer) => {
                checks.push(Check {
                    id: "sasl",
                    outcome: Outcome::Info,
                    text: format!(
                        "SASL DIGEST-MD5 is taken; its challenge offers qop {}{}",
                        offer.qop.join(","),
                        if offer.ciphers.is_empty() {
                            String::new()
                        } else {
                            format!(" (auth-conf ciphers {})", offer.ciphers.join(","))
                        }
                    ),
                });
                facts.sasl = Some(offer);
            }
            None => checks.push(Check {
                id: "sasl",
                outcome: Outcome::Info,
                text: "a SASL first step was answered with something that is not a \
                       DIGEST-MD5 challenge"
                    .into(),
            }),
        },
        FirstStep::Failure(e) => checks.push(Check {
            id: "sasl",
            outcome: if auth_on {
                Outcome::Pass
            } else {
                Outcome::Info
            },
            text: if auth_on {
                format!("SASL is refused: {}", first_line(&e))
            } else {
                "SASL is not spoken (no authentication at all)".into()
            },
        }),
        FirstStep::Gone(why) => checks.push(Check {
            id: "sasl",
            outcome: Outcome::Info,
            text: format!("a SASL first step went unanswered: the target {why}"),
        }),
    }

    // The auth engine: a challenge sealed with a secret the target does not hold.
    let mut wrong = [0u8; 24];
    let _ = getrandom::getrandom(&mut wrong);
    let wrong: String = wrong.iter().map(|b| format!("{b:02x}")).collect();
    let engine_step = match EngineClient::new(SASL_USER, &wrong, EngineVersion::V1) {
        Ok(c) => Ok(first_step(o, c.challenge().encode()).await?),
        Err(e) => Err(e),
    };
    spoke |= matches!(
        engine_step,
        Ok(FirstStep::Response(_) | FirstStep::Failure(_))
    );
    match engine_step {
        Ok(step) => match step {
            FirstStep::Failure(e) if e.contains("Authentication failed") => {
                facts.engine = Some(true);
                checks.push(Check {
                    id: "engine",
                    outcome: Outcome::Pass,
                    text: "the auth engine of spark.network.crypto is spoken (it failed a \
                           challenge sealed with a wrong secret): traffic after it is encrypted"
                        .into(),
                });
            }
            FirstStep::Failure(e) => {
                facts.engine = Some(false);
                checks.push(Check {
                    id: "engine",
                    outcome: Outcome::Info,
                    text: format!(
                        "the X25519 auth engine of spark.network.crypto (Spark 3.1.3 on) is not \
                         spoken: {}",
                        first_line(&e)
                    ),
                });
            }
            FirstStep::Response(_) => {
                // A target that answers a challenge it cannot have opened takes anything.
                facts.engine = Some(true);
                checks.push(Check {
                    id: "engine",
                    outcome: Outcome::Finding(Severity::High),
                    text: "an auth engine challenge sealed with a wrong secret was answered as \
                           if it were right"
                        .into(),
                });
            }
            FirstStep::Gone(why) => checks.push(Check {
                id: "engine",
                outcome: Outcome::Info,
                text: format!("an auth engine challenge went unanswered: the target {why}"),
            }),
        },
        Err(e) => checks.push(Check {
            id: "engine",
            outcome: Outcome::Info,
            text: format!("no auth engine challenge could be made: {e}"),
        }),
    }

    // The original AES protocol, broken by CVE-2021-38296.
    let legacy_step = first_step(o, legacy_challenge()).await?;
    spoke |= !matches!(legacy_step, FirstStep::Gone(_));
    if !spoke {
        return Err(AuditError::NotSpark(
            name,
            "no probe (an RPC, a SASL, an auth engine or a ClientChallenge first step) was \
             answered with a Spark frame"
                .into(),
        ));
    }
    match legacy_step {
        // Only a server that speaks the original protocol fails a ClientChallenge this way: one
        // that speaks only the X25519 engine (Spark 3.1.3 on) fails it as a SASL server fails a
        // stranger, or as "Unknown challenge message." without SASL fallback. A sparkwire server
        // opted in with sparkwire.legacyAuthEngine=true speaks both.
        FirstStep::Failure(e) if e.contains("Authentication failed") => {
            facts.legacy_engine = Some(true);
            checks.push(Check {
                id: "legacy-engine",
                outcome: Outcome::Finding(Severity::High),
                text: "the original AES-based auth protocol of spark.network.crypto \
                       (ClientChallenge, Spark 2.2 to 3.1.2) is spoken: its session key can be \
                       recovered from a captured exchange (CVE-2021-38296); run a release with \
                       the X25519 auth engine (3.1.3, 3.2 and later)"
                    .into(),
            });
        }
        FirstStep::Failure(_) | FirstStep::Gone(_) => {
            facts.legacy_engine = Some(false);
            checks.push(Check {
                id: "legacy-engine",
                outcome: if auth_on {
                    Outcome::Pass
                } else {
                    Outcome::Info
                },
                text: "the original AES-based auth protocol (CVE-2021-38296) is not spoken".into(),
            });
        }
        FirstStep::Response(_) => {
            facts.legacy_engine = Some(true);
            checks.push(Check {
                id: "legacy-engine",
                outcome: Outcome::Finding(Severity::High),
                text: "a ClientChallenge of the original AES protocol (CVE-2021-38296) sealed \
                       with a wrong secret was answered"
                    .into(),
            });
        }
    }

    // 3. Downgrades: SASL beside the engine, or no encryption at all.
    if auth_on {
        let plaintext_sasl = facts.sasl.as_ref().is_some_and(SaslOffer::plaintext);
        // Either AES protocol of spark.network.crypto: SASL beside it is the downgrade.
        let crypto =
            (facts.engine == Some(true) || facts.legacy_engine == Some(true)).then_some(true);
        let (outcome, text) = match (crypto, &facts.sasl) {
            (Some(true), Some(offer)) => (
                Outcome::Finding(Severity::Medium),
                format!(
                    "SASL is taken beside spark.network.crypto (its saslFallback=true, \
                     Spark's default): a peer, or a man in the middle, can authenticate with SASL \
                     instead{}; set spark.network.crypto.saslFallback=false",
                    if offer.plaintext() {
                        " and the session is then not encrypted (qop auth)"
                    } else {
                        ""
                    }
                ),
            ),
            (Some(true), None) => (
                Outcome::Pass,
                "only the auth engine is taken: no downgrade to SASL".to_string(),
            ),
            (_, Some(_)) if plaintext_sasl => (
                Outcome::Finding(Severity::Medium),
                "authentication is SASL without encryption (qop auth; \
                 spark.network.crypto.enabled=false): RPC after it, the application's \
                 descriptions and tasks included, crosses the network in the clear; set \
                 spark.network.crypto.enabled=true"
                    .to_string(),
            ),
            (_, Some(_)) => (
                Outcome::Pass,
                "SASL sessions are always encrypted (qop auth-conf only)".to_string(),
            ),
            _ => (
                Outcome::Info,
                "which schemes are taken could not be told".to_string(),
            ),
        };
        checks.push(Check {
            id: "downgrade",
            outcome,
            text,
        });
    }

    // 4. With the secret: is it taken, and what an authenticated peer reads.
    if let Some(secret) = &o.secret {
        if auth_on {
            let engine = facts.engine == Some(true);
            match secret_session(o, secret, engine).await {
                Ok(SecretSession {
                    probe: mut session,
                    negotiated,
                    role,
                    release,
                }) => {
                    facts.secret_session = Some(negotiated);
                    checks.push(Check {
                        id: "secret",
                        outcome: Outcome::Pass,
                        text: format!("the secret given is taken: {negotiated}"),
                    });
                    facts.role = Some(role);
                    facts.scala = Some(release.scala().to_string());
                    match read_state(&mut session, &target, role, release).await {
                        Ok((exposures, releases)) => {
                            facts.state_read = true;
                            facts.state_exposures = exposures;
                            facts.releases = releases;
                        }
                        Err(why) => state_unread = Some(why),
                    }
                }
                Err(why) => checks.push(Check {
                    id: "secret",
                    outcome: Outcome::Info,
                    text: format!("the secret given did not open a session: {why}"),
                }),
            }
        } else {
            checks.push(Check {
                id: "secret",
                outcome: Outcome::Info,
                text: "a secret was given, but the target asks for none".into(),
            });
        }
    }

    // 5. The state answer.
    if facts.state_read {
        let who = if facts.rpc_without_auth == Some(true) {
            "without authentication"
        } else {
            "with the secret"
        };
        checks.push(if facts.state_exposures.is_empty() {
            Check {
                id: "state",
                outcome: Outcome::Pass,
                text: format!("the state answer (read {who}) shows no secret"),
            }
        } else {
            Check {
                id: "state",
                outcome: Outcome::Finding(Severity::High),
                text: format!(
                    "the state answer (read {who}) shows secrets: {}",
                    exposures_text(&facts.state_exposures)
                ),
            }
        });
    } else if let Some(why) = state_unread {
        checks.push(Check {
            id: "state",
            outcome: Outcome::Info,
            text: format!("the state answer could not be read: {why}"),
        });
    } else {
        checks.push(Check {
            id: "state",
            outcome: Outcome::Pass,
            text: "the state answer cannot be read without the secret".into(),
        });
    }

    // 6. The REST submission server.
    let rest_port = match o.rest_port {
        HttpPort::Default => Some(6066),
        HttpPort::At(p) => Some(p),
        HttpPort::Off => None,
    };
    if let Some(port) = rest_port {
        let path = format!("/v1/submissions/status/{}", absent_submission());
        match http_get(&o.host, port, &path, o.timeout).await {
            Ok(None) => checks.push(Check {
                id: "rest",
                outcome: Outcome::Pass,
                text: format!("nothing listens on the REST submission port {port}"),
            }),
            Ok(Some(a)) => {
                let spark = a.body.contains("SubmissionStatusResponse")
                    || a.body.contains("serverSparkVersion");
                let (outcome, text) = if (200..300).contains(&a.status) || spark {
                    (
                        Outcome::Finding(Severity::High),
                        format!(
                            "the REST submission server on port {port} answers without \
                             credentials (HTTP {}): anyone who reaches it can submit a driver, \
                             that is run code on a worker (CVE-2018-11770's class); set \
                             spark.master.rest.enabled=false",
                            a.status
                        ),
                    )
                } else if a.status == 401 || a.status == 403 {
                    (
                        Outcome::Pass,
                        format!(
                            "the REST port {port} asks for credentials (HTTP {})",
                            a.status
                        ),
                    )
                } else {
                    (
                        Outcome::Info,
                        format!(
                            "port {port} answers HTTP {} to a REST status request, not as \
                             Spark's REST server",
                            a.status
                        ),
                    )
                };
                facts.rest_version = serde_json::from_str::<serde_json::Value>(&a.body)
                    .ok()
                    .and_then(|v| v.get("serverSparkVersion")?.as_str().map(str::to_string));
                facts.rest = Some(a);
                checks.push(Check {
                    id: "rest",
                    outcome,
                    text,
                });
            }
            Err(e) => checks.push(Check {
                id: "rest",
                outcome: Outcome::Info,
                text: format!("REST port {port}: {e}"),
            }),
        }
    }

    // 7. The web UI's JSON.
    let ui_port = match o.ui_port {
        HttpPort::Default => Some(if facts.role == Some(TargetRole::Worker) {
            8081
        } else {
            8080
        }),
        HttpPort::At(p) => Some(p),
        HttpPort::Off => None,
    };
    if let Some(port) = ui_port {
        match http_get(&o.host, port, "/json/", o.timeout).await {
            Ok(None) => checks.push(Check {
                id: "web-ui",
                outcome: Outcome::Info,
                text: format!("nothing listens on the web UI port {port}"),
            }),
            Ok(Some(a)) => {
                let json = a.body.trim_start().starts_with('{');
                let check = if (200..300).contains(&a.status) && json {
                    let exposures = scan_secrets(&a.body);
                    let c = if exposures.is_empty() {
                        Check {
                            id: "web-ui",
                            outcome: Outcome::Info,
                            text: format!(
                                "the web UI on port {port} serves its state as JSON without \
                                 credentials; it shows no secret"
                            ),
                        }
                    } else {
                        Check {
                            id: "web-ui",
                            outcome: Outcome::Finding(Severity::High),
                            text: format!(
                                "the web UI on port {port} serves secrets without credentials: {}",
                                exposures_text(&exposures)
                            ),
                        }
                    };
                    facts.web_ui_exposures = exposures;
                    c
                } else {
                    Check {
                        id: "web-ui",
                        outcome: if a.status == 401 || a.status == 403 {
                            Outcome::Pass
                        } else {
                            Outcome::Info
                        },
                        text: format!(
                            "the web UI port {port} answers /json/ with HTTP {}",
                            a.status
                        ),
                    }
                };
                facts.web_ui = Some(a);
                checks.push(check);
            }
            Err(e) => checks.push(Check {
                id: "web-ui",
                outcome: Outcome::Info,
                text: format!("web UI port {port}: {e}"),
            }),
        }
    }

    Ok(AuditReport {
        target: name,
        facts,
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_found_after_their_keys_and_shown_redacted() {
        let text = r#"javaOpts: -Dspark.authenticate.secret=hunter2 -Dspark.ui.port=4040
            "environment": {"_SPARK_AUTH_SECRET": "abcdef", "DB_PASSWORD": "pw1"}
            spark.ssl.keyPassword=*********(redacted) password field"#;
        let found = scan_secrets(text);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(
            shown.contains(&"-Dspark.authenticate.secret=<7 characters, redacted>".to_string()),
            "{shown:?}"
        );
        assert!(shown.contains(&"_SPARK_AUTH_SECRET=<6 characters, redacted>".to_string()));
        assert!(shown.contains(&"DB_PASSWORD=<3 characters, redacted>".to_string()));
        assert_eq!(
            found.len(),
            3,
            "redacted values and bare words are not secrets: {shown:?}"
        );
        assert!(!shown.iter().any(|s| s.contains("hunter2")));
        assert!(scan_secrets("spark.authenticate=true, a password-less setup").is_empty());
    }

    #[test]
    fn a_map_s_secret_key_and_its_value_are_found_among_a_stream_s_strings() {
        let found = scan_strings([
            "SPARK_HOME",
            "/opt/spark",
            "_SPARK_AUTH_SECRET",
            "s3cr3t",
            "-Dspark.db.password=pw",
            "spark.ssl.keyPassword",
            "*********(redacted)",
        ]);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "_SPARK_AUTH_SECRET=<6 characters, redacted>",
                "-Dspark.db.password=<2 characters, redacted>"
            ]
        );
    }

    #[test]
    fn a_digest_challenge_shows_its_offer() {
        let offer = sasl_offer(
            br#"realm="default",nonce="abc",qop="auth-conf,auth",charset=utf-8,cipher="3des,rc4",algorithm=md5-sess"#,
        )
        .expect("a challenge");
        assert_eq!(offer.qop, vec!["auth-conf", "auth"]);
        assert_eq!(offer.ciphers, vec!["3des", "rc4"]);
        assert!(offer.plaintext());
        let strict =
            sasl_offer(br#"realm="default",nonce="abc",qop="auth-conf",algorithm=md5-sess"#)
                .expect("a challenge");
        assert!(!strict.plaintext());
        assert_eq!(sasl_offer(b"not a challenge"), None);
    }

    #[test]
    fn the_legacy_challenge_is_shaped_as_spark_2_2_to_3_1_read_it() {
        let b = legacy_challenge();
        assert_eq!(b[0], 0xFA);
        // tag, appId, kdf, iterations, cipher, keyLength, nonce, challenge
        let expected =
            1 + (4 + SASL_USER.len()) + (4 + 18) + 4 + (4 + 17) + 4 + (4 + 16) + (4 + 32);
        assert_eq!(b.len(), expected);
        assert_eq!(&b[5..5 + SASL_USER.len()], SASL_USER.as_bytes());
    }

    #[test]
    fn one_release_form_per_scala_line_newest_first() {
        let forms = release_forms();
        assert!(!forms.is_empty());
        let newest = Release::all().last().expect("releases");
        assert_eq!(forms[0].name(), newest.name());
        let mut scalas: Vec<&str> = forms.iter().map(|r| r.scala()).collect();
        scalas.dedup();
        assert_eq!(scalas.len(), forms.len());
    }
}
