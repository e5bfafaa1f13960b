//! `--target master`, the admin secret: SPEC §13 (who may change the master's state from a UI)
//! and handshake.md §10.1 (the admin proof). Each case starts a server of its own holding a
//! shared secret and, but one, an admin secret (`--spawn-server`, `{secret_file}` and
//! `{admin_secret_file}`), both drawn by the suite. One function per case.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::own_server::OwnServer;
use crate::kit::own_server::Settings;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Family;
use sparkwire::wire::handshake::Secret;
use sparkwire::wire::Envelope;

pub(crate) type D = DeployMessage;

pub(crate) async fn admin_server(ctx: &Ctx) -> Result<OwnServer, Failure> {
    OwnServer::start(
        ctx,
        Settings {
            secret: true,
            admin: true,
            ..Settings::default()
        },
        &["secret_file", "admin_secret_file"],
    )
    .await
}

/// Asks `m` as ask `id` on `c` and expects the refusal of SPEC §13 naming `name`.
pub(crate) async fn denied(ctx: &Ctx, c: &mut Conn, id: u64, m: D) -> Outcome {
    let name = m.name();
    c.send(&Envelope::Ask { id, message: m }).await?;
    let want = format!(
        "a failure for ask {id} of class java.lang.SecurityException, its message beginning `Permission denied:` and \
            naming {name}"
    );
    let answer = c
        .expect::<D, Envelope<D>>(wait(ctx), &want, |e| match e {
            Envelope::Failure { id: r, .. } | Envelope::Reply { id: r, .. } if *r == id => {
                Some(e.clone())
            }
            _ => None,
        })
        .await?;
    match answer {
        Envelope::Failure { error, .. } => check(
            error.class_name == "java.lang.SecurityException"
                && error.message.starts_with("Permission denied:")
                && error.message.contains(name),
            want,
            format!("a failure {}: {}", error.class_name, error.message),
        ),
        other => Err(fail(want, crate::harness::peer::envelope_label(&other))),
    }
}

/// An admin secret no server of these cases holds.
pub(crate) fn another_admin_secret() -> Result<Secret, Failure> {
    sparkwire::connection::generate_secret()
        .map_err(|e| fail("a secret the suite draws", e.to_string()))
}
