//! Accepting an endpoint that dials the suite, with the close-reason feature or others offered.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure};
use crate::kit::common::wait;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{negotiate, Accepted, Answer, Hello, CLOSE_REASON};

/// Accepts `hello` (just read on `c`) at the highest of `versions` both speak, taking
/// closeReason; the secret proved first when the suite holds it. Skipped when the endpoint does
/// not offer closeReason or none of `versions`.
pub async fn accept_taking_close_reason(
    ctx: &Ctx,
    c: &mut Conn,
    hello: &Hello,
    versions: &[Version],
    id: &str,
) -> Result<Version, Failure> {
    if !hello.offers(CLOSE_REASON) {
        return Err(Failure::Skipped(
            "the endpoint does not offer closeReason".into(),
        ));
    }
    accept_with_features(ctx, c, hello, versions, id, &[CLOSE_REASON]).await
}

/// Accepts `hello` (just read on `c`) at the highest of `versions` both speak, taking exactly
/// `features` (none: the answer has no `features` key), the secret proved first when the suite
/// holds it.
pub async fn accept_with_features(
    ctx: &Ctx,
    c: &mut Conn,
    hello: &Hello,
    versions: &[Version],
    id: &str,
    features: &[&str],
) -> Result<Version, Failure> {
    let Some(v) = negotiate(&hello.versions, versions) else {
        return Err(Failure::Skipped(format!(
            "the endpoint offers versions {:?}, none of {versions:?}",
            hello.versions
        )));
    };
    let answer = match &ctx.settings.secret {
        Some(secret) => c.authenticate_client(&[v], id, secret, wait(ctx)).await?,
        None => Answer::Accepted(Accepted {
            version: v,
            versions: versions.iter().map(|v| u64::from(v.number())).collect(),
            role: c.role,
            id: id.to_string(),
            features: Vec::new(),
        }),
    };
    let Answer::Accepted(mut a) = answer else {
        return Err(fail("an acceptance", format!("{answer:?}")));
    };
    a.features = features.iter().map(|f| f.to_string()).collect();
    c.send_answer(&Answer::Accepted(a)).await?;
    c.version = Some(v);
    Ok(v)
}
