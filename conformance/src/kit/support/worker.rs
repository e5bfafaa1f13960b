//! `--target worker`: the suite plays the master (and UI clients) of a worker it starts.

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::verdict::fail;
use crate::kit::auth;
use crate::kit::auth::Guarded;
use crate::kit::auth::Seen;
use crate::kit::common::wait;
use crate::kit::endpoint::{Change, Endpoint, Messages, Reach, SparkProbe};
use crate::kit::server::Listening;
use crate::kit::worker::*;
use sparkwire::messages::deploy::*;
use sparkwire::messages::Addr;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;
use std::sync::Arc;
use std::time::Duration;

pub(crate) type D = DeployMessage;

/// The worker as the cases about any server see it.
pub fn server() -> Endpoint {
    fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
        vec![]
    }
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("driverId", mp::u(5))]
    }
    // The master's KillDriver, well-formed: a UI may not send it.
    fn kill_driver() -> Vec<(&'static str, Vec<u8>)> {
        vec![("driverId", mp::s("driver-suite"))]
    }
    Endpoint {
        name: "the worker (on its UI port)",
        family: "deploy",
        role: Role::Worker,
        suite_role: Role::Ui,
        other_family_role: Role::Driver,
        reach: Reach::Listens(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let addr = ui_addr(&ctx, &mut w).await?;
                Ok(Listening {
                    addr,
                    guard: Box::new(Arc::new(std::sync::Mutex::new(w))),
                })
            })
        })),
        messages: Some(Messages {
            probe: ("RequestWorkerState", no_fields),
            refused: "RequestMasterState",
            v2_only: ("RequestReadyz", no_fields),
            local: "SendHeartbeat",
            bad_fields: ("KillDriver", bad),
            off_route: ("KillDriver", kill_driver),
        }),
        change: None,
        spark: None,
    }
}

/// The worker as the cases about any client see it.
pub fn client() -> Endpoint {
    Endpoint {
        name: "the worker",
        family: "deploy",
        role: Role::Worker,
        suite_role: Role::Master,
        other_family_role: Role::Driver,
        reach: Reach::Dials(Arc::new(|ctx| Box::pin(start(ctx)))),
        messages: None,
        change: None,
        spark: None,
    }
}

/// The worker as the `spark/15.…` cases see it on Spark's wire: as the cases about any server see
/// it, with what they ask it there.
pub fn spark_server() -> Endpoint {
    Endpoint {
        spark: Some(SparkProbe {
            probe: (
                || D::RequestWorkerState(RequestWorkerState::new()),
                |r| matches!(r, Reply::Message(D::WorkerStateResponse(_))),
            ),
            not_asked: || {
                D::ApplicationFinished(ApplicationFinished::new("app-20000101000000-9999".into()))
            },
        }),
        ..server()
    }
}

/// The worker as the authentication cases see it: registered with the suite's master, it holds
/// the secret on its port, and a master-role peer's MasterChanged there changes its state (it
/// takes that peer as its master: a UI's RequestWorkerState shows the new master URL).
pub fn secured() -> Endpoint {
    Endpoint {
        name: "a worker (on its port)",
        family: "deploy",
        role: Role::Worker,
        suite_role: Role::Master,
        other_family_role: Role::Driver,
        reach: Reach::Guarded(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let addr = ui_addr(&ctx, &mut w).await?;
                // The worker must have taken its registration (RegisteredWorker) first: a
                // MasterChanged read before it would be overtaken by it.
                let deadline = tokio::time::Instant::now() + wait(&ctx);
                loop {
                    let mut ui = auth::open_secured(&ctx, addr, Role::Ui, "").await?;
                    let s = worker_state(&ctx, &mut ui).await?;
                    if s.master_url == w.master_url {
                        break;
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(fail(
                            format!("the worker registered with {}", w.master_url),
                            format!("its master URL {:?}", s.master_url),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // A master address no worker of the suite's registers with.
                let port = 20_000 + (crate::kit::common::unique() % 20_000) as i32;
                let new_master = format!("sparkwire://127.0.0.9:{port}");
                let mut change = Vec::new();
                let changed = D::MasterChanged(MasterChanged::new(
                    EndpointRef::at(Addr::new("127.0.0.9".to_string(), port), "Master"),
                    "http://127.0.0.9:8080".into(),
                ));
                encode_envelope(&Envelope::Send(changed), Version::V2, &mut change)
                    .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
                let seen: Seen = Arc::new(move || {
                    let (ctx, new_master) = (ctx.clone(), new_master.clone());
                    Box::pin(async move {
                        let mut ui = auth::open_secured(&ctx, addr, Role::Ui, "").await?;
                        let s = worker_state(&ctx, &mut ui).await?;
                        Ok(s.master_url == new_master)
                    })
                });
                Ok(Guarded {
                    at: Listening {
                        addr,
                        guard: Box::new(Arc::new(std::sync::Mutex::new(w))),
                    },
                    role: Role::Master,
                    change,
                    seen,
                })
            })
        })),
        messages: None,
        change: Some(Change {
            what: "MasterChanged",
            case: "master-changed",
        }),
        spark: None,
    }
}
