//! `spec/15.5/…`: SPEC §15.5 (protocol/SPEC.md): one master, several Spark releases. A worker and
//! an application that announce incompatible releases (`RegisterWorker.sparkRelease`,
//! `RegisterApplication.sparkRelease`, revision 2) are never put together; the application's
//! executors go to a worker of its own release. Only on sparkwire's wire: Spark's has no such
//! field.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::env::Wire;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::app_desc;
use crate::kit::master::launch;
use crate::kit::master::launches;
use crate::kit::master::open;
use crate::kit::master::register_worker_msg;
use crate::kit::master::FakeWorker;
use crate::kit::master::Need;
use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::Addr;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use std::time::Duration;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/15.5/no-launch-across-releases".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        needs: vec![Need::NoOtherApplication],
        quote: "SPEC §15.5, \"A master MUST NOT send `LaunchExecutor` for an application with a \
            release to a worker whose release is not compatible with it\""
            .into(),
        requirement:
            "an app of Spark 3.5.9 gets no executor on a 4.3.0 worker, and one on a 3.5.9 \
            worker once it registers"
                .into(),
        body: run(no_launch_across_releases),
        ..Case::default()
    });
}

/// A worker of `cores` cores and 4096 MiB announcing Spark `release`.
async fn worker_of(ctx: &Ctx, release: &str, cores: i32) -> Result<FakeWorker, Failure> {
    let n = unique();
    let host = "127.0.0.1".to_string();
    let port = 20000 + (n % 40000) as i32;
    let id = format!("worker-20250101120000-{host}-{port}-{n}");
    let mut conn = open(ctx, Role::Worker, "worker", &id, Version::V2).await?;
    let D::RegisterWorker(r) = register_worker_msg(&id, &host, port, cores, 4096) else {
        return Err(fail("a RegisterWorker", "another message"));
    };
    let register = r.with_spark_release(Some(release.to_string()));
    conn.send(&Envelope::Send(D::RegisterWorker(register)))
        .await?;
    conn.expect::<D, ()>(wait(ctx), "RegisteredWorker", |e| match e {
        Envelope::Send(D::RegisteredWorker(_)) => Some(()),
        _ => None,
    })
    .await?;
    Ok(FakeWorker {
        conn,
        id,
        host,
        cores,
        memory: 4096,
    })
}

async fn no_launch_across_releases(ctx: Ctx) -> Outcome {
    if ctx.log.wire() != Wire::Sparkwire {
        return Err(Failure::Skipped(
            "Spark's wire carries no release field (SPEC §15.5)".into(),
        ));
    }
    let mut new = worker_of(&ctx, "4.3.0", 1).await?;
    let mut app_conn = open(&ctx, Role::AppClient, "app", "", Version::V2).await?;
    let port = 40000 + (unique() % 20000) as i32;
    let register = RegisterApplication::new(
        app_desc(Some(1), 128, Some(1)),
        EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
    )
    .with_spark_release(Some("3.5.9".into()));
    app_conn
        .send(&Envelope::Send(D::RegisterApplication(register)))
        .await?;
    let id = app_conn
        .expect::<D, String>(wait(&ctx), "RegisteredApplication", |e| match e {
            Envelope::Send(D::RegisteredApplication(r)) => Some(r.app_id.clone()),
            _ => None,
        })
        .await?;
    let wrong = launches(&ctx, &mut new).await;
    check(
        wrong.is_empty(),
        "no LaunchExecutor on the 4.3.0 worker for the 3.5.9 application",
        format!("{} LaunchExecutor", wrong.len()),
    )?;
    let mut old = worker_of(&ctx, "3.5.9", 1).await?;
    let l = launch(&ctx, &mut old).await?;
    check(
        l.app_id == id,
        format!("a LaunchExecutor of {id} on the 3.5.9 worker"),
        format!("one of {}", l.app_id),
    )?;
    let wrong = launches(&ctx, &mut new).await;
    check(
        wrong.is_empty(),
        "still no LaunchExecutor on the 4.3.0 worker",
        format!("{} LaunchExecutor", wrong.len()),
    )
}
