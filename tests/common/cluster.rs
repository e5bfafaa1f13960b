//! Helpers for the master and worker integration tests: a strict-mode observer, in-process
//! masters and workers with short timeouts, a test application client (which listens, as a
//! driver does, for MasterChanged after a failover) and a driver/UI client.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sparkwire::connection::{Connection, ConnectionConfig, ConnectionHandle, Incoming, Security};
use sparkwire::messages::deploy::{
    MasterChangeAcknowledged, RegisterApplication, UnregisterApplication,
};
use sparkwire::messages::{
    Addr, ApplicationDescription, Command, DeployMessage, EndpointRef, ResourceProfile,
};
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::reference::observe::StrictObserver;
use sparkwire::reference::worker::{Worker, WorkerConfig, WorkerHandle};
use sparkwire::validate::{Config, SharedValidator};
use sparkwire::wire::handshake::{server_handshake, Identity, Role};
use sparkwire::wire::Reply;
use tokio::net::{TcpListener, TcpStream};

/// How long any wait in these tests may last before it fails: generous, never asserted as a
/// duration.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The worker timeout the tests use.
pub const WORKER_TIMEOUT: Duration = Duration::from_millis(1500);

/// A strict-mode observer whose validator expects `worker_timeout`.
pub fn observer(worker_timeout: Duration) -> StrictObserver {
    let config = Config {
        worker_timeout_ms: worker_timeout.as_millis() as u64,
        ..Config::default()
    };
    StrictObserver::new(SharedValidator::with_config(config))
}

/// Fails the test if the observer's validator found any violation.
pub fn assert_clean(observer: &StrictObserver) {
    assert_eq!(
        observer.violation_count(),
        0,
        "protocol violations: {}",
        observer.summary()
    );
}

/// A master on a free loopback port, with the tests' worker timeout.
pub async fn start_master(
    observer: &StrictObserver,
    tweak: impl FnOnce(&mut MasterConfig),
) -> MasterHandle {
    let mut config = MasterConfig {
        port: 0,
        core: sparkwire::node::master::Config {
            worker_timeout: WORKER_TIMEOUT,
            ..Default::default()
        },
        observer: Some(observer.clone()),
        ..MasterConfig::default()
    };
    tweak(&mut config);
    Master::start(config).await.expect("master starts")
}

/// The address of a master.
pub fn addr_of(master: &MasterHandle) -> Addr {
    Addr::new(
        master.addr().ip().to_string(),
        i32::from(master.addr().port()),
    )
}

/// The shell every test executor runs, on the allow-list.
pub const SH: &str = "/bin/sh";

/// A worker of `cores` cores and `memory` MiB registering with `masters`, allowed to run `/bin/sh`
/// with any arguments.
pub async fn start_worker(
    observer: &StrictObserver,
    masters: Vec<Addr>,
    cores: i32,
    memory: i32,
    work_dir: &Path,
) -> WorkerHandle {
    start_worker_with(observer, masters, cores, memory, work_dir, |_| {}).await
}

/// [`start_worker`] with changes to the configuration.
pub async fn start_worker_with(
    observer: &StrictObserver,
    masters: Vec<Addr>,
    cores: i32,
    memory: i32,
    work_dir: &Path,
    tweak: impl FnOnce(&mut WorkerConfig),
) -> WorkerHandle {
    let mut config = WorkerConfig {
        masters,
        cores,
        memory,
        work_dir: work_dir.to_path_buf(),
        allow_exec_any: vec![PathBuf::from(SH)],
        worker_timeout: WORKER_TIMEOUT,
        register_retry: Duration::from_millis(300),
        observer: Some(observer.clone()),
        ..WorkerConfig::default()
    };
    tweak(&mut config);
    Worker::start(config).await.expect("worker starts")
}

/// An application whose executors run `sh -c script`.
pub fn app_desc(
    name: &str,
    script: &str,
    cores_per_executor: Option<i32>,
    memory: i32,
) -> ApplicationDescription {
    ApplicationDescription::new(
        name.into(),
        Command::new(
            SH.into(),
            vec![
                "-c".into(),
                script.into(),
                "executor".into(),
                "{{EXECUTOR_ID}}".into(),
                "{{APP_ID}}".into(),
            ],
            Default::default(),
            vec![],
            vec![],
            vec![],
        ),
        String::new(),
        ResourceProfile::default_with(cores_per_executor, memory),
        "test".into(),
    )
}

/// Polls `cond` until it holds or [`PATIENCE`] runs out.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A connection to a master as a driver client, for asks.
pub async fn client(master: &Addr) -> Connection<DeployMessage> {
    connect_as(master, Role::DriverClient, "test-client").await
}

/// A connection to a master or a worker as a UI, for its status asks.
pub async fn ui(endpoint: &Addr) -> Connection<DeployMessage> {
    connect_as(endpoint, Role::Ui, "test-ui").await
}

async fn connect_as(endpoint: &Addr, role: Role, id: &str) -> Connection<DeployMessage> {
    connect_secured(endpoint, role, id, &Security::default()).await
}

async fn connect_secured(
    endpoint: &Addr,
    role: Role,
    id: &str,
    security: &Security,
) -> Connection<DeployMessage> {
    let stream = TcpStream::connect((endpoint.host.as_str(), endpoint.port as u16))
        .await
        .expect("connect");
    let config = ConnectionConfig {
        security: security.clone(),
        ..ConnectionConfig::default()
    };
    Connection::connect(stream, role, id, config)
        .await
        .expect("handshake")
}

/// Asks and expects a reply.
pub async fn ask(
    conn: &Connection<DeployMessage>,
    m: impl Into<DeployMessage>,
) -> Reply<DeployMessage> {
    conn.ask_with_timeout(m.into(), PATIENCE)
        .await
        .expect("answered")
}

/// The master's state page.
pub async fn master_state(master: &Addr) -> sparkwire::messages::deploy::MasterStateResponse {
    master_state_with(master, &Security::default()).await
}

/// The master's state page, asked as a UI proving `security`'s secret (the handshake must be
/// accepted).
pub async fn master_state_with(
    master: &Addr,
    security: &Security,
) -> sparkwire::messages::deploy::MasterStateResponse {
    let c = connect_secured(master, Role::Ui, "test-ui", security).await;
    let reply = ask(&c, sparkwire::messages::deploy::RequestMasterState::new()).await;
    c.close().await;
    match reply {
        Reply::Message(DeployMessage::MasterStateResponse(s)) => s,
        other => panic!("expected MasterStateResponse, got {other:?}"),
    }
}

/// Waits until the master's state page satisfies `cond`; returns it.
pub async fn wait_master_state(
    master: &Addr,
    what: &str,
    cond: impl Fn(&sparkwire::messages::deploy::MasterStateResponse) -> bool,
) -> sparkwire::messages::deploy::MasterStateResponse {
    poll_until(what, || master_state(master), cond).await
}

/// Calls `get` until what it returns satisfies `cond`; returns that. After [`PATIENCE`] it
/// fails, showing the last one.
pub async fn poll_until<T: std::fmt::Debug, F: std::future::Future<Output = T>>(
    what: &str,
    mut get: impl FnMut() -> F,
    cond: impl Fn(&T) -> bool,
) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let got = get().await;
        if cond(&got) {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Default)]
struct AppShared {
    log: Vec<DeployMessage>,
    app_id: Option<String>,
    active: Option<ConnectionHandle<DeployMessage>>,
}

/// A test application client: registers with every master given (as Spark's
/// tryRegisterAllMasters), keeps what the master sends, answers MasterChanged, and listens on an
/// address of its own for a new master to reach it.
pub struct TestApp {
    shared: Arc<Mutex<AppShared>>,
    conns: Vec<ConnectionHandle<DeployMessage>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The address it listens on.
    pub addr: Addr,
}

fn pump(
    mut conn: Connection<DeployMessage>,
    shared: Arc<Mutex<AppShared>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Ok(incoming) = conn.recv().await {
            let m = match incoming {
                Incoming::Message(m) => m,
                Incoming::Ask { message, .. } => message,
            };
            let mut s = shared.lock().unwrap();
            match &m {
                DeployMessage::RegisteredApplication(r) => {
                    s.app_id = Some(r.app_id.clone());
                    s.active = Some(conn.handle());
                }
                DeployMessage::MasterChanged(_) => {
                    s.active = Some(conn.handle());
                    if let Some(id) = s.app_id.clone() {
                        let h = conn.handle();
                        tokio::spawn(async move {
                            let _ = h.send(MasterChangeAcknowledged::new(id).into()).await;
                        });
                    }
                }
                _ => {}
            }
            s.log.push(m);
        }
    })
}

impl TestApp {
    /// Registers `desc` with every master of `masters`.
    pub async fn register(masters: &[Addr], desc: ApplicationDescription) -> TestApp {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let local = listener.local_addr().expect("addr");
        let addr = Addr::new("127.0.0.1", i32::from(local.port()));
        let shared = Arc::new(Mutex::new(AppShared::default()));
        let mut tasks = Vec::new();
        let accept_shared = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let me = Identity::new(Role::AppClient, "test-app");
                let Ok(est) = server_handshake(stream, &me, |r| r == Role::Master).await else {
                    continue;
                };
                let Ok(conn) = Connection::establish(est, ConnectionConfig::default()) else {
                    continue;
                };
                pump(conn, Arc::clone(&accept_shared));
            }
        }));
        let mut conns = Vec::new();
        for m in masters {
            let Ok(stream) = TcpStream::connect((m.host.as_str(), m.port as u16)).await else {
                continue;
            };
            let conn: Connection<DeployMessage> = Connection::connect(
                stream,
                Role::AppClient,
                format!("test-app-{}", desc.name),
                ConnectionConfig::default(),
            )
            .await
            .expect("handshake");
            conn.send(
                RegisterApplication::new(desc.clone(), EndpointRef::at(addr.clone(), "AppClient"))
                    .into(),
            )
            .await
            .expect("sent");
            conns.push(conn.handle());
            tasks.push(pump(conn, Arc::clone(&shared)));
        }
        TestApp {
            shared,
            conns,
            tasks,
            addr,
        }
    }

    /// The application id, once registered.
    pub async fn app_id(&self) -> String {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(id) = self.shared.lock().unwrap().app_id.clone() {
                return id;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "application never registered"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Everything the masters sent so far.
    pub fn log(&self) -> Vec<DeployMessage> {
        self.shared.lock().unwrap().log.clone()
    }

    /// Waits until the messages received satisfy `cond`; returns them.
    pub async fn wait(
        &self,
        what: &str,
        cond: impl Fn(&[DeployMessage]) -> bool,
    ) -> Vec<DeployMessage> {
        poll_until(what, || std::future::ready(self.log()), |log| cond(log)).await
    }

    /// The connection to the active master.
    pub fn active(&self) -> ConnectionHandle<DeployMessage> {
        self.shared
            .lock()
            .unwrap()
            .active
            .clone()
            .expect("an active master")
    }

    /// Sends on the connection to the active master.
    pub async fn send(&self, m: impl Into<DeployMessage>) {
        self.active().send(m.into()).await.expect("sent");
    }

    /// Asks the active master.
    pub async fn ask(&self, m: impl Into<DeployMessage>) -> Reply<DeployMessage> {
        self.active()
            .ask_with_timeout(m.into(), PATIENCE)
            .await
            .expect("answered")
    }

    /// UnregisterApplication, then closes.
    pub async fn unregister(self) {
        let id = self.app_id().await;
        self.send(UnregisterApplication::new(id)).await;
        self.close().await;
    }

    /// Closes every connection and stops listening.
    pub async fn close(self) {
        let active = self.shared.lock().unwrap().active.clone();
        if let Some(a) = active {
            a.close().await;
        }
        for c in &self.conns {
            c.close().await;
        }
        for t in self.tasks {
            t.abort();
        }
    }
}

/// Counts messages of a kind.
pub fn count(log: &[DeployMessage], f: impl Fn(&DeployMessage) -> bool) -> usize {
    log.iter().filter(|m| f(m)).count()
}

/// What a fake worker received: the ask id (for asks) and the message.
pub type Received = (Option<u64>, DeployMessage);

/// A worker played by the test over a raw connection: it sends what the test says and keeps what
/// the master sends.
pub struct FakeWorker {
    /// The connection to the master.
    pub conn: ConnectionHandle<DeployMessage>,
    log: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
    /// Its id.
    pub id: String,
    /// The address it says it listens on.
    pub addr: Addr,
}

impl FakeWorker {
    /// Connects to `master` as worker `id` advertising `addr`.
    pub async fn connect(master: &Addr, id: &str, addr: Addr) -> FakeWorker {
        let stream = TcpStream::connect((master.host.as_str(), master.port as u16))
            .await
            .expect("connect");
        let mut conn: Connection<DeployMessage> =
            Connection::connect(stream, Role::Worker, id, ConnectionConfig::default())
                .await
                .expect("handshake");
        let handle = conn.handle();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let task = tokio::spawn(async move {
            while let Ok(i) = conn.recv().await {
                let entry = match i {
                    Incoming::Message(m) => (None, m),
                    Incoming::Ask { id, message } => (Some(id), message),
                };
                sink.lock().unwrap().push(entry);
            }
        });
        FakeWorker {
            conn: handle,
            log,
            task,
            id: id.to_string(),
            addr,
        }
    }

    /// RegisterWorker with `cores` and `memory`.
    pub async fn register(&self, master: &Addr, cores: i32, memory: i32) {
        self.send(sparkwire::messages::deploy::RegisterWorker::new(
            self.id.clone(),
            self.addr.host.clone(),
            self.addr.port,
            EndpointRef::at(self.addr.clone(), "Worker"),
            cores,
            memory,
            String::new(),
            master.clone(),
            Default::default(),
        ))
        .await;
    }

    /// Sends `m`.
    pub async fn send(&self, m: impl Into<DeployMessage>) {
        self.conn.send(m.into()).await.expect("sent");
    }

    /// What the master sent so far.
    pub fn log(&self) -> Vec<DeployMessage> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Waits until what the master sent satisfies `cond`.
    pub async fn wait(
        &self,
        what: &str,
        cond: impl Fn(&[DeployMessage]) -> bool,
    ) -> Vec<DeployMessage> {
        poll_until(what, || std::future::ready(self.log()), |log| cond(log)).await
    }

    /// Drops the connection.
    pub async fn close(self) {
        self.conn.close().await;
        self.task.abort();
    }
}

/// The first message of `log` that `f` picks.
pub fn find<T>(log: &[DeployMessage], f: impl Fn(&DeployMessage) -> Option<T>) -> Option<T> {
    log.iter().find_map(f)
}
