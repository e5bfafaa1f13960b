//! Addresses: master URLs and endpoint addresses, with one error for both.
//!
//! [`MasterUrl`]: `sparkwire://host:port[,host:port…]`, one address per master of a
//! high-availability group (Spark's `spark://h1:p1,h2:p2`).
//!
//! [`SparkUrl`]: `spark://Name@host:port` names an endpoint (a driver's `CoarseGrainedScheduler`,
//! a `Worker`), `spark://host:port` a master. The `sparkwire://` scheme of the reference master
//! and worker, and a bare `host:port`, are taken as well.

use crate::messages::Addr;
use std::fmt;

/// The URL scheme of sparkwire masters.
pub const SCHEME: &str = "sparkwire://";

/// A master URL or an endpoint address could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid address {text:?}: {problem} (expected {expected})")]
pub struct UrlError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
    /// The form expected: `sparkwire://host:port[,host:port…]` or `spark://[Name@]host:port`.
    pub expected: &'static str,
}

/// One or more master addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterUrl {
    /// The masters, in the order given.
    pub masters: Vec<Addr>,
}

impl MasterUrl {
    /// Parses `sparkwire://h1:p1[,h2:p2…]` (the `spark://` scheme is taken too).
    pub fn parse(url: &str) -> Result<MasterUrl, UrlError> {
        let err = |problem: &str| UrlError {
            text: url.to_string(),
            problem: problem.to_string(),
            expected: "sparkwire://host:port[,host:port…]",
        };
        let rest = url
            .strip_prefix(SCHEME)
            .or_else(|| url.strip_prefix("spark://"))
            .ok_or_else(|| {
                err("it must start with sparkwire:// (or spark://, taken as the same)")
            })?;
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() {
            return Err(err("no master address"));
        }
        let mut masters = Vec::new();
        for part in rest.split(',') {
            let (host, port) = part
                .rsplit_once(':')
                .ok_or_else(|| err("each master needs host:port"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(err("empty host"));
            }
            let port: u16 = port.parse().map_err(|_| err("bad port"))?;
            masters.push(Addr::new(host, i32::from(port)));
        }
        Ok(MasterUrl { masters })
    }

    /// The URL of one master.
    pub fn single(addr: &Addr) -> String {
        format!("{SCHEME}{}:{}", addr.host, addr.port)
    }
}

impl fmt::Display for MasterUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SCHEME)?;
        for (i, m) in self.masters.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{}", m.host, m.port)?;
        }
        Ok(())
    }
}

/// A parsed `spark://` address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SparkUrl {
    /// The endpoint name before `@`, if any (`CoarseGrainedScheduler`, `Worker`).
    pub name: Option<String>,
    /// Host name or IP address (an IPv6 address without its brackets).
    pub host: String,
    /// Port.
    pub port: u16,
}

impl SparkUrl {
    /// The address of endpoint `name` at `host:port`.
    pub fn endpoint(name: impl Into<String>, host: impl Into<String>, port: u16) -> Self {
        SparkUrl {
            name: Some(name.into()),
            host: host.into(),
            port,
        }
    }

    /// Reads `spark://[Name@]host:port`, `sparkwire://[Name@]host:port` or `[Name@]host:port`.
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        let fail = |problem: &str| UrlError {
            text: text.to_string(),
            problem: problem.to_string(),
            expected: "spark://[Name@]host:port",
        };
        let rest = text
            .strip_prefix("spark://")
            .or_else(|| text.strip_prefix("sparkwire://"))
            .unwrap_or(text);
        let rest = rest.trim_end_matches('/');
        let (name, hostport) = match rest.split_once('@') {
            Some((name, hp)) if !name.is_empty() => (Some(name.to_string()), hp),
            Some(_) => return Err(fail("empty endpoint name")),
            None => (None, rest),
        };
        let (host, port) = hostport.rsplit_once(':').ok_or_else(|| fail("no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() {
            return Err(fail("empty host"));
        }
        if host.contains(['/', '@', ' ']) {
            return Err(fail("bad host"));
        }
        let port = port.parse::<u16>().map_err(|_| fail("bad port"))?;
        Ok(SparkUrl {
            name,
            host: host.to_string(),
            port,
        })
    }

    /// `host:port`, as a socket address to connect to (IPv6 hosts in brackets).
    pub fn socket_address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for SparkUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("spark://")?;
        if let Some(name) = &self.name {
            write!(f, "{name}@")?;
        }
        f.write_str(&self.socket_address())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_one_or_several_masters_and_refuses_malformed_urls() {
        let one = MasterUrl::parse("sparkwire://127.0.0.1:7077").unwrap();
        assert_eq!(one.masters, vec![Addr::new("127.0.0.1", 7077)]);
        let two = MasterUrl::parse("sparkwire://a:1,b:2").unwrap();
        assert_eq!(two.masters, vec![Addr::new("a", 1), Addr::new("b", 2)]);
        assert_eq!(two.to_string(), "sparkwire://a:1,b:2");
        for bad in [
            "http://a:1",
            "sparkwire://",
            "sparkwire://a",
            "sparkwire://a:x",
            "sparkwire://:1",
            "sparkwire://a:70000",
        ] {
            assert!(MasterUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoint_master_and_bare_addresses_parse_and_print_back() {
        let d = SparkUrl::parse("spark://CoarseGrainedScheduler@127.0.0.1:40123").expect("ok");
        assert_eq!(
            d,
            SparkUrl::endpoint("CoarseGrainedScheduler", "127.0.0.1", 40123)
        );
        assert_eq!(
            d.to_string(),
            "spark://CoarseGrainedScheduler@127.0.0.1:40123"
        );
        let m = SparkUrl::parse("spark://localhost:7077").expect("ok");
        assert_eq!((m.name, m.host.as_str(), m.port), (None, "localhost", 7077));
        let w = SparkUrl::parse("sparkwire://127.0.0.1:9").expect("ok");
        assert_eq!((w.host.as_str(), w.port), ("127.0.0.1", 9));
        let b = SparkUrl::parse("[::1]:80").expect("ok");
        assert_eq!(b.socket_address(), "[::1]:80");
    }

    #[test]
    fn both_kinds_of_address_report_one_error_naming_the_text_and_the_form_expected() {
        let master = MasterUrl::parse("http://a:1").expect_err("not a master URL");
        assert_eq!(master.text, "http://a:1");
        assert_eq!(master.expected, "sparkwire://host:port[,host:port…]");
        assert!(master
            .to_string()
            .starts_with("invalid address \"http://a:1\": "));
        let endpoint = SparkUrl::parse("spark://host").expect_err("no port");
        assert_eq!(
            (endpoint.text.as_str(), endpoint.problem.as_str()),
            ("spark://host", "no port")
        );
        assert_eq!(
            endpoint.to_string(),
            "invalid address \"spark://host\": no port (expected spark://[Name@]host:port)"
        );
    }

    #[test]
    fn malformed_addresses_are_errors() {
        for bad in [
            "",
            "spark://",
            "spark://host",
            "spark://host:port",
            "spark://host:70000",
            "spark://@host:1",
            "spark://:1",
        ] {
            assert!(SparkUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
