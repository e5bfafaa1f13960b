//! Master URLs: `sparkwire://host:port[,host:port…]`, one address per master of a
//! high-availability group (Spark's `spark://h1:p1,h2:p2`).

use std::fmt;

use crate::messages::Addr;

/// The URL scheme of sparkwire masters.
pub const SCHEME: &str = "sparkwire://";

/// A master URL could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid master URL {url:?}: {reason}")]
pub struct UrlError {
    /// The text given.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
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
        let err = |reason: &str| UrlError {
            url: url.to_string(),
            reason: reason.to_string(),
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
}
