//! A minimal custom worker: it registers with a master over the protocol and runs the executors
//! the master asks for (in-process, with the built-in task runner). The example starts a master
//! and a driver of its own around it and runs a job through them.
//!
//! Run: `cargo run --example custom_worker`

use std::sync::Arc;

use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig, Incoming};
use sparkwire::messages::deploy::RegisterWorker;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef};
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::executor::{run_executor, ExecutorConfig};
use sparkwire::reference::master::{Master, MasterConfig};
use sparkwire::reference::task::{BuiltinRunner, SumSquaresJob};
use sparkwire::wire::handshake::Role;

/// The worker: register, then start an executor for every LaunchExecutor.
async fn worker(master: Addr) -> Result<(), Box<dyn std::error::Error>> {
    let stream = connect_tcp(
        &master.host,
        master.port as u16,
        std::time::Duration::from_secs(10),
    )
    .await?;
    let mut conn = Connection::<DeployMessage>::connect(
        stream,
        Role::Worker,
        "my-worker",
        ConnectionConfig::default(),
    )
    .await?;
    let me = Addr::new("127.0.0.1", 1);
    conn.send(
        RegisterWorker::new(
            "worker-custom-1".into(),
            me.host.clone(),
            me.port,
            EndpointRef::at(me, "Worker"),
            2,
            1024,
            String::new(),
            master,
            Default::default(),
        )
        .into(),
    )
    .await?;
    loop {
        match conn.recv().await? {
            Incoming::Message(DeployMessage::RegisteredWorker(_)) => println!("worker: registered"),
            Incoming::Message(DeployMessage::LaunchExecutor(l)) => {
                // The application's command names the driver after --driver-url.
                let args = &l.app_desc.command.arguments;
                let Some(driver_url) = args
                    .iter()
                    .position(|a| a == "--driver-url")
                    .and_then(|i| args.get(i + 1))
                else {
                    continue;
                };
                println!("worker: launching executor {}/{}", l.app_id, l.exec_id);
                let mut config =
                    ExecutorConfig::new(driver_url.clone(), l.exec_id.to_string(), l.cores as u32);
                config.app_id = l.app_id.clone();
                tokio::spawn(run_executor(config, Arc::new(BuiltinRunner)));
            }
            Incoming::Message(other) => {
                println!("worker: {}", sparkwire::messages::Family::name(&other))
            }
            Incoming::Ask { .. } => {}
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let master = Master::start(MasterConfig {
        port: 0,
        ..MasterConfig::default()
    })
    .await?;
    let addr = Addr::new("127.0.0.1", i32::from(master.addr().port()));
    let worker_task = tokio::spawn(async move {
        if let Err(e) = worker(addr).await {
            eprintln!("worker: {e}");
        }
    });
    let mut config = DriverConfig::new("custom-worker-example");
    config.masters = vec![master.url()];
    let driver = Driver::start(config).await?;
    let result = driver
        .run(Arc::new(SumSquaresJob {
            partitions: 4,
            n: 1000,
        }))
        .await??;
    println!("job: {}", result.output);
    driver.stop().await;
    worker_task.abort();
    master.shutdown().await;
    Ok(())
}
