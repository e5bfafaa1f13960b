//! Endpoints that connect to the suite: the suite listens, starts the endpoint from the command
//! template (or waits for one started by hand), and accepts its connections.

use std::net::SocketAddr;
use std::time::Duration;

use sparkwire::wire::handshake::Role;

use crate::harness::env::{fault_proxy, Proxy, Side};
use crate::harness::env::{Ctx, Site};
use crate::harness::peer::{Conn, Listener};
use crate::harness::spawn::{spawn, Spawned};
use crate::harness::verdict::{fail, Failure};

/// One endpoint under test and the suite's listeners for it.
pub struct Run {
    /// Where the endpoint connects to (the suite's main listener).
    pub listener: Listener,
    /// The address given to the endpoint (the listener's, or a fault proxy's in front of it).
    pub given: SocketAddr,
    /// The started process (none when it was started by hand).
    pub process: Option<Spawned>,
    proxies: Vec<Proxy>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// A work directory for the endpoint, removed at the end.
    pub work_dir: std::path::PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.work_dir);
    }
}

/// Accepts `hello` (just read on `c`) at `versions` as `id`, proving the endpoint's secret and
/// checking its proof first when the suite holds it (protocol/handshake.md §10.1).
pub async fn accept(
    ctx: &Ctx,
    c: &mut Conn,
    hello: &sparkwire::wire::handshake::Hello,
    versions: &[sparkwire::messages::Version],
    id: &str,
) -> Result<sparkwire::messages::Version, Failure> {
    c.accept_hello_with(
        hello,
        versions,
        id,
        ctx.settings.secret.as_ref(),
        ctx.settings.patience,
    )
    .await
}

/// How long an endpoint may take to start and connect.
pub fn startup(ctx: &Ctx) -> Duration {
    ctx.settings.patience * 3
}

/// Binds a listener for the suite playing `suite_role`, the fault proxy in front of it if any,
/// and returns the address to give. The authentication faults break only the client whose
/// authentication the cases check, an executor connecting to its driver: elsewhere the proxy
/// passes a client's authentication on untouched.
pub async fn listen(
    ctx: &Ctx,
    fixed: Option<SocketAddr>,
    suite_role: Role,
) -> Result<(Listener, SocketAddr, Option<Proxy>), Failure> {
    let at = fixed.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let listener = Listener::bind(at, &ctx.log)
        .await
        .map_err(|e| fail("a listening socket", e))?;
    let addr = listener.addr();
    let fault = ctx
        .settings
        .fault
        .filter(|f| !f.breaks_auth() || suite_role == Role::Driver);
    match fault {
        Some(f) => {
            let p = fault_proxy(f, addr, Side::EndpointConnects, ctx.settings.secret.clone())
                .await
                .map_err(|e| fail("the fault proxy", e))?;
            Ok((listener, p.addr(), Some(p)))
        }
        None => Ok((listener, addr, None)),
    }
}

/// Starts the endpoint, which connects to the suite playing `suite_role`: `vars` fill the
/// template, given the address it must connect to.
pub async fn start(
    ctx: &Ctx,
    suite_role: Role,
    vars: impl FnOnce(SocketAddr, &std::path::Path) -> Vec<(&'static str, String)>,
) -> Result<Run, Failure> {
    let fixed = match &ctx.settings.endpoint {
        Site::Listen(a) => Some(*a),
        _ => None,
    };
    let (listener, given, proxy) = listen(ctx, fixed, suite_role).await?;
    let work_dir = std::env::temp_dir().join(format!(
        "sparkwire-conformance-{}",
        crate::kit::common::unique()
    ));
    let _ = std::fs::create_dir_all(&work_dir);
    let mut vars = vars(given, &work_dir);
    // What `preflight` accepted must be what the target gives.
    debug_assert!(vars
        .iter()
        .all(|(n, _)| crate::harness::spawn::given(ctx.settings.target).contains(n)));
    let mut env = Vec::new();
    if let Some(path) = &ctx.settings.secret_file {
        let path = path.display().to_string();
        vars.push(("secret_file", path.clone()));
        env.push((crate::harness::spawn::SECRET_FILE_ENV, path));
    }
    let process = match &ctx.settings.endpoint {
        Site::Spawn(template) => Some(spawn(template, &vars, &env, &ctx.log)?),
        _ => {
            ctx.log.push(format!(
                "[suite] waiting for the endpoint to connect to {given}"
            ));
            None
        }
    };
    Ok(Run {
        listener,
        given,
        process,
        proxies: proxy.into_iter().collect(),
        tasks: Vec::new(),
        work_dir,
    })
}

impl Run {
    /// The endpoint's next connection to the main listener, for the suite playing `role`.
    pub async fn accept(&self, ctx: &Ctx, label: &str, role: Role) -> Result<Conn, Failure> {
        self.listener
            .accept(
                startup(ctx),
                label,
                role,
                "the endpoint to connect to the suite",
            )
            .await
    }

    /// The address the suite should dial to reach the endpoint listening at `addr` (a fault
    /// proxy's, when a fault is injected).
    pub async fn reach(
        &mut self,
        ctx: &Ctx,
        addr: SocketAddr,
        client_role: Role,
        server_role: Role,
    ) -> Result<SocketAddr, Failure> {
        match ctx.settings.fault {
            Some(f) => {
                let p = fault_proxy(
                    f,
                    addr,
                    Side::SuiteConnects {
                        client_role,
                        server_role,
                    },
                    ctx.settings.secret.clone(),
                )
                .await
                .map_err(|e| fail("the fault proxy", e))?;
                let a = p.addr();
                self.proxies.push(p);
                Ok(a)
            }
            None => Ok(addr),
        }
    }

    /// Keeps `task` running until the run ends.
    pub fn hold(&mut self, task: tokio::task::JoinHandle<()>) {
        self.tasks.push(task);
    }

    /// The endpoint's output so far.
    pub fn output(&self) -> String {
        self.process
            .as_ref()
            .map(|p| p.output())
            .unwrap_or_default()
    }

    /// The process's exit code if it ends within `wait`; `Skipped` when it was started by hand.
    pub async fn exit_within(&mut self, wait: Duration) -> Result<Option<i32>, Failure> {
        match &mut self.process {
            Some(p) => Ok(p.exit_within(wait).await),
            None => Err(Failure::Skipped(
                "the endpoint was started by hand: its exit status is not visible".into(),
            )),
        }
    }

    /// Stops the process, giving it `grace` after its standard input closes.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(p) = &mut self.process {
            p.stop(grace).await;
        }
    }
}
