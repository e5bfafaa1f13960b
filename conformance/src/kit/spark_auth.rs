//! Spark's own authentication as the cases of SPEC §15.6 play it: a peer that writes Spark's
//! frames itself on a connection of its own (no bootstrap, a bootstrap with another secret, a
//! cleartext frame after an encrypted bootstrap), and a second, authenticated peer that shows
//! whether the endpoint's state changed (a worker registered under an id: registering it again
//! is then answered as a duplicate).
//!
//! Each frame the peer writes and reads is in the case's log.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::{DeployMessage, Family, Version};
use sparkwire::spark::auth::{DigestClient, EngineClient, SaslMessage, SASL_USER};
use sparkwire::spark::{message_stream, Frame, FrameDecoder, Release, Typed};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::env::{Ctx, Wire};
use crate::harness::spark_auth::SparkAuth;
use crate::harness::spark_wire::{endpoint_of, SparkSide};
use crate::harness::verdict::{fail, Failure, Outcome};
use crate::kit::common::{unique, wait};
use crate::kit::master::{addr, open, register_worker_msg};

type D = DeployMessage;

/// The run's Spark authentication and release, or a skip: the cases need `--wire spark` and the
/// endpoint's secret.
pub fn spark_auth(ctx: &Ctx) -> Result<(&SparkAuth, &'static Release), Failure> {
    let Wire::Spark(release) = ctx.log.wire() else {
        return Err(Failure::Skipped(
            "a case about Spark's own authentication: only with --wire spark".into(),
        ));
    };
    let auth = ctx.log.spark_auth().ok_or_else(|| {
        Failure::Skipped(
            "the suite does not know the endpoint's spark.authenticate.secret: give --secret-file \
             PATH (and --spark-conf for its settings) to run the cases of SPEC §15.6"
                .into(),
        )
    })?;
    Ok((auth, release))
}

/// A secret that is not the endpoint's: the same text and one more character.
pub fn wrong_secret(secret: &str) -> String {
    format!("{secret}!")
}

/// What the endpoint wrote next on a [`RawPeer`].
#[derive(Debug, Clone)]
pub enum Got {
    /// An `RpcResponse` (its request id and body).
    Response(i64, Bytes),
    /// An `RpcFailure` (its request id and text).
    Failure(i64, String),
    /// Another frame, or bytes that are no frame in the clear (described).
    Other(String),
    /// The connection closed (how).
    Closed(String),
    /// Nothing within the wait.
    Nothing,
}

/// A peer writing Spark's frames itself, on a connection that runs no bootstrap of its own.
pub struct RawPeer {
    stream: TcpStream,
    decoder: FrameDecoder,
    side: SparkSide,
    label: String,
    ctx: Ctx,
    closed: Option<String>,
}

impl RawPeer {
    /// Connects to `at` as `label`.
    pub async fn connect(ctx: &Ctx, at: SocketAddr, label: &str) -> Result<RawPeer, Failure> {
        let (_, release) = spark_auth(ctx)?;
        let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(at))
            .await
            .map_err(|_| fail(format!("a TCP connection to {at}"), "connect timed out"))?
            .map_err(|e| fail(format!("a TCP connection to {at}"), e.to_string()))?;
        let _ = stream.set_nodelay(true);
        ctx.log.push(format!(
            "[{label}] connected to {at}, running no bootstrap of the suite's"
        ));
        let peer = (
            Some((at.ip().to_string(), i32::from(at.port()))),
            endpoint_of(ctx.settings.target).to_string(),
        );
        Ok(RawPeer {
            stream,
            decoder: FrameDecoder::default(),
            side: SparkSide::new(release, peer, "Worker"),
            label: label.to_string(),
            ctx: ctx.clone(),
            closed: None,
        })
    }

    /// Connects to the master under test.
    pub async fn to_master(ctx: &Ctx, label: &str) -> Result<RawPeer, Failure> {
        RawPeer::connect(ctx, addr(ctx)?, label).await
    }

    fn log(&self, line: String) {
        self.ctx.log.push(format!("[{}] {line}", self.label));
    }

    /// Writes `bytes`; a connection the endpoint closed is noted, not a failure (a refusal may
    /// close it).
    async fn write(&mut self, bytes: &[u8], what: &str) {
        self.log(format!("→ {what} ({} B)", bytes.len()));
        if let Err(e) = self.stream.write_all(bytes).await {
            self.log(format!("the write failed: {e}"));
            self.closed.get_or_insert(format!("the write failed: {e}"));
        }
    }

    /// Sends an `RpcRequest` with request id `id` whose body is `body`.
    pub async fn request(&mut self, id: i64, body: Vec<u8>, what: &str) -> Result<(), Failure> {
        let bytes = Frame::RpcRequest {
            request_id: id,
            body: body.into(),
        }
        .encode()
        .map_err(|e| fail("a frame the suite can write", e.to_string()))?;
        self.write(&bytes, &format!("RpcRequest {id}: {what}"))
            .await;
        Ok(())
    }

    /// Sends `m` to the endpoint under test as an ask with request id `id`, or one-way; `false`
    /// (logged, nothing sent) when the release spoken has no form of it (SPEC §15.3).
    pub async fn message(&mut self, id: Option<i64>, m: D) -> Result<bool, Failure> {
        let name = m.name();
        let stream = match message_stream(&Typed::Deploy(m), self.side.release(), None) {
            Ok(s) => s,
            Err(e) => {
                self.log(format!(
                    "{name} is not sent: Spark {} has no form of it ({e})",
                    self.side.release().name()
                ));
                return Ok(false);
            }
        };
        let endpoint = endpoint_of(self.ctx.settings.target);
        let bytes = self
            .side
            .raw_request(id, endpoint, stream.into())
            .map_err(|e| fail("a request the suite can write", e))?;
        let what = match id {
            Some(id) => format!("RpcRequest {id}: {name} to {endpoint}, in the clear"),
            None => format!("OneWayMessage: {name} to {endpoint}, in the clear"),
        };
        self.write(&bytes, &what).await;
        Ok(true)
    }

    /// What the endpoint writes next, within `within`.
    pub async fn next(&mut self, within: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(item) = self.decoder.next_item() {
                let got = match item.frame {
                    Ok(Frame::RpcResponse { request_id, body }) => Got::Response(request_id, body),
                    Ok(Frame::RpcFailure { request_id, error }) => Got::Failure(request_id, error),
                    Ok(f) => Got::Other(format!("a {} frame", f.kind().as_str())),
                    Err(e) => Got::Other(format!("bytes that are no frame in the clear: {e}")),
                };
                self.log(format!("← {got:?}"));
                return got;
            }
            if let Some(how) = &self.closed {
                return Got::Closed(how.clone());
            }
            let mut buf = vec![0u8; 16 * 1024];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut buf)).await {
                Err(_) => return Got::Nothing,
                Ok(Ok(0)) => {
                    self.closed = Some("end of stream".into());
                    self.log("← end of stream".into());
                }
                Ok(Ok(n)) => self.decoder.push(&buf[..n]),
                Ok(Err(e)) => {
                    self.closed = Some(e.to_string());
                    self.log(format!("← the connection failed: {e}"));
                }
            }
        }
    }

    /// The answer to request `id`: the first `RpcResponse` or `RpcFailure` for it, a close, or
    /// nothing within `within` (other frames are skipped and logged).
    pub async fn answer(&mut self, id: i64, within: Duration) -> Got {
        loop {
            match self.next(within).await {
                Got::Response(rid, _) | Got::Failure(rid, _) if rid != id => continue,
                Got::Other(_) if self.closed.is_none() && !self.decoder.is_lost() => continue,
                got => return got,
            }
        }
    }

    /// Runs SASL DIGEST-MD5 as a client holding `secret` up to the server's answer to the
    /// digest-response (request ids `first`, `first + 1`): that answer.
    pub async fn sasl(&mut self, secret: &str, first: i64) -> Result<Got, Failure> {
        let mut c = DigestClient::new(SASL_USER, secret);
        let m = SaslMessage {
            app_id: SASL_USER.into(),
            token: c.first_token(),
        };
        self.request(
            first,
            m.encode(),
            "SaslMessage: the client's first (empty) token",
        )
        .await?;
        let within = wait(&self.ctx);
        let challenge = match self.answer(first, within).await {
            Got::Response(_, body) => body,
            got => return Ok(got),
        };
        let response = c
            .step(&challenge)
            .map_err(|e| fail("a DIGEST-MD5 challenge", e.to_string()))?
            .ok_or_else(|| fail("a DIGEST-MD5 challenge", "a finished exchange"))?;
        let m = SaslMessage {
            app_id: SASL_USER.into(),
            token: response,
        };
        self.request(first + 1, m.encode(), "SaslMessage: the digest-response")
            .await?;
        Ok(self.answer(first + 1, within).await)
    }

    /// Sends the auth engine's `AuthMessage` of a client holding `secret` (request id `id`):
    /// the answer, and with it the client to finish the exchange with.
    pub async fn engine(&mut self, secret: &str, id: i64) -> Result<(Got, EngineClient), Failure> {
        let auth = spark_auth(&self.ctx)?.0;
        let c = EngineClient::new(SASL_USER, secret, auth.client.version)
            .map_err(|e| fail("an AuthMessage the suite can make", e.to_string()))?;
        self.request(
            id,
            c.challenge().encode(),
            "AuthMessage: the client's challenge",
        )
        .await?;
        Ok((self.answer(id, wait(&self.ctx)).await, c))
    }
}

/// An answer to a bootstrap request that refuses it: an `RpcFailure` for it, or the connection
/// closed. Anything else fails, naming `want`.
pub fn refused(got: Got, want: &str) -> Outcome {
    match got {
        Got::Failure(..) | Got::Closed(_) => Ok(()),
        Got::Response(id, body) => Err(fail(
            want,
            format!(
                "an RpcResponse {id} of {} B: the proof was taken",
                body.len()
            ),
        )),
        other => Err(fail(want, format!("{other:?}"))),
    }
}

/// Whether a message sent without the bootstrap was not acted on: it drew nothing but an
/// `RpcFailure` or a close (a one-way message may also draw nothing) within the wait.
pub async fn not_acted_on(p: &mut RawPeer, ask: Option<i64>, what: &str) -> Outcome {
    let within = wait(&p.ctx);
    match p.next(within).await {
        Got::Failure(..) | Got::Closed(_) | Got::Nothing => Ok(()),
        // Bytes that are no frame in the clear: the endpoint's own session's, not an answer.
        Got::Other(came) if came.starts_with("bytes that are no frame") => Ok(()),
        Got::Response(id, body) if Some(id) == ask => Err(fail(
            format!("{what} refused (an RpcFailure or a close)"),
            format!("its answer, an RpcResponse {id} of {} B", body.len()),
        )),
        Got::Response(id, body) => Err(fail(
            format!("{what} refused"),
            format!("an RpcResponse {id} of {} B", body.len()),
        )),
        Got::Other(came) => Err(fail(format!("{what} refused, nothing sent for it"), came)),
    }
}

/// A worker the cases try to register without authenticating: its id and address, unique to
/// the case.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The worker id.
    pub id: String,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
}

impl Candidate {
    /// A fresh one.
    pub fn new() -> Candidate {
        let n = unique();
        let port = 20000 + (n % 40000) as i32;
        Candidate {
            id: format!("worker-20250101120000-127.0.0.1-{port}-{n}"),
            host: "127.0.0.1".into(),
            port,
        }
    }

    /// Its RegisterWorker.
    pub fn register(&self) -> D {
        register_worker_msg(&self.id, &self.host, self.port, 1, 512)
    }
}

impl Default for Candidate {
    fn default() -> Self {
        Candidate::new()
    }
}

/// Shows that the master did not register `w` from an unauthenticated peer: a second peer,
/// authenticated, registers the same worker (id and address) and must be answered
/// `RegisteredWorker` as a new worker (not a duplicate, not `RegisterWorkerFailed`).
pub async fn not_registered(ctx: &Ctx, w: &Candidate) -> Outcome {
    let (_, release) = spark_auth(ctx)?;
    let version: Version = release.version();
    let mut c = open(ctx, Role::Worker, "authenticated", &w.id, version).await?;
    c.send(&Envelope::Send(w.register())).await?;
    let want = format!(
        "RegisteredWorker (not a duplicate) for worker {}: the master has no trace of it",
        w.id
    );
    c.expect::<D, Result<(), String>>(wait(ctx), &want, |e| match e {
        Envelope::Send(D::RegisteredWorker(r)) if !r.duplicate => Some(Ok(())),
        Envelope::Send(D::RegisteredWorker(_)) => Some(Err(
            "RegisteredWorker with duplicate = true: it was registered".to_string(),
        )),
        Envelope::Send(D::RegisterWorkerFailed(f)) => Some(Err(format!(
            "RegisterWorkerFailed({}): it was registered",
            f.message
        ))),
        _ => None,
    })
    .await?
    .map_err(|e| fail(want, e))
}
