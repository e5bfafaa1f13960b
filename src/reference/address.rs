//! Addresses as Spark has them: where a process listens (its *bind address*) and what it tells
//! its peers to dial (its *announced*, or advertised, address) are two settings.
//!
//! Spark's rules (`Utils.localHostName`, `Utils.findLocalInetAddress`, `RpcEnv.create`):
//!
//! - `SPARK_LOCAL_HOSTNAME` names the host a process announces; unset, `SPARK_LOCAL_IP`, the
//!   address it listens on, is announced too; unset, the host's own address.
//! - A master and a worker listen on and announce one address (`--host`).
//! - A driver announces `spark.driver.host` and listens on `spark.driver.bindAddress`, which
//!   defaults to `spark.driver.host` (so a driver on another host than the cluster's listens on
//!   the very address it announces).
//! - An executor announces `--hostname`, the host its worker gives it.
//!
//! This module reads those variables ([`spark_local_host`]), finds the address a host reaches a
//! peer from ([`source_address_towards`]: the kernel's choice of route, no packet sent), and
//! turns a host name into an address to listen on ([`bind_ip`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};

/// The variable naming the host a process announces (Spark's `SPARK_LOCAL_HOSTNAME`).
pub const LOCAL_HOSTNAME_ENV: &str = "SPARK_LOCAL_HOSTNAME";
/// The variable naming the address a process listens on (Spark's `SPARK_LOCAL_IP`).
pub const LOCAL_IP_ENV: &str = "SPARK_LOCAL_IP";

/// The host this process announces as Spark's `Utils.localHostName` reads it from `env`:
/// `SPARK_LOCAL_HOSTNAME`, else `SPARK_LOCAL_IP`; `None` when neither is set (empty counts as
/// unset).
pub fn spark_local_host(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    set(LOCAL_HOSTNAME_ENV)
        .or_else(|| set(LOCAL_IP_ENV))
        .map(|v| v.trim().to_string())
}

/// The address this process listens on as Spark reads it from `env`: `SPARK_LOCAL_IP`, if set.
pub fn spark_local_ip(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    env(LOCAL_IP_ENV)
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim().to_string())
}

/// The process environment, for [`spark_local_host`] and [`spark_local_ip`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The address a host name stands for, to listen on: an IP address as it is (brackets around
/// an IPv6 one dropped), a name resolved (its first address, IPv4 first).
pub fn bind_ip(host: &str) -> Result<IpAddr, String> {
    let bare = host.trim().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(ip);
    }
    if bare.is_empty() {
        return Err("an empty host name".into());
    }
    let mut found: Vec<IpAddr> = (bare, 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {bare:?}: {e}"))?
        .map(|a| a.ip())
        .collect();
    found.sort_by_key(|ip| ip.is_ipv6());
    found
        .first()
        .copied()
        .ok_or_else(|| format!("{bare:?} resolves to no address"))
}

/// The local address this host would send from to reach `host:port`: the source address of the
/// kernel's route to it, found by connecting a UDP socket (which sends nothing). It is the
/// address the peer can reach this host at when this host has one address on the peer's
/// network, and a loopback address when the peer is on loopback.
pub fn source_address_towards(host: &str, port: u16) -> Result<IpAddr, String> {
    let peer = bind_ip(host)?;
    let unbound: SocketAddr = match peer {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(unbound).map_err(|e| format!("cannot open a socket: {e}"))?;
    socket
        .connect((peer, port.max(1)))
        .map_err(|e| format!("no route to {host}: {e}"))?;
    let local = socket
        .local_addr()
        .map_err(|e| format!("cannot read the route to {host}: {e}"))?
        .ip();
    if local.is_unspecified() {
        return Err(format!("no route to {host}"));
    }
    Ok(local)
}

/// A host as it is written in a URL or `host:port`: an IPv6 address in brackets.
pub fn host_for_url(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// True for `localhost` and loopback addresses.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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

    #[test]
    fn spark_local_hostname_wins_over_spark_local_ip_and_empty_means_unset() {
        assert_eq!(spark_local_host(env(&[])), None);
        assert_eq!(
            spark_local_host(env(&[(LOCAL_IP_ENV, "10.1.2.3")])).as_deref(),
            Some("10.1.2.3")
        );
        assert_eq!(
            spark_local_host(env(&[
                (LOCAL_IP_ENV, "10.1.2.3"),
                (LOCAL_HOSTNAME_ENV, "node7")
            ]))
            .as_deref(),
            Some("node7")
        );
        assert_eq!(
            spark_local_host(env(&[
                (LOCAL_HOSTNAME_ENV, " "),
                (LOCAL_IP_ENV, "10.0.0.9")
            ]))
            .as_deref(),
            Some("10.0.0.9")
        );
        assert_eq!(spark_local_ip(env(&[(LOCAL_HOSTNAME_ENV, "node7")])), None);
        assert_eq!(
            spark_local_ip(env(&[(LOCAL_IP_ENV, "10.1.2.3")])).as_deref(),
            Some("10.1.2.3")
        );
    }

    #[test]
    fn addresses_are_taken_as_they_are_and_names_are_resolved() {
        assert_eq!(bind_ip("10.77.0.3"), Ok(IpAddr::from([10, 77, 0, 3])));
        assert_eq!(bind_ip("[::1]"), Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert!(bind_ip("localhost").is_ok_and(|ip| ip.is_loopback()));
        assert!(bind_ip("").is_err());
    }

    #[test]
    fn the_route_to_a_loopback_peer_starts_on_loopback() {
        assert_eq!(
            source_address_towards("127.0.0.1", 7077),
            Ok(IpAddr::from([127, 0, 0, 1]))
        );
    }

    #[test]
    fn ipv6_hosts_get_brackets_in_urls() {
        assert_eq!(host_for_url(IpAddr::from([10, 0, 0, 1])), "10.0.0.1");
        assert_eq!(host_for_url(IpAddr::V6(Ipv6Addr::LOCALHOST)), "[::1]");
    }

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
