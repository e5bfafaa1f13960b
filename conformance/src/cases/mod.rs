//! The catalogue: every case, in one folder per protocol document (`spec/`, `handshake/`,
//! `rules/`, `route/`, `flow/`, `spark/`, as the first segment of the case ids) and one file per
//! section (`spec/s8_1.rs` holds every `spec/8.1/…` case). A case file declares its cases as
//! [`Case`] literals and imports only the kit and the harness; [`cases`] is the one place that
//! knows every file.

pub mod flow;
pub mod handshake;
pub mod route;
pub mod rules;
pub mod spark;
pub mod spec;

use std::sync::Arc;

use sparkwire::wire::handshake::Role;

use crate::harness::case::{Case, Planned, Sharing};
use crate::harness::verdict::Target;
use crate::kit::support;

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

/// Every case of `target`: each section's cases that name it, those written for every target and
/// those written for one description of an endpoint (a listening server, a connecting client, a
/// server holding the secret, …) given that description of `target`.
pub fn cases(target: Target) -> Vec<Planned> {
    let mut cs: Vec<Case> = Vec::new();
    spec::s1::cases(&mut cs);
    spec::s10::driver::cases(&mut cs);
    spec::s10::executor::cases(&mut cs);
    spec::s10::tasks::cases(&mut cs);
    spec::s11::vectors::cases(&mut cs);
    spec::s11::driver::cases(&mut cs);
    spec::s11_3::vectors::cases(&mut cs);
    spec::s11_3::driver::cases(&mut cs);
    spec::s11_3::fields::cases(&mut cs);
    spec::s13::admin::cases(&mut cs);
    spec::s13::auth::cases(&mut cs);
    spec::s14_2::ownership::cases(&mut cs);
    spec::s14_2::launch::cases(&mut cs);
    spec::s14_3::ownership::cases(&mut cs);
    spec::s14_3::closing::cases(&mut cs);
    spec::s14_4::cases(&mut cs);
    spec::s14_5::cases(&mut cs);
    spec::s15_5::cases(&mut cs);
    spec::s16::cases(&mut cs);
    spec::s2::executor::cases(&mut cs);
    spec::s4::encoder::cases(&mut cs);
    spec::s4::fields::cases(&mut cs);
    spec::s4_1::executor::cases(&mut cs);
    spec::s4_1::fields::cases(&mut cs);
    spec::s7_1::launch::cases(&mut cs);
    spec::s7_1::asks::cases(&mut cs);
    spec::s8::limits::cases(&mut cs);
    spec::s8::closing::cases(&mut cs);
    spec::s8_1::handshake_features::cases(&mut cs);
    spec::s8_1::limits::cases(&mut cs);
    spec::s8_1::ownership::cases(&mut cs);
    spec::s8_1::closes::cases(&mut cs);
    handshake::s10_1::admin::cases(&mut cs);
    handshake::s11::cases(&mut cs);
    handshake::s12::cases(&mut cs);
    handshake::s5::limits::cases(&mut cs);
    rules::f::cases(&mut cs);
    rules::k::cases(&mut cs);
    rules::m::cases(&mut cs);
    rules::n::end_obligations::cases(&mut cs);
    rules::n::judged::cases(&mut cs);
    rules::p::driver::cases(&mut cs);
    rules::p::judged::cases(&mut cs);
    rules::p::ownership::cases(&mut cs);
    rules::t::driver::cases(&mut cs);
    rules::t::executor::cases(&mut cs);
    rules::w::ownership::cases(&mut cs);
    rules::w::closing::cases(&mut cs);
    rules::w::worker::cases(&mut cs);
    rules::x::driver::cases(&mut cs);
    rules::x::executor::cases(&mut cs);
    route::coarse::driver::cases(&mut cs);
    route::coarse::executor::cases(&mut cs);
    route::deploy::master::cases(&mut cs);
    route::deploy::worker::cases(&mut cs);
    flow::driver::cases(&mut cs);
    flow::executor::cases(&mut cs);
    flow::master::cases(&mut cs);
    flow::worker::launch::cases(&mut cs);
    flow::worker::flows::cases(&mut cs);
    spark::s15_2::cases(&mut cs);
    flow::master::points::cases(&mut cs);
    handshake::s12::points::cases(&mut cs);
    handshake::s5::points::cases(&mut cs);
    spec::s14_2::points::cases(&mut cs);
    spec::s14_3::points::cases(&mut cs);
    spec::s4_1::points::cases(&mut cs);
    spec::s8::points::cases(&mut cs);
    spec::s8_1::points::cases(&mut cs);
    spec::s8_2::cases(&mut cs);
    match target {
        Target::Master => {
            spec::s13::auth::for_secured(&mut cs, support::auth::master_secured());
            handshake::s10_1::auth::for_secured(&mut cs, support::auth::master_secured());
            handshake::s10_2::for_secured(&mut cs, support::auth::master_secured());
            spec::s2::server::for_server(&mut cs, &support::master::server());
            spec::s3::for_server(&mut cs, &support::master::server());
            spec::s4::server::for_server(&mut cs, &support::master::server());
            spec::s4_1::server::for_server(&mut cs, &support::master::server());
            spec::s6::for_server(&mut cs, &support::master::server());
            spec::s8::server::for_server(&mut cs, &support::master::server());
            spec::s8_1::server::for_server(&mut cs, &support::master::server());
            handshake::s1::for_server(&mut cs, &support::master::server());
            handshake::s1_1::for_server(&mut cs, &support::master::server());
            handshake::s2::server::for_server(&mut cs, &support::master::server());
            handshake::s3::server::for_server(&mut cs, &support::master::server());
            handshake::s4::server::for_server(&mut cs, &support::master::server());
            handshake::s5::server::for_server(&mut cs, &support::master::server());
            handshake::s6::server::for_server(&mut cs, &support::master::server());
            handshake::s7::server::for_server(&mut cs, &support::master::server());
            handshake::s9::for_server(&mut cs, &support::master::server());
            spec::s8_1::closes::for_served(&mut cs, support::master::server());
            spark::s15_1::for_spark_server(&mut cs, support::master::spark_server());
            spark::s15_2::for_spark_server(&mut cs, support::master::spark_server());
            spark::s15_6::for_master(&mut cs);
        }
        Target::Worker => {
            spec::s13::auth::for_secured(&mut cs, support::worker::secured());
            handshake::s10_1::auth::for_secured(&mut cs, support::worker::secured());
            handshake::s10_2::for_secured(&mut cs, support::worker::secured());
            spec::s2::server::for_server(&mut cs, &support::worker::server());
            spec::s3::for_server(&mut cs, &support::worker::server());
            spec::s4::server::for_server(&mut cs, &support::worker::server());
            spec::s4_1::server::for_server(&mut cs, &support::worker::server());
            spec::s6::for_server(&mut cs, &support::worker::server());
            spec::s8::server::for_server(&mut cs, &support::worker::server());
            spec::s8_1::server::for_server(&mut cs, &support::worker::server());
            handshake::s1::for_server(&mut cs, &support::worker::server());
            handshake::s1_1::for_server(&mut cs, &support::worker::server());
            handshake::s2::server::for_server(&mut cs, &support::worker::server());
            handshake::s3::server::for_server(&mut cs, &support::worker::server());
            handshake::s4::server::for_server(&mut cs, &support::worker::server());
            handshake::s5::server::for_server(&mut cs, &support::worker::server());
            handshake::s6::server::for_server(&mut cs, &support::worker::server());
            handshake::s7::server::for_server(&mut cs, &support::worker::server());
            handshake::s9::for_server(&mut cs, &support::worker::server());
            spec::s8_1::client::for_client(&mut cs, support::worker::client());
            handshake::s2::client::for_client(&mut cs, support::worker::client());
            handshake::s3::client::for_client(&mut cs, support::worker::client());
            handshake::s4::client::for_client(&mut cs, support::worker::client());
            handshake::s5::client::for_client(&mut cs, support::worker::client());
            handshake::s6::client::for_client(&mut cs, support::worker::client());
            handshake::s7::client::for_client(&mut cs, support::worker::client());
            handshake::s8::for_client(&mut cs, support::worker::client());
            spec::s8_1::closes::for_served(&mut cs, support::worker::server());
            spark::s15_1::for_spark_server(&mut cs, support::worker::spark_server());
            spark::s15_2::for_spark_server(&mut cs, support::worker::spark_server());
        }
        Target::Driver => {
            spec::s13::auth::for_secured(&mut cs, support::driver::secured());
            handshake::s10_1::auth::for_secured(&mut cs, support::driver::secured());
            handshake::s10_2::for_secured(&mut cs, support::driver::secured());
            spec::s2::server::for_server(&mut cs, &support::driver::server());
            spec::s3::for_server(&mut cs, &support::driver::server());
            spec::s4::server::for_server(&mut cs, &support::driver::server());
            spec::s4_1::server::for_server(&mut cs, &support::driver::server());
            spec::s6::for_server(&mut cs, &support::driver::server());
            spec::s8::server::for_server(&mut cs, &support::driver::server());
            spec::s8_1::server::for_server(&mut cs, &support::driver::server());
            handshake::s1::for_server(&mut cs, &support::driver::server());
            handshake::s1_1::for_server(&mut cs, &support::driver::server());
            handshake::s2::server::for_server(&mut cs, &support::driver::server());
            handshake::s3::server::for_server(&mut cs, &support::driver::server());
            handshake::s4::server::for_server(&mut cs, &support::driver::server());
            handshake::s5::server::for_server(&mut cs, &support::driver::server());
            handshake::s6::server::for_server(&mut cs, &support::driver::server());
            handshake::s7::server::for_server(&mut cs, &support::driver::server());
            handshake::s9::for_server(&mut cs, &support::driver::server());
            spec::s8_1::client::for_client(&mut cs, support::driver::client());
            handshake::s2::client::for_client(&mut cs, support::driver::client());
            handshake::s3::client::for_client(&mut cs, support::driver::client());
            handshake::s4::client::for_client(&mut cs, support::driver::client());
            handshake::s5::client::for_client(&mut cs, support::driver::client());
            handshake::s6::client::for_client(&mut cs, support::driver::client());
            handshake::s7::client::for_client(&mut cs, support::driver::client());
            handshake::s8::for_client(&mut cs, support::driver::client());
            spec::s8_1::closes::for_served(&mut cs, support::driver::server());
        }
        Target::Executor => {
            spec::s8_1::client::for_client(&mut cs, support::executor::client());
            handshake::s2::client::for_client(&mut cs, support::executor::client());
            handshake::s3::client::for_client(&mut cs, support::executor::client());
            handshake::s4::client::for_client(&mut cs, support::executor::client());
            handshake::s5::client::for_client(&mut cs, support::executor::client());
            handshake::s6::client::for_client(&mut cs, support::executor::client());
            handshake::s7::client::for_client(&mut cs, support::executor::client());
            handshake::s8::for_client(&mut cs, support::executor::client());
            handshake::s10_1::auth::for_starter(
                &mut cs,
                support::executor::starter(),
                "an executor",
                Role::Driver,
            );
            handshake::s10_2::for_starter(
                &mut cs,
                support::executor::starter(),
                "an executor",
                Role::Driver,
            );
        }
    }
    cs.into_iter()
        .filter(|c| c.targets.contains(&target))
        .map(|c| plan(target, c))
        .collect()
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
        quote: case.quote,
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
            false => crate::harness::case::run(move |ctx| {
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

/// The probes of the endpoint the run watches beside its cases ([`crate::harness::health`]): a master
/// at an address, which every case shares; none for the endpoints the suite starts (or waits
/// for) once per case.
pub fn probes(
    settings: &std::sync::Arc<crate::harness::env::Settings>,
) -> Option<crate::harness::health::Probes> {
    match (settings.target, &settings.endpoint) {
        (Target::Master, crate::harness::env::Site::Addr(_)) => {
            Some(support::master::probes(settings))
        }
        _ => None,
    }
}

/// Checks that the endpoint can be reached (or started) before any case runs, and puts the
/// fault proxy, if one is asked for, in front of it. Fails when the suite cannot run.
pub async fn prepare(
    mut settings: crate::harness::env::Settings,
) -> Result<(crate::harness::env::Settings, Option<crate::faults::Proxy>), String> {
    use crate::harness::env::Site;
    match settings.endpoint.clone() {
        Site::Addr(addr) => {
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                tokio::net::TcpStream::connect(addr),
            )
            .await
            .map_err(|_| format!("cannot connect to {addr}: timed out"))?
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
            if let Some(fault) = settings.fault {
                let proxy = crate::faults::start(
                    fault,
                    addr,
                    crate::faults::Side::SuiteConnects {
                        client_role: sparkwire::wire::handshake::Role::Ui,
                        server_role: sparkwire::wire::handshake::Role::Master,
                    },
                    settings.secret.clone(),
                )
                .await?;
                settings.endpoint = Site::Addr(proxy.addr());
                return Ok((settings, Some(proxy)));
            }
            Ok((settings, None))
        }
        Site::Spawn(_) | Site::Listen(_) => Ok((settings, None)),
    }
}
