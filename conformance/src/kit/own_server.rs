//! A master the suite starts for one case, with the settings the case chooses (resource limits,
//! the admin secret, TLS), from the template `--spawn-server` gives.

use crate::harness::env::{Ctx, Wire};
use crate::harness::peer::{not_on_spark_wire, Conn};
use crate::harness::spawn::{spawn, Spawned};
use crate::harness::verdict::{check, fail, Failure, Outcome};
use crate::kit::common::{unique, wait};
use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::{Hello, Role, Secret, CLOSE_REASON};
use sparkwire::wire::{Envelope, Reply};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

type D = DeployMessage;

/// The idle timeout, frame read timeout (seconds) and connection limit the cases start their
/// servers with: small, so that each case takes a few seconds.
pub const SHORT: u64 = 1;

/// The settings of a server a case starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `{max_connections}`.
    pub max_connections: usize,
    /// `{idle_timeout}`, seconds.
    pub idle_timeout: u64,
    /// `{frame_read_timeout}`, seconds.
    pub frame_read_timeout: u64,
    /// `{max_queued_bytes}`.
    pub max_queued_bytes: usize,
    /// `{max_frame_bytes}`: the largest frame the server accepts or sends (SPEC §2).
    pub max_frame_bytes: usize,
    /// A shared secret (`{secret_file}`).
    pub secret: bool,
    /// An admin secret (`{admin_secret_file}`; needs `secret`).
    pub admin: bool,
    /// A certificate for 127.0.0.1 (`{tls_cert}`, `{tls_key}`).
    pub tls: bool,
}

impl Default for Settings {
    /// Limits no case reaches unless it means to (the reference master's defaults, but the
    /// connection limit, which a case's few connections never reach either).
    fn default() -> Self {
        Settings {
            max_connections: 64,
            idle_timeout: 60,
            frame_read_timeout: 60,
            max_queued_bytes: 4 << 20,
            max_frame_bytes: 128 << 20,
            secret: false,
            admin: false,
            tls: false,
        }
    }
}

/// A server a case started from the `--spawn-server` template, killed when dropped.
pub struct OwnServer {
    /// Where the suite dials it (the fault proxy's address when a fault is on and the server
    /// speaks plain TCP).
    pub addr: SocketAddr,
    /// Its own address (the proxy relays whole frames only: a case that leaves a frame
    /// unfinished sends it here).
    pub direct: SocketAddr,
    /// Its shared secret, when it holds one.
    pub secret: Option<Secret>,
    /// Its admin secret, when it holds one.
    pub admin: Option<Secret>,
    /// The authority (PEM) that signed its certificate, when it speaks TLS.
    pub ca_pem: Option<String>,
    _process: Spawned,
    _proxy: Option<crate::harness::env::Proxy>,
    _work_dir: WorkDir,
}

/// A server's work directory (its secrets, its certificate), removed when dropped: when the
/// server stops, or when it could not be started.
pub struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why a case that needs a server of its own cannot run, if it cannot: no `--spawn-server`, a
/// template that does not use one of `needs`, or Spark's wire.
pub fn template<'a>(ctx: &'a Ctx, needs: &[&str]) -> Result<&'a str, Failure> {
    if ctx.log.wire() != Wire::Sparkwire {
        return Err(not_on_spark_wire(
            "a server started with sparkwire's settings",
        ));
    }
    let Some(t) = ctx.settings.spawn_server.as_deref() else {
        return Err(Failure::Skipped(
            "needs --spawn-server CMD, a master the suite starts with the case's own settings (conformance/README.md)"
                .into(),
        ));
    };
    if let Some(n) = needs.iter().find(|n| !t.contains(&format!("{{{n}}}"))) {
        return Err(Failure::Skipped(format!(
            "the --spawn-server template does not use {{{n}}}: the setting the case is about is not known"
        )));
    }
    Ok(t)
}

fn secret_file(dir: &std::path::Path, name: &str) -> Result<(Secret, String), Failure> {
    let secret = sparkwire::connection::generate_secret()
        .map_err(|e| fail("a secret the suite draws", e.to_string()))?;
    let path = dir.join(name);
    sparkwire::connection::write_secret_file(&path, &secret)
        .map_err(|e| fail(format!("the secret file {}", path.display()), e.to_string()))?;
    Ok((secret, path.display().to_string()))
}

/// A port on 127.0.0.1 that was free a moment ago and that no other server of this run was
/// given: the system picks it, and the run never hands the same one out twice (two cases
/// starting servers at once would otherwise be given the same just-freed port).
pub fn free_port() -> Result<u16, Failure> {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..64 {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| fail("a free port for the server", e.to_string()))?
            .port();
        if given.insert(port) {
            return Ok(port);
        }
    }
    Err(fail(
        "a free port for the server",
        "the system gave only ports already given",
    ))
}

/// Starts the server from `template` with `vars` and a free `{port}`, and waits until it
/// accepts TCP connections there. A server that exits first (another process took the port
/// meanwhile) is started again on another port, twice at most.
pub async fn up(
    ctx: &Ctx,
    template: &str,
    vars: Vec<(&'static str, String)>,
) -> Result<(Spawned, SocketAddr), Failure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = free_port()?;
        let mut with_port = vars.clone();
        with_port.push(("port", port.to_string()));
        let mut process = spawn(template, &with_port, &[], &ctx.log)?;
        let direct = SocketAddr::from(([127, 0, 0, 1], port));
        // As long as an endpoint the suite starts may take to come up (`spawned::startup`),
        // and never less than 10 s: many cases start servers at once.
        let deadline = Instant::now() + (wait(ctx) * 3).max(Duration::from_secs(10));
        let exited = loop {
            if tokio::net::TcpStream::connect(direct).await.is_ok() {
                // Accepted: by this server, unless it is exiting for want of the port.
                break process.exit_within(Duration::from_millis(100)).await;
            }
            if let Some(code) = process.exit_within(Duration::from_millis(50)).await {
                break Some(code);
            }
            if Instant::now() > deadline {
                return Err(fail(
                    format!("the server listening on {direct} ({})", process.command),
                    "no connection accepted in time",
                ));
            }
        };
        let Some(code) = exited else {
            return Ok((process, direct));
        };
        // Its last words, which its output tasks may still be reading.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let output = process.output();
        ctx.log.push(format!(
            "[suite] the server exited with status {code} before it accepted a connection (attempt {attempt})"
        ));
        if attempt == 3 {
            return Err(fail(
                format!("the server started ({})", process.command),
                format!("it exited with status {code}: {output}"),
            ));
        }
    }
}

impl OwnServer {
    /// Starts a server with `settings`; `needs` are the placeholders the case is about (the
    /// case is skipped when the template does not use one). Returns once it accepts TCP
    /// connections.
    pub async fn start(
        ctx: &Ctx,
        settings: Settings,
        needs: &[&str],
    ) -> Result<OwnServer, Failure> {
        let template = template(ctx, needs)?;
        let work_dir =
            std::env::temp_dir().join(format!("sparkwire-conformance-server-{}", unique()));
        std::fs::create_dir_all(&work_dir)
            .map_err(|e| fail("a work directory for the server", e.to_string()))?;
        let work_dir = WorkDir(work_dir);
        // A server that ignores its settings (the `settings-ignored` fault) is started with
        // limits no case reaches and without its certificate.
        let ignored = ctx.settings.fault.is_some_and(|f| f.ignores_settings());
        let settings = if ignored {
            Settings {
                max_connections: 10_000,
                idle_timeout: 3600,
                frame_read_timeout: 3600,
                max_queued_bytes: 1 << 30,
                max_frame_bytes: 128 << 20,
                ..settings
            }
        } else {
            settings
        };
        let mut vars: Vec<(&str, String)> = vec![
            ("max_connections", settings.max_connections.to_string()),
            ("idle_timeout", settings.idle_timeout.to_string()),
            (
                "frame_read_timeout",
                settings.frame_read_timeout.to_string(),
            ),
            ("max_queued_bytes", settings.max_queued_bytes.to_string()),
            ("max_frame_bytes", settings.max_frame_bytes.to_string()),
            ("work_dir", work_dir.0.display().to_string()),
        ];
        let mut secret = None;
        let mut admin = None;
        if settings.secret {
            let (s, path) = secret_file(&work_dir.0, "secret")?;
            secret = Some(s);
            vars.push(("secret_file", path));
        }
        if settings.admin {
            let (s, path) = secret_file(&work_dir.0, "admin-secret")?;
            admin = Some(s);
            vars.push(("admin_secret_file", path));
        }
        let mut ca_pem = None;
        if settings.tls {
            let (ca, cert, key) = crate::kit::own_server::certificate()?;
            for (name, pem) in [("cert.pem", &cert), ("key.pem", &key)] {
                std::fs::write(work_dir.0.join(name), pem)
                    .map_err(|e| fail(format!("the server's {name}"), e.to_string()))?;
            }
            if !ignored {
                vars.push((
                    "tls_cert",
                    work_dir.0.join("cert.pem").display().to_string(),
                ));
                vars.push(("tls_key", work_dir.0.join("key.pem").display().to_string()));
            }
            ca_pem = Some(ca);
        }
        let (process, direct) = up(ctx, template, vars).await?;
        // The fault proxy relays sparkwire's frames, which TLS hides: a TLS server is dialled
        // directly.
        let proxy = match ctx.settings.fault {
            Some(f) if !settings.tls => Some(
                crate::harness::env::fault_proxy(
                    f,
                    direct,
                    crate::harness::env::Side::SuiteConnects {
                        client_role: Role::Ui,
                        server_role: Role::Master,
                    },
                    secret.clone(),
                )
                .await
                .map_err(|e| fail("the fault proxy", e))?,
            ),
            _ => None,
        };
        Ok(OwnServer {
            addr: proxy.as_ref().map_or(direct, |p| p.addr()),
            direct,
            secret,
            admin,
            ca_pem,
            _process: process,
            _proxy: proxy,
            _work_dir: work_dir,
        })
    }

    /// A session as `role` at version 2 offering `closeReason`, authenticated when the server
    /// holds a secret (and proving `admin` when given). Returns it and whether the server took
    /// `closeReason`. A refusal `tooManyConnections` is tried again for a while: the connection
    /// the suite made to see the server up, or one a case just let go of, may still hold a slot.
    pub async fn open(
        &self,
        ctx: &Ctx,
        role: Role,
        label: &str,
        admin: Option<&Secret>,
    ) -> Result<(Conn, bool), Failure> {
        self.open_at(ctx, self.addr, role, label, admin).await
    }

    /// [`OwnServer::open`] dialling `at` (the server's own address, or the proxy's).
    pub async fn open_at(
        &self,
        ctx: &Ctx,
        at: SocketAddr,
        role: Role,
        label: &str,
        admin: Option<&Secret>,
    ) -> Result<(Conn, bool), Failure> {
        let deadline = Instant::now() + wait(ctx);
        loop {
            let hello = Hello::new(&[Version::V2], role, "").with_features(&[CLOSE_REASON]);
            match Conn::open_as(
                at,
                label,
                hello,
                self.secret.as_ref(),
                admin,
                &ctx.log,
                wait(ctx),
            )
            .await
            {
                Ok((c, taken)) => return Ok((c, taken.iter().any(|f| f == CLOSE_REASON))),
                Err(Failure::Fail { seen, .. })
                    if seen.contains("tooManyConnections") && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Expects `c` closed by a limit within `within`; when the handshake took `closeReason`, its
/// last frame must be a close envelope whose kind is `kind` (SPEC §8.1).
pub async fn closed_by_limit(
    ctx: &Ctx,
    c: &mut Conn,
    close_reason: bool,
    kind: &str,
    within: Duration,
) -> Outcome {
    let want = format!("the connection closed by the {kind} limit");
    if !close_reason {
        return c.expect_closed(within, &want).await;
    }
    let want = format!("{want}, its last frame a close envelope of kind {kind}");
    let ctx = Ctx {
        settings: std::sync::Arc::new(crate::harness::env::Settings {
            patience: within,
            ..(*ctx.settings).clone()
        }),
        log: ctx.log.clone(),
    };
    let reason = crate::kit::server::close_envelope(&ctx, c, &want).await?;
    check(
        reason.kind == kind,
        want,
        format!("a close envelope of kind {}", reason.kind),
    )
}

/// The time a case gives a server to apply a limit of `secs` seconds: the limit plus the
/// patience.
pub fn after(ctx: &Ctx, secs: u64) -> Duration {
    Duration::from_secs(secs) + wait(ctx)
}

/// Asks RequestMasterState on `c` as ask `id` and expects its answer: the connection is served.
pub async fn served(ctx: &Ctx, c: &mut Conn, id: u64) -> Outcome {
    c.send(&Envelope::Ask {
        id,
        message: D::RequestMasterState(RequestMasterState::new()),
    })
    .await?;
    c.expect::<D, ()>(
        wait(ctx),
        &format!("a MasterStateResponse to ask {id} on {}: the connection still served", c.label()),
        |e| matches!(e, Envelope::Reply { id: r, reply: Reply::Message(D::MasterStateResponse(_)) } if *r == id).then_some(()),
    )
    .await
}

/// A certificate authority and a certificate for 127.0.0.1 it signed: (the authority's
/// certificate, the certificate, its private key), all PEM.
pub fn certificate() -> Result<(String, String, String), Failure> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let err = |e: rcgen::Error| fail("a certificate the suite makes", e.to_string());
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).map_err(err)?;
    let key = KeyPair::generate().map_err(err)?;
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .map_err(err)?
        .signed_by(&key, &ca, &ca_key)
        .map_err(err)?;
    Ok((ca.pem(), cert.pem(), key.serialize_pem()))
}
