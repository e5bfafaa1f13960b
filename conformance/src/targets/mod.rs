//! The cases of each target, and the catalogue that registers them ([`cases`]).

pub mod admin;
pub mod auth;
pub mod client;
pub mod cluster_manager;
pub mod driver;
pub mod end_obligations;
pub mod executor;
pub mod handshake_features;
pub mod limits;
pub mod master;
pub mod server;
pub mod spark;
pub mod spec1;
pub mod spec10;
pub mod spec11;
pub mod spec11_driver;
pub mod spec14;
pub mod spec14_closing;
pub mod spec14_launch;
pub mod spec14_ownership;
pub mod spec4_encoder;
pub mod spec4_executor;
pub mod spec4_fields;
pub mod spec7_asks;
pub mod spec8_closes;
pub mod tls;
pub mod worker;

use std::sync::Arc;

use crate::case::{Case, Planned, Sharing};
use crate::verdict::Target;

/// Why the case `id` checks something only sparkwire's own wire has, so that it is skipped on
/// Spark's wire (`--wire spark`); `None` for a case about behaviour, which runs on either wire.
/// The sections so skipped: the handshake and its authentication (`handshake.md`, SPEC §13),
/// frames and the envelope's MessagePack (SPEC §2, §3's tags, §4's field maps), close envelopes
/// (§8.1), and decoding errors as sparkwire's decoder names them (§4, §6, §8). Each has a
/// counterpart on Spark's wire, checked by the `spark/…` cases (SPEC §15).
pub fn sparkwire_only(id: &str) -> Option<&'static str> {
    const SECTIONS: &[(&str, &str)] = &[
        ("handshake/10", "sparkwire's shared-secret authentication (handshake.md §10)"),
        ("handshake/", "sparkwire's handshake (Spark's wire has none)"),
        ("spec/13/", "sparkwire's shared-secret authentication (SPEC §13)"),
        ("spec/11", "sparkwire's decoder, its vectors and its canonical maps (SPEC §11)"),
        ("spec/2/", "sparkwire's frames (SPEC §2); Spark's are checked by spark/15.1/…"),
        ("spec/3/bad-envelope", "sparkwire's envelope tags (SPEC §3)"),
        ("spec/3/envelope-not-array", "sparkwire's envelope as MessagePack (SPEC §3)"),
        ("spec/3/message-not-one-entry-map", "sparkwire's message as MessagePack (SPEC §3)"),
        ("spec/3/ask-id-u64", "ask ids past 2^63 - 1 (Spark's request ids are signed 64-bit)"),
        ("spec/4/", "sparkwire's message names and field maps (SPEC §4); a Java stream Spark cannot read is \
            spark/15.1/…"),
        ("spec/4.1/", "sparkwire's field maps (SPEC §4.1)"),
        ("spec/6/", "sparkwire's decoder naming local messages (SPEC §6)"),
        ("spec/8.1/", "sparkwire's close envelopes (SPEC §8.1: Spark has none)"),
        ("spec/8/limits/", "a server the suite starts with sparkwire's settings (--spawn-server)"),
        ("spec/8/", "sparkwire's decoding errors (SPEC §8); a stream Spark cannot read is spark/15.1/…"),
    ];
    SECTIONS
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix))
        .map(|(_, why)| *why)
}

/// Every case of `target`, in report order: the catalogue, the one place that knows every case
/// file. Each target's cases come in two runs, each from a builder of its own: the cases about
/// any endpoint and the target's own, then the cases written by spec section in files of their
/// own.
pub fn cases(target: Target) -> Vec<Planned> {
    let declared = match target {
        Target::Master => [master_cases(), master_sections()].concat(),
        Target::Worker => [worker_cases(), worker_sections()].concat(),
        Target::Driver => [driver_cases(), driver_sections()].concat(),
        Target::Executor => [executor_cases(), executor_sections()].concat(),
    };
    declared.into_iter().map(|c| plan(target, c)).collect()
}

/// `case` as planned for `target`: its body runs once what it needs of the master is so, and it
/// runs alone when it says so or one of its needs does.
///
/// # Panics
///
/// When `case` does not name `target` among its targets: the catalogue registered it where it
/// does not apply (a mistake in the code, which every run would show).
fn plan(target: Target, case: Case) -> Planned {
    assert!(
        case.targets.contains(&target),
        "{} is registered for {target} but names only {:?}",
        case.id,
        case.targets
    );
    let alone =
        case.sharing == Sharing::Alone || case.needs.iter().any(|n| n.sharing() == Sharing::Alone);
    let needs = case.needs;
    let body = case.body;
    Planned {
        id: case.id,
        requirement: case.requirement,
        level: case.level,
        target,
        timeout: case.timeout,
        sharing: if alone {
            Sharing::Alone
        } else {
            Sharing::Parallel
        },
        body: match needs.is_empty() {
            true => body,
            false => crate::case::run(move |ctx| {
                let (body, needs) = (Arc::clone(&body), needs.clone());
                async move {
                    for need in needs {
                        crate::kit::master::establish(need, &ctx).await?;
                    }
                    body(ctx).await
                }
            }),
        },
    }
}

fn master_cases() -> Vec<Case> {
    let mut cs = Vec::new();
    server::add(&mut cs, master::server());
    master::routes(&mut cs);
    spec14::add(&mut cs);
    spec11::add_master(&mut cs);
    master::flows(&mut cs);
    auth::add(&mut cs);
    spark::add_server(&mut cs, master::spark_server());
    spark::add_master(&mut cs);
    cs
}

fn worker_cases() -> Vec<Case> {
    let mut cs = Vec::new();
    client::add(&mut cs, worker::client());
    server::add(&mut cs, worker::server());
    worker::ui_routes(&mut cs);
    spec11::add_worker(&mut cs);
    worker::flows(&mut cs);
    spec14_launch::add_worker(&mut cs);
    auth::add_server(&mut cs, worker::secured());
    spark::add_server(&mut cs, worker::spark_server());
    spark::add_worker(&mut cs);
    cs
}

fn driver_cases() -> Vec<Case> {
    let mut cs = Vec::new();
    client::add(&mut cs, driver::client());
    server::add(&mut cs, driver::server());
    driver::routes(&mut cs);
    driver::flows(&mut cs);
    spec10::add_driver(&mut cs);
    spec14_launch::add_driver(&mut cs);
    auth::add_server(&mut cs, driver::secured());
    cs
}

fn executor_cases() -> Vec<Case> {
    let mut cs = Vec::new();
    client::add(&mut cs, executor::client());
    executor::routes(&mut cs);
    executor::flows(&mut cs);
    spec10::add_executor(&mut cs);
    spec11::add_executor(&mut cs);
    auth::add_client(
        &mut cs,
        executor::starter(),
        "an executor",
        sparkwire::wire::handshake::Role::Driver,
    );
    cs
}

fn master_sections() -> Vec<Case> {
    let mut cs = Vec::new();
    spec4_fields::add(&mut cs);
    spec7_asks::add(&mut cs);
    spec14_ownership::add(&mut cs);
    handshake_features::add(&mut cs);
    spec14_closing::add(&mut cs);
    spec8_closes::add_master(&mut cs);
    spec4_encoder::add_master(&mut cs);
    limits::add(&mut cs);
    admin::add(&mut cs);
    tls::add(&mut cs);
    spec1::add(&mut cs);
    cs
}

fn worker_sections() -> Vec<Case> {
    let mut cs = Vec::new();
    spec8_closes::add_worker(&mut cs);
    spec4_encoder::add_worker(&mut cs);
    end_obligations::add_worker(&mut cs);
    cs
}

fn executor_sections() -> Vec<Case> {
    let mut cs = Vec::new();
    spec4_executor::add(&mut cs);
    spec8_closes::add_executor(&mut cs);
    spec4_encoder::add_executor(&mut cs);
    end_obligations::add_executor(&mut cs);
    cs
}

fn driver_sections() -> Vec<Case> {
    let mut cs = Vec::new();
    spec8_closes::add_driver(&mut cs);
    spec11_driver::add(&mut cs);
    spec11_driver::add_nested_maps(&mut cs);
    cluster_manager::add(&mut cs);
    spec4_encoder::add_driver(&mut cs);
    cs
}

/// The probes of the endpoint the run watches beside its cases ([`crate::health`]): a master
/// at an address, which every case shares; none for the endpoints the suite starts (or waits
/// for) once per case.
pub fn probes(settings: &std::sync::Arc<crate::env::Settings>) -> Option<crate::health::Probes> {
    match (settings.target, &settings.endpoint) {
        (Target::Master, crate::env::Endpoint::Addr(_)) => Some(master::probes(settings)),
        _ => None,
    }
}

/// Checks that the endpoint can be reached (or started) before any case runs, and puts the
/// fault proxy, if one is asked for, in front of it. Fails when the suite cannot run.
pub async fn prepare(
    mut settings: crate::env::Settings,
) -> Result<(crate::env::Settings, Option<crate::fault::Proxy>), String> {
    use crate::env::Endpoint;
    match settings.endpoint.clone() {
        Endpoint::Addr(addr) => {
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                tokio::net::TcpStream::connect(addr),
            )
            .await
            .map_err(|_| format!("cannot connect to {addr}: timed out"))?
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
            if let Some(fault) = settings.fault {
                let proxy = crate::fault::start(
                    fault,
                    addr,
                    crate::fault::Side::SuiteConnects {
                        client_role: sparkwire::wire::handshake::Role::Ui,
                        server_role: sparkwire::wire::handshake::Role::Master,
                    },
                    settings.secret.clone(),
                )
                .await?;
                settings.endpoint = Endpoint::Addr(proxy.addr());
                return Ok((settings, Some(proxy)));
            }
            Ok((settings, None))
        }
        Endpoint::Spawn(_) | Endpoint::Listen(_) => Ok((settings, None)),
    }
}
