//! `--target master`, handshake.md §12 (features) and SPEC §8.1 (the close envelope only to a
//! peer that asked for it), as a server answers them. One function per case; each cites the
//! sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::auth_entries;
use crate::harness::peer::Conn;
use crate::harness::verdict::fail;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::master::addr;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;

/// A feature name no version of the protocol defines.
pub(crate) const UNKNOWN_FEATURE: &str = "conformanceUnknownFeature";

/// Sends a hello of a UI whose `features` is `features` (as written) and expects malformedHello.
pub(crate) async fn features_refused(ctx: &Ctx, features: Vec<u8>, what: &str) -> Outcome {
    let mut entries = mp::hello_entries(&[1, 2], Role::Ui.name(), "suite");
    entries.push(("features", features));
    entries.extend(auth_entries(ctx.settings.secret.as_ref())?);
    let body = mp::map(&entries);
    let mut c = Conn::connect(addr(ctx)?, "ui", Role::Ui, &ctx.log).await?;
    c.send_frame(&body).await?;
    let want =
        format!("a refusal (malformedHello) of a hello whose features is {what}, then the close");
    match c
        .read_answer_to(&body, ctx.settings.secret.as_ref(), wait(ctx))
        .await?
    {
        Answer::Refused(r) if r.reason == RefusalReason::MalformedHello => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    c.expect_closed(crate::kit::common::reaction_wait(ctx), &want)
        .await
}
