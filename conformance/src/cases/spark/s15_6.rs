//! `spark/15.6/…`: SPEC §15.6, Spark's own authentication on its wire (`spark.authenticate`):
//! what an endpoint holding the secret does with a peer that does not authenticate, proves
//! another secret, speaks SASL where it may not, or writes in the clear after an encrypted
//! bootstrap. They run with `--wire spark --secret-file F` (and `--spark-conf` for the
//! endpoint's settings), and are skipped otherwise.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::kit::common::crossing;
use crate::kit::common::sample;
use crate::kit::spark_auth::*;
use sparkwire::definition::MessageKind;
use sparkwire::messages::DeployMessage;
use std::time::Duration;

type D = DeployMessage;

const A1: &str = "SPEC §15.6 A1, \"It MUST NOT act on any frame a peer sends before the peer's bootstrap \
    completed: a request that is neither the bootstrap's next message nor of the bootstrap is failed and the \
    connection closed, and nothing it carries (a registration, a submission, an ask for state) reaches the \
    endpoint or changes what the endpoint's state answer shows.\"";
const A2: &str = "SPEC §15.6 A2, \"It MUST refuse a peer whose proof does not match the secret (a SASL \
    digest-response or an `AuthMessage` made with another secret) with an `RpcFailure` and close the \
    connection; the peer leaves no trace in the endpoint's state.\"";
const A3: &str =
    "SPEC §15.6 A3, \"With `spark.network.crypto.saslFallback=false` it MUST refuse SASL, \
    [...]: a peer it demands encryption of never gets an unencrypted session.\"";
const A4: &str = "SPEC §15.6 A4, \"Once a session is encrypted, it MUST read the peer's bytes only through \
    the session's cipher: a frame sent in the clear after an encrypted bootstrap, [...], is not acted on.\"";

/// The cases of this section for the master target.
pub fn for_master(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spark/15.6/A1/unauthenticated-register".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A1.into(),
        requirement: "a RegisterWorker sent with no bootstrap draws only a failure or a close, and the worker is not \
            registered"
            .into(),
        body: run(|ctx: Ctx| async move {
            let w = Candidate::new();
            let mut p = RawPeer::to_master(&ctx, "unauthenticated").await?;
            p.message(None, w.register()).await?;
            not_acted_on(&mut p, None, "a RegisterWorker sent with no bootstrap").await?;
            drop(p);
            not_registered(&ctx, &w).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A1/catalogue-unauthenticated".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        quote: A1.into(),
        requirement: "each message the master takes, sent with no bootstrap on a connection of its own, draws only a \
            failure or a close"
            .into(),
        body: run(|ctx: Ctx| async move {
            let w = Candidate::new();
            let mut tasks = tokio::task::JoinSet::new();
            for msg in crossing("deploy") {
                if !msg.to.iter().any(|r| r == "master") {
                    continue;
                }
                let m: D = match msg.name.as_str() {
                    "RegisterWorker" => w.register(),
                    _ => sample(msg)?,
                };
                let ask = (msg.kind == MessageKind::Ask).then_some(31);
                let ctx = ctx.clone();
                let name = msg.name.clone();
                tasks.spawn(async move {
                    let mut p = RawPeer::to_master(&ctx, &format!("unauthenticated {name}")).await?;
                    if !p.message(ask, m).await? {
                        // A message this release has no form of: nothing to send.
                        return Ok(());
                    }
                    not_acted_on(&mut p, ask, &format!("a {name} sent with no bootstrap")).await
                });
            }
            let mut first = None;
            while let Some(r) = tasks.join_next().await {
                let r = r.map_err(|e| fail("a message's check", e.to_string()))?;
                if let (Err(e), None) = (r, &first) {
                    first = Some(e);
                }
            }
            if let Some(e) = first {
                return Err(e);
            }
            not_registered(&ctx, &w).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A1/after-failed-bootstrap".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A1.into(),
        requirement: "after a SASL bootstrap with another secret is refused, a RegisterWorker on that connection \
            registers nothing"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (auth, _) = spark_auth(&ctx)?;
            let wrong = wrong_secret(&auth.secret);
            let w = Candidate::new();
            let mut p = RawPeer::to_master(&ctx, "wrong secret").await?;
            let got = p.sasl(&wrong, 1).await?;
            refused(got, "the bootstrap with another secret refused")?;
            p.message(None, w.register()).await?;
            not_acted_on(&mut p, None, "a RegisterWorker after a failed bootstrap").await?;
            drop(p);
            not_registered(&ctx, &w).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A2/wrong-secret-sasl".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A2.into(),
        requirement: "a SASL DIGEST-MD5 bootstrap made with another secret is refused: an RpcFailure or a close, \
            never an RpcResponse"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (auth, _) = spark_auth(&ctx)?;
            let wrong = wrong_secret(&auth.secret);
            let mut p = RawPeer::to_master(&ctx, "wrong secret").await?;
            let got = p.sasl(&wrong, 1).await?;
            refused(got, "the digest-response made with another secret refused")
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A2/wrong-secret-engine".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A2.into(),
        requirement: "an AuthMessage made with another secret is refused: an RpcFailure or a close, never an \
            RpcResponse"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (auth, _) = spark_auth(&ctx)?;
            let wrong = wrong_secret(&auth.secret);
            let mut p = RawPeer::to_master(&ctx, "wrong secret").await?;
            let (got, _) = p.engine(&wrong, 1).await?;
            refused(got, "the AuthMessage made with another secret refused")
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A3/sasl-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A3.into(),
        requirement: "with saslFallback=false (told by --spark-conf) a SASL bootstrap is refused, even with the right \
            secret"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (auth, _) = spark_auth(&ctx)?;
            if !auth.refuses_sasl() {
                return Err(Failure::Skipped(
                    "the endpoint takes SASL: give --spark-conf spark.network.crypto.enabled=true \
                     --spark-conf spark.network.crypto.saslFallback=false when it refuses it"
                        .into(),
                ));
            }
            let secret = auth.secret.clone();
            let mut p = RawPeer::to_master(&ctx, "SASL").await?;
            let got = p.sasl(&secret, 1).await?;
            refused(got, "SASL refused (an RpcFailure or a close)")
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.6/A4/cleartext-after-engine".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        quote: A4.into(),
        requirement: "after an auth engine bootstrap, a RegisterWorker sent in the clear draws no answer in the clear \
            and registers nothing"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (auth, _) = spark_auth(&ctx)?;
            if !auth.engine() {
                return Err(Failure::Skipped(
                    "the endpoint's cluster runs SASL: give --spark-conf \
                     spark.network.crypto.enabled=true when it runs the auth engine"
                        .into(),
                ));
            }
            let secret = auth.secret.clone();
            let w = Candidate::new();
            let mut p = RawPeer::to_master(&ctx, "cleartext").await?;
            let (got, client) = p.engine(&secret, 1).await?;
            let Got::Response(_, body) = got else {
                return Err(fail("the AuthMessage answered", format!("{got:?}")));
            };
            let answer = sparkwire::spark::auth::AuthMessage::decode(&body)
                .map_err(|e| fail("the server's AuthMessage", e.to_string()))?;
            client
                .finish(&answer)
                .map_err(|e| fail("the server's AuthMessage proving the secret", e.to_string()))?;
            p.message(None, w.register()).await?;
            not_acted_on(&mut p, None, "a RegisterWorker in the clear after the engine").await?;
            drop(p);
            not_registered(&ctx, &w).await
        }),
        ..Case::default()
    });
}
