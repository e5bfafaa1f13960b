//! `--target driver`: the suite plays the master of a driver it starts, and its executors.

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::verdict::fail;
use crate::kit::auth;
use crate::kit::auth::Guarded;
use crate::kit::auth::Seen;
use crate::kit::common::wait;
use crate::kit::driver::*;
use crate::kit::endpoint::{Change, Endpoint, Messages, Reach};
use crate::kit::server::Listening;
use sparkwire::messages::coarse::*;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;
use std::sync::Arc;

pub(crate) type C = CoarseMessage;

/// The driver as the cases about any server see it.
pub fn server() -> Endpoint {
    fn probe() -> Vec<(&'static str, Vec<u8>)> {
        vec![("resourceProfileId", mp::u(0))]
    }
    fn v2() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::s("1"))]
    }
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::u(5))]
    }
    // The driver's own StopExecutor: an executor may not send it.
    fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
        vec![]
    }
    Endpoint {
        name: "the driver (on its executor port)",
        family: "coarse",
        role: Role::Driver,
        suite_role: Role::Executor,
        other_family_role: Role::Worker,
        reach: Reach::Listens(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let d = registered(&ctx, SMALL).await?;
                let addr = d.driver_addr;
                Ok(Listening {
                    addr,
                    guard: Box::new(Arc::new(std::sync::Mutex::new(d))),
                })
            })
        })),
        messages: Some(Messages {
            probe: ("RetrieveSparkAppConfig", probe),
            refused: "RetrieveDelegationTokens",
            v2_only: ("IsExecutorAlive", v2),
            local: "ReviveOffers",
            bad_fields: ("IsExecutorAlive", bad),
            off_route: ("StopExecutor", no_fields),
        }),
        change: None,
        spark: None,
    }
}

/// The driver as the cases about any client see it.
pub fn client() -> Endpoint {
    Endpoint {
        name: "the driver's application client",
        family: "deploy",
        role: Role::AppClient,
        suite_role: Role::Master,
        other_family_role: Role::Driver,
        reach: Reach::Dials(Arc::new(|ctx| Box::pin(start(ctx, SMALL)))),
        messages: None,
        change: None,
        spark: None,
    }
}

/// The driver as the authentication cases see it: registered with the suite's master, it holds
/// the secret on its executor port, and an executor's RegisterExecutor there changes its state
/// (IsExecutorAlive answers true for it).
pub fn secured() -> Endpoint {
    Endpoint {
        name: "a driver (on its executor port)",
        family: "coarse",
        role: Role::Driver,
        suite_role: Role::Executor,
        other_family_role: Role::Worker,
        reach: Reach::Guarded(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let d = registered(&ctx, SMALL).await?;
                let addr = d.driver_addr;
                let id = format!("auth{}", crate::kit::common::unique() % 100_000);
                let mut change = Vec::new();
                let register = Envelope::Ask {
                    id: 1,
                    message: register_msg(&id, 1),
                };
                encode_envelope(&register, Version::V2, &mut change)
                    .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
                let seen: Seen = Arc::new(move || {
                    let (ctx, id) = (ctx.clone(), id.clone());
                    Box::pin(async move {
                        let mut c = auth::open_secured(&ctx, addr, Role::Executor, "probe").await?;
                        let ask = C::IsExecutorAlive(IsExecutorAlive::new(id));
                        c.send(&Envelope::Ask {
                            id: 2,
                            message: ask,
                        })
                        .await?;
                        c.expect::<C, bool>(wait(&ctx), "a bool reply to IsExecutorAlive", |x| {
                            match x {
                                Envelope::Reply {
                                    id: 2,
                                    reply: Reply::Bool(b),
                                } => Some(*b),
                                _ => None,
                            }
                        })
                        .await
                    })
                });
                Ok(Guarded {
                    at: Listening {
                        addr,
                        guard: Box::new(Arc::new(std::sync::Mutex::new(d))),
                    },
                    role: Role::Executor,
                    change,
                    seen,
                })
            })
        })),
        messages: None,
        change: Some(Change {
            what: "RegisterExecutor",
            case: "register",
        }),
        spark: None,
    }
}
