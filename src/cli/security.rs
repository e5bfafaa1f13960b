//! The flags that secure a process's connections: `--secret-file`, `--insecure` and, with the
//! `tls` feature, `--tls-cert`, `--tls-key`, `--tls-ca`; and the words an operator reads when a
//! handshake fails for want of them.

use sparkwire::reference::address::is_loopback;
use std::path::{Path, PathBuf};

use clap::Args;
use sparkwire::connection::{read_secret_file, Security};
use sparkwire::node::worker::{SECRET_FILE_ENV, TLS_CA_ENV};
use sparkwire::wire::handshake::{HandshakeError, RefusalReason};

/// Security flags of `sparkwire master` and `sparkwire worker`.
#[derive(Debug, Args)]
pub struct SecurityArgs {
    /// A file holding the shared secret (one trailing line end is dropped; it must not be
    /// readable by others). Every peer must prove it in the handshake, and this side proves it
    /// too; a peer without it gets no accepted handshake.
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
    /// Listen on a non-loopback address without a shared secret, letting anyone who reaches it
    /// act on the cluster.
    #[arg(long)]
    pub insecure: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// TLS flags.
#[derive(Debug, Args)]
pub struct TlsArgs {
    /// This side's certificate chain (PEM), for the connections it accepts: every connection is
    /// then TLS. Needs `--tls-key`.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The certificate authorities (PEM) trusted for the connections this side opens.
    #[arg(long, value_name = "PATH")]
    pub tls_ca: Option<PathBuf>,
}

impl TlsArgs {
    fn any(&self) -> bool {
        self.tls_cert.is_some() || self.tls_key.is_some() || self.tls_ca.is_some()
    }
}

/// Security flags of the commands that dial a cluster's servers as a client: `status`, `submit`,
/// `driver` (which also takes [`DriverSecurityArgs`]' certificate) and `executor`.
#[derive(Debug, Args)]
pub struct ClientSecurityArgs {
    /// A file holding the cluster's shared secret (the file the master and workers were given
    /// with --secret-file; it must not be readable by others), proved in every handshake this
    /// command makes or accepts. Default: the file `SPARKWIRE_SECRET_FILE` names, as a worker
    /// sets it for the drivers and executors it launches.
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
    /// The certificate authorities (PEM) to check the servers' TLS certificates with; TLS is on
    /// when given. Default: the file `SPARKWIRE_TLS_CA` names.
    #[arg(long, value_name = "PATH")]
    pub tls_ca: Option<PathBuf>,
}

/// Security flags of a driver (`sparkwire driver`, `sparkwire submit`): a client of the masters,
/// and the server its executors (and masters taking over after a failover) dial.
#[derive(Debug, Args)]
pub struct DriverSecurityArgs {
    #[command(flatten)]
    pub client: ClientSecurityArgs,
    /// The driver's certificate chain (PEM), for the connections its executors open: with TLS
    /// (--tls-ca) the driver needs one. Needs `--tls-key`.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Listen for executors on a non-loopback address without a shared secret, letting anyone
    /// who reaches it register as an executor and be handed the application's tasks.
    #[arg(long)]
    pub insecure: bool,
}

/// A path given by a flag, or else by the environment variable `name` (when set and not empty).
fn flag_or_env(flag: Option<&Path>, name: &str) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

impl ClientSecurityArgs {
    /// The secret file: `--secret-file`, or `SPARKWIRE_SECRET_FILE`.
    pub fn secret_file(&self) -> Option<PathBuf> {
        flag_or_env(self.secret_file.as_deref(), SECRET_FILE_ENV)
    }

    /// The TLS certificate authorities: `--tls-ca`, or `SPARKWIRE_TLS_CA`.
    pub fn tls_ca(&self) -> Option<PathBuf> {
        flag_or_env(self.tls_ca.as_deref(), TLS_CA_ENV)
    }

    /// The security of a process that only dials: the secret, and TLS when it has authorities.
    pub fn security(&self) -> Result<Security, String> {
        self.with_certificate(None, None)
    }

    /// The security with this side's certificate and key too, if given.
    fn with_certificate(
        &self,
        tls_cert: Option<&Path>,
        tls_key: Option<&Path>,
    ) -> Result<Security, String> {
        let mut security = Security {
            secret: secret(self.secret_file().as_deref())?,
            ..Security::default()
        };
        let tls = TlsArgs {
            tls_cert: tls_cert.map(Path::to_path_buf),
            tls_key: tls_key.map(Path::to_path_buf),
            tls_ca: self.tls_ca(),
        };
        self::tls(&tls, &mut security)?;
        Ok(security)
    }
}

impl DriverSecurityArgs {
    /// The driver's security: refuses TLS on one side only (see [`check`](Self::check)).
    pub fn security(&self) -> Result<Security, String> {
        self.check()?;
        self.client
            .with_certificate(self.tls_cert.as_deref(), self.tls_key.as_deref())
    }

    /// Refuses TLS on one side only: a driver dials masters and accepts executors over the same
    /// settings, so with TLS it needs both the authorities and a certificate.
    pub fn check(&self) -> Result<(), String> {
        let ca = self.client.tls_ca();
        match (&ca, &self.tls_cert) {
            (Some(_), None) => Err(format!(
                "TLS is on ({}) but the driver has no certificate for its executors' \
                 connections: give --tls-cert and --tls-key too",
                if self.client.tls_ca.is_some() {
                    "--tls-ca"
                } else {
                    TLS_CA_ENV
                }
            )),
            (None, Some(_)) => Err("--tls-cert needs --tls-ca too: the driver dials the \
                                    masters over TLS, checking their certificates with those \
                                    authorities"
                .into()),
            _ => Ok(()),
        }
    }
}

/// What an operator reads when the handshake with `peer` ("the master at HOST:PORT") failed:
/// what went wrong, in words, and which flag mends it. `encrypts`: this side spoke TLS.
pub fn handshake_failure(peer: &str, error: &HandshakeError, encrypts: bool) -> String {
    match error {
        HandshakeError::Refused { reason, message } => match reason {
            RefusalReason::AuthRequired => format!(
                "{peer} refused the handshake: authentication required: it has a shared secret \
                 and this command was given none. Give --secret-file with the cluster's secret \
                 (the file the master was started with), or set {SECRET_FILE_ENV}"
            ),
            RefusalReason::AuthFailed => format!(
                "{peer} refused the handshake: authentication failed: the secret given (with \
                 --secret-file or {SECRET_FILE_ENV}) is not the master's. Give --secret-file \
                 with the cluster's secret"
            ),
            RefusalReason::AuthNotConfigured => format!(
                "{peer} refused the handshake: it has no shared secret, and this command offered \
                 one (--secret-file or {SECRET_FILE_ENV}). Leave the secret out, or start the \
                 master with --secret-file"
            ),
            RefusalReason::TooManyConnections => format!(
                "{peer} refused the handshake: it holds as many connections as it takes; try \
                 again later"
            ),
            _ => format!("{peer} refused the handshake ({reason}): {message}"),
        },
        HandshakeError::AuthFailed(why) => format!(
            "authentication with {peer} failed: it did not prove the secret given (with \
             --secret-file or {SECRET_FILE_ENV}), so it holds another ({why}). Give \
             --secret-file with the cluster's secret"
        ),
        HandshakeError::Unauthenticated => format!(
            "{peer} accepted the handshake without authenticating, and this command has a \
             shared secret: it will not go on unauthenticated. Is the master running without \
             --secret-file?"
        ),
        HandshakeError::Frame(sparkwire::wire::FrameError::DeclaredTooLarge {
            declared, ..
        }) if sparkwire::wire::prefix_is_http(*declared) => {
            format!(
                "{peer} is an HTTP server (a web UI?), not a sparkwire endpoint: it answered the \
                 handshake with \"HTTP\". Give the master's sparkwire:// address, the one \
                 `sparkwire master` prints first (`sparkwire master listening on \
                 sparkwire://HOST:PORT`), not its web UI's"
            )
        }
        HandshakeError::Tls(why) => format!(
            "TLS with {peer} failed: {why}. A master with TLS needs --tls-ca naming the \
             authorities that signed its certificate; one without TLS needs no --tls-ca"
        ),
        // A TLS server answers a plain hello with a TLS record, read here as a frame too large
        // or not a sparkwire answer, or just closes.
        other if !encrypts => format!(
            "the handshake with {peer} failed: {other}. If the master uses TLS, give --tls-ca \
             naming the authorities that signed its certificate"
        ),
        other => format!("the handshake with {peer} failed: {other}"),
    }
}

/// The secret of `--secret-file`, if given.
pub fn secret(path: Option<&Path>) -> Result<Option<sparkwire::wire::handshake::Secret>, String> {
    path.map(|p| read_secret_file(p).map_err(|e| e.to_string()))
        .transpose()
}

/// The TLS settings of the flags, if any are given.
pub fn tls(args: &TlsArgs, security: &mut Security) -> Result<(), String> {
    if !args.any() {
        return Ok(());
    }
    #[cfg(feature = "tls")]
    {
        let settings = sparkwire::connection::TlsSettings::from_files(
            args.tls_cert.as_deref(),
            args.tls_key.as_deref(),
            args.tls_ca.as_deref(),
        )
        .map_err(|e| e.to_string())?;
        security.tls = Some(settings);
        Ok(())
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = security;
        Err("this sparkwire was built without the `tls` feature".into())
    }
}

/// The security of a process that listens on `host` as `what`: refuses a non-loopback address
/// without a secret unless `--insecure`, and a listener without a certificate when TLS is on.
pub fn listening(args: &SecurityArgs, host: &str, what: &str) -> Result<Security, String> {
    let mut security = Security {
        secret: secret(args.secret_file.as_deref())?,
        ..Security::default()
    };
    if security.secret.is_none() && !is_loopback(host) && !args.insecure {
        return Err(format!(
            "refusing to start the {what} on {host}, which is not a loopback address, without a \
             shared secret: any peer that reaches it could register, read applications' \
             environments and launch programs. Give --secret-file PATH (and TLS: --tls-cert, \
             --tls-key, --tls-ca), or --insecure to run unauthenticated anyway"
        ));
    }
    if args.tls.any() && args.tls.tls_cert.is_none() {
        return Err(format!(
            "the {what} accepts connections: TLS needs --tls-cert and --tls-key"
        ));
    }
    tls(&args.tls, &mut security)?;
    Ok(security)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_handshakes_are_told_in_words_that_name_the_flag_that_mends_them() {
        let peer = "the master at 10.0.0.1:7077";
        let refused = |reason| HandshakeError::Refused {
            reason,
            message: "m".into(),
        };
        let required = handshake_failure(peer, &refused(RefusalReason::AuthRequired), false);
        assert!(
            required.starts_with(
                "the master at 10.0.0.1:7077 refused the handshake: authentication required"
            ),
            "{required}"
        );
        let failed = handshake_failure(peer, &refused(RefusalReason::AuthFailed), false);
        assert!(failed.contains("authentication failed"), "{failed}");
        let proof = handshake_failure(peer, &HandshakeError::AuthFailed("x".into()), false);
        assert!(proof.contains("authentication with the master"), "{proof}");
        for text in [&required, &failed, &proof] {
            assert!(
                text.contains("Give --secret-file with the cluster's secret"),
                "{text}"
            );
            assert!(!text.contains("authRequired") && !text.contains("authFailed"));
        }
        let extra = handshake_failure(peer, &refused(RefusalReason::AuthNotConfigured), false);
        assert!(extra.contains("has no shared secret"), "{extra}");
        let downgrade = handshake_failure(peer, &HandshakeError::Unauthenticated, false);
        assert!(downgrade.contains("without authenticating"), "{downgrade}");
        let tls = handshake_failure(peer, &HandshakeError::Tls("bad".into()), true);
        assert!(tls.starts_with("TLS with the master") && tls.contains("--tls-ca"));
        // A plain hello to a TLS master: the hint, only when this side did not speak TLS.
        let plain = handshake_failure(peer, &HandshakeError::PeerClosed, false);
        assert!(
            plain.contains("If the master uses TLS, give --tls-ca"),
            "{plain}"
        );
        let closed = handshake_failure(peer, &HandshakeError::PeerClosed, true);
        assert!(!closed.contains("give --tls-ca"), "{closed}");
    }

    #[test]
    fn a_driver_takes_tls_on_both_sides_or_not_at_all() {
        let driver = |ca: Option<&str>, cert: Option<&str>| DriverSecurityArgs {
            client: ClientSecurityArgs {
                secret_file: None,
                tls_ca: ca.map(PathBuf::from),
            },
            tls_cert: cert.map(PathBuf::from),
            tls_key: cert.map(PathBuf::from),
            insecure: false,
        };
        let no_cert = driver(Some("/nonexistent/ca.pem"), None).security();
        assert!(
            no_cert
                .as_ref()
                .is_err_and(|e| e.contains("--tls-cert and --tls-key")),
            "{no_cert:?}"
        );
        if std::env::var_os(TLS_CA_ENV).is_none() {
            let no_ca = driver(None, Some("/nonexistent/cert.pem")).security();
            assert!(
                no_ca.as_ref().is_err_and(|e| e.contains("needs --tls-ca")),
                "{no_ca:?}"
            );
        }
    }
}
