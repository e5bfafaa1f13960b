//! The flags that secure a process's connections: `--secret-file`, `--insecure` and, with the
//! `tls` feature, `--tls-cert`, `--tls-key`, `--tls-ca`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clap::Args;
use sparkwire::connection::{read_secret_file, Security};

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

/// True for `localhost` and loopback addresses.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
    fn loopback_hosts_are_told_apart_from_the_others() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["0.0.0.0", "10.0.0.1", "::", "example.org", ""] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
