//! `--target master`: the suite plays workers, application clients, driver clients and UIs
//! against a running master.

use crate::harness::env::Ctx;
use crate::harness::env::Log;
use crate::harness::env::Settings;
use crate::harness::env::Site;
use crate::harness::env::Wire;
use crate::harness::health::Probe;
use crate::harness::health::Probed;
use crate::harness::health::Probes;
use crate::harness::mp;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::kit::endpoint::{Endpoint, Messages, Reach, SparkProbe};
use crate::kit::master::*;
use crate::kit::server::Listening;
use sparkwire::messages::deploy::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;
use std::sync::Arc;

pub(crate) type D = DeployMessage;

/// The master as the cases about any server see it.
pub fn server() -> Endpoint {
    fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
        vec![]
    }
    // RequestDriverStatus, which a UI may ask, with its driverId an integer.
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("driverId", mp::u(5))]
    }
    // A worker's Heartbeat: a UI may not send it.
    fn heartbeat() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("workerId", mp::s("worker-suite")),
            (
                "worker",
                mp::map(&[("address", vec![0xc0]), ("name", mp::s("Worker"))]),
            ),
        ]
    }
    Endpoint {
        name: "the master",
        family: "deploy",
        role: Role::Master,
        suite_role: Role::Ui,
        other_family_role: Role::Executor,
        reach: Reach::Listens(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                Ok(Listening {
                    addr: addr(&ctx)?,
                    guard: Box::new(()),
                })
            })
        })),
        messages: Some(Messages {
            probe: ("RequestMasterState", no_fields),
            refused: "RequestSubmitDriver",
            v2_only: ("RequestReadyz", no_fields),
            local: "WorkDirCleanup",
            bad_fields: ("RequestDriverStatus", bad),
            off_route: ("Heartbeat", heartbeat),
        }),
        change: None,
        spark: None,
    }
}

pub(crate) const CLIENTS: [Role; 4] = [Role::Worker, Role::AppClient, Role::DriverClient, Role::Ui];

/// The master as the `spark/15.…` cases see it on Spark's wire: as the cases about any server see
/// it, with what they ask it there.
pub fn spark_server() -> Endpoint {
    Endpoint {
        spark: Some(SparkProbe {
            probe: (
                || D::RequestMasterState(RequestMasterState::new()),
                |r| matches!(r, Reply::Message(D::MasterStateResponse(_))),
            ),
            not_asked: || {
                D::Heartbeat(Heartbeat::new(
                    "worker-suite".into(),
                    worker_ref("127.0.0.1", 1),
                ))
            },
        }),
        ..server()
    }
}

/// The probes the run watches a master with ([`crate::harness::health`]): RequestMasterState from a UI,
/// which a master answers at once (on either wire), and, on sparkwire's wire, a hello whose
/// magic is wrong, which it refuses and closes the connection on (protocol/handshake.md §5).
pub fn probes(settings: &Arc<Settings>) -> Probes {
    let ask_settings = Arc::clone(settings);
    let ask: Probe = Arc::new(move |limit| {
        let settings = Arc::clone(&ask_settings);
        Box::pin(async move {
            let ctx = Ctx {
                log: Log::for_run(&settings),
                settings,
            };
            let probe = async {
                let Ok(addr) = addr(&ctx) else {
                    return Probed::Inconclusive;
                };
                let versions = [Version::V2, Version::V1];
                let Ok(mut c) = Conn::open(
                    addr,
                    "probe",
                    Role::Ui,
                    "",
                    &versions,
                    ctx.settings.secret.as_ref(),
                    &ctx.log,
                    limit,
                )
                .await
                else {
                    return Probed::Inconclusive;
                };
                let ask = Envelope::Ask {
                    id: 1,
                    message: D::RequestMasterState(RequestMasterState::new()),
                };
                if c.send(&ask).await.is_err() {
                    return Probed::Inconclusive;
                }
                match c.next(limit).await {
                    Some(Event::Frame(_)) => Probed::Yes,
                    Some(_) => Probed::Inconclusive,
                    None => Probed::Nothing,
                }
            };
            tokio::time::timeout(limit, probe)
                .await
                .unwrap_or(Probed::Nothing)
        })
    });
    let close_settings = Arc::clone(settings);
    let close: Probe = Arc::new(move |limit| {
        let settings = Arc::clone(&close_settings);
        Box::pin(async move {
            let log = Log::for_run(&settings);
            let Site::Addr(addr) = settings.endpoint else {
                return Probed::Inconclusive;
            };
            let probe = async {
                let Ok(mut c) = Conn::connect(addr, "probe", Role::Ui, &log).await else {
                    return Probed::Inconclusive;
                };
                let mut hello = mp::hello_entries(&[1, 2], Role::Ui.name(), "probe");
                hello[0].1 = mp::s("sparkwirf");
                if c.send_frame(&mp::map(&hello)).await.is_err() {
                    return Probed::Inconclusive;
                }
                loop {
                    match c.next(limit).await {
                        // Accepted: broken otherwise, and nothing to learn about closing.
                        Some(Event::Frame(b))
                            if matches!(
                                sparkwire::wire::handshake::decode_answer(&b),
                                Ok(sparkwire::wire::handshake::Answer::Accepted(_))
                            ) =>
                        {
                            return Probed::Inconclusive
                        }
                        Some(Event::Frame(_)) => continue,
                        Some(Event::Closed(_)) => return Probed::Yes,
                        Some(Event::TooLarge(_)) => return Probed::Inconclusive,
                        None => return Probed::Nothing,
                    }
                }
            };
            tokio::time::timeout(limit, probe)
                .await
                .unwrap_or(Probed::Nothing)
        })
    });
    Probes {
        ask_name: "RequestMasterState from a UI",
        ask,
        close_name: "a hello with the wrong magic (refused with badMagic, then closed)",
        close: (settings.wire == Wire::Sparkwire).then_some(close),
    }
}
