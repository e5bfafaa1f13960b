//! Where each process listens and what address it announces, as Spark sets them (see
//! [`sparkwire::reference::address`]): `--host` of a master and a worker (both listens and
//! announces), `--driver-host` and `--driver-bind-address` of a driver, `--hostname` of an
//! executor, and Spark's `SPARK_LOCAL_HOSTNAME`, `SPARK_LOCAL_IP` and `SPARK_MASTER_HOST`.

use std::net::{IpAddr, SocketAddr};

use clap::Args;
use sparkwire::messages::Addr;
use sparkwire::reference::address::{
    bind_ip, host_for_url, source_address_towards, spark_local_host, spark_local_ip,
};

/// The variable naming a master's host (Spark's `SPARK_MASTER_HOST`), before the others.
pub const MASTER_HOST_ENV: &str = "SPARK_MASTER_HOST";

/// The host a daemon listens on and announces: `--host`, else (for a master)
/// `SPARK_MASTER_HOST`, else `SPARK_LOCAL_HOSTNAME`, else `SPARK_LOCAL_IP`, else 127.0.0.1.
///
/// Spark's last resort is the host's own address; sparkwire's is loopback, so that a daemon is
/// reachable from other hosts only when it is told an address (and then, without a shared
/// secret, only with `--insecure`).
pub fn daemon_host(
    flag: Option<&str>,
    master: bool,
    env: impl Fn(&str) -> Option<String>,
) -> String {
    if let Some(host) = flag {
        return host.to_string();
    }
    let master_host = || {
        env(MASTER_HOST_ENV)
            .filter(|v| master && !v.trim().is_empty())
            .map(|v| v.trim().to_string())
    };
    master_host()
        .or_else(|| spark_local_host(&env))
        .unwrap_or_else(|| "127.0.0.1".to_string())
}

/// The addresses of a driver (`sparkwire submit`, `sparkwire driver`).
#[derive(Debug, Args)]
pub struct DriverAddressArgs {
    /// The host executors (and masters taking over after a failover) reach the driver at
    /// (spark.driver.host). Default: SPARK_LOCAL_HOSTNAME, else SPARK_LOCAL_IP, else this host's
    /// address on the way to the first master (127.0.0.1 when the master is on loopback).
    #[arg(long, value_name = "HOST")]
    pub driver_host: Option<String>,
    /// The address the driver listens on (spark.driver.bindAddress); 0.0.0.0 listens on every
    /// interface. Default: --driver-host's address (SPARK_LOCAL_IP when that is set).
    #[arg(long, value_name = "ADDRESS")]
    pub driver_bind_address: Option<String>,
    /// The port the driver listens on for its executors (spark.driver.port); 0 picks a free
    /// one.
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub driver_port: u16,
}

/// A driver's announced host and the address it listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverAddress {
    /// What executors dial (spark.driver.host).
    pub announce: String,
    /// Where the driver listens (spark.driver.bindAddress, spark.driver.port).
    pub listen: SocketAddr,
}

impl DriverAddressArgs {
    /// The driver's addresses, with Spark's defaults (see the flags), `masters` the cluster's.
    pub fn resolve(
        &self,
        masters: &[Addr],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<DriverAddress, String> {
        let announce = match &self.driver_host {
            Some(h) if h.trim().is_empty() => return Err("--driver-host is empty".into()),
            Some(h) => h.trim().to_string(),
            None => match spark_local_host(&env) {
                Some(h) => h,
                None => towards(masters),
            },
        };
        let bind_host = match &self.driver_bind_address {
            Some(b) => b.trim().to_string(),
            // Spark: spark.driver.bindAddress defaults to spark.driver.host; SPARK_LOCAL_IP,
            // when set, is what both were made of (or is where to listen when
            // SPARK_LOCAL_HOSTNAME names the host).
            None => spark_local_ip(&env).unwrap_or_else(|| announce.clone()),
        };
        let ip = bind_ip(&bind_host)
            .map_err(|e| format!("--driver-bind-address (or --driver-host) {bind_host:?}: {e}"))?;
        Ok(DriverAddress {
            announce,
            listen: SocketAddr::new(ip, self.driver_port),
        })
    }
}

/// This host's address on the way to the first master that has a route; loopback when none
/// has (the driver then is reachable on this host only).
fn towards(masters: &[Addr]) -> String {
    for m in masters {
        let port = u16::try_from(m.port).unwrap_or(0);
        match source_address_towards(&m.host, port) {
            Ok(ip) => return host_for_url(ip),
            Err(e) => tracing::warn!("cannot tell this host's address towards {}: {e}", m.host),
        }
    }
    "127.0.0.1".to_string()
}

/// Refuses a driver listening off loopback without a shared secret unless `insecure`: any peer
/// that reaches it could register as an executor and be handed the application's tasks.
pub fn check_driver_listens(
    listen: IpAddr,
    has_secret: bool,
    insecure: bool,
) -> Result<(), String> {
    if listen.is_loopback() || has_secret || insecure {
        return Ok(());
    }
    Err(format!(
        "refusing to listen for executors on {listen}, which is not a loopback address, without \
         a shared secret: any peer that reaches it could register as an executor and be handed \
         the application's tasks. Give --secret-file with the cluster's secret, or --insecure \
         to run unauthenticated anyway"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn args(host: Option<&str>, bind: Option<&str>, port: u16) -> DriverAddressArgs {
        DriverAddressArgs {
            driver_host: host.map(str::to_string),
            driver_bind_address: bind.map(str::to_string),
            driver_port: port,
        }
    }

    fn on_loopback() -> Vec<Addr> {
        vec![Addr::new("127.0.0.1".to_string(), 7077)]
    }

    #[test]
    fn a_daemon_listens_where_host_or_sparks_variables_say_else_on_loopback() {
        assert_eq!(daemon_host(Some("10.0.0.5"), true, env(&[])), "10.0.0.5");
        assert_eq!(daemon_host(None, false, env(&[])), "127.0.0.1");
        let all = [
            (MASTER_HOST_ENV, "10.0.0.1"),
            ("SPARK_LOCAL_HOSTNAME", "node2"),
            ("SPARK_LOCAL_IP", "10.0.0.3"),
        ];
        assert_eq!(daemon_host(None, true, env(&all)), "10.0.0.1");
        // SPARK_MASTER_HOST is the master's alone.
        assert_eq!(daemon_host(None, false, env(&all)), "node2");
        assert_eq!(
            daemon_host(None, false, env(&[("SPARK_LOCAL_IP", "10.0.0.3")])),
            "10.0.0.3"
        );
        assert_eq!(
            daemon_host(Some("10.0.0.9"), true, env(&all)),
            "10.0.0.9",
            "--host wins"
        );
    }

    #[test]
    fn a_driver_listens_on_the_address_it_announces_unless_told_otherwise() {
        let a = args(Some("127.0.0.2"), None, 0)
            .resolve(&on_loopback(), env(&[]))
            .expect("resolves");
        assert_eq!(a.announce, "127.0.0.2");
        assert_eq!(a.listen, "127.0.0.2:0".parse().expect("addr"));

        let a = args(Some("10.77.0.3"), Some("0.0.0.0"), 4040)
            .resolve(&on_loopback(), env(&[]))
            .expect("resolves");
        assert_eq!(a.announce, "10.77.0.3");
        assert_eq!(a.listen, "0.0.0.0:4040".parse().expect("addr"));
    }

    #[test]
    fn a_drivers_default_host_is_sparks_variables_else_its_address_towards_the_master() {
        let a = args(None, None, 0)
            .resolve(&on_loopback(), env(&[]))
            .expect("resolves");
        assert_eq!(a.announce, "127.0.0.1");
        assert_eq!(a.listen, "127.0.0.1:0".parse().expect("addr"));

        let a = args(None, None, 0)
            .resolve(&on_loopback(), env(&[("SPARK_LOCAL_IP", "127.0.0.3")]))
            .expect("resolves");
        assert_eq!(
            (a.announce.as_str(), a.listen.ip()),
            ("127.0.0.3", [127, 0, 0, 3].into())
        );

        // SPARK_LOCAL_HOSTNAME is announced; SPARK_LOCAL_IP is where it listens.
        let a = args(None, None, 0)
            .resolve(
                &on_loopback(),
                env(&[
                    ("SPARK_LOCAL_HOSTNAME", "localhost"),
                    ("SPARK_LOCAL_IP", "127.0.0.4"),
                ]),
            )
            .expect("resolves");
        assert_eq!(
            (a.announce.as_str(), a.listen.ip()),
            ("localhost", [127, 0, 0, 4].into())
        );
        // --driver-host wins over the variables for what is announced, and is where it listens
        // unless SPARK_LOCAL_IP or --driver-bind-address say otherwise.
        let a = args(Some("127.0.0.6"), None, 0)
            .resolve(&on_loopback(), env(&[("SPARK_LOCAL_HOSTNAME", "x")]))
            .expect("resolves");
        assert_eq!(
            (a.announce.as_str(), a.listen.ip()),
            ("127.0.0.6", [127, 0, 0, 6].into())
        );
        assert!(args(Some(" "), None, 0)
            .resolve(&on_loopback(), env(&[]))
            .is_err());
    }

    #[test]
    fn a_driver_off_loopback_needs_a_secret_or_insecure() {
        let off: IpAddr = [10, 77, 0, 3].into();
        let err = check_driver_listens(off, false, false).expect_err("refused");
        assert!(
            err.contains("--secret-file") && err.contains("--insecure"),
            "{err}"
        );
        assert!(check_driver_listens(off, true, false).is_ok());
        assert!(check_driver_listens(off, false, true).is_ok());
        assert!(check_driver_listens([127, 0, 0, 2].into(), false, false).is_ok());
        assert!(check_driver_listens([0, 0, 0, 0].into(), false, false).is_err());
    }
}
