//! The client's hello: the first frame of every connection.

use super::auth::{Nonce, AUTH_MECHANISM};
use super::error::HandshakeError;
use super::map::{
    write_bin_entry, write_map, write_str_entry, write_strs_entry, write_uints_entry, Entries,
    MAGIC,
};
use super::role::Role;
use crate::messages::Version;

/// The client's first frame: who it is and which versions it speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Version numbers the client speaks, as sent; numbers this side does not know are kept, and
    /// ignored by [`negotiate`](super::negotiate).
    pub versions: Vec<u64>,
    /// The client's role.
    pub role: Role,
    /// The client's id: a worker id, application id, executor id, …; may be empty.
    pub id: String,
    /// The client's nonce when it asks to authenticate with a shared secret (the `auth` and
    /// `nonce` keys, protocol/handshake.md §10); `None` for a client without a secret.
    pub auth: Option<Nonce>,
    /// The optional features the client offers (the `features` key, protocol/handshake.md §12),
    /// as sent: names this side does not know are kept, and ignored. Not written when empty.
    pub features: Vec<String>,
}

impl Hello {
    /// A hello offering `versions`.
    pub fn new(versions: &[Version], role: Role, id: impl Into<String>) -> Self {
        Hello {
            versions: versions.iter().map(|v| u64::from(v.number())).collect(),
            role,
            id: id.into(),
            auth: None,
            features: Vec::new(),
        }
    }

    /// The same hello, offering `features`.
    pub fn with_features(mut self, features: &[&str]) -> Self {
        self.features = features.iter().map(|f| f.to_string()).collect();
        self
    }

    /// Whether the hello offers the feature `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.features.iter().any(|f| f == name)
    }

    /// The same hello, asking to authenticate with `nonce`.
    pub fn with_auth(mut self, nonce: Nonce) -> Self {
        self.auth = Some(nonce);
        self
    }
}

/// Appends the hello's frame body (the map, without the length prefix) to `out`.
pub fn encode_hello(hello: &Hello, out: &mut Vec<u8>) {
    let auth = if hello.auth.is_some() { 2 } else { 0 };
    let features = u32::from(!hello.features.is_empty());
    write_map(out, 4 + auth + features);
    write_str_entry(out, "magic", MAGIC);
    write_uints_entry(out, "versions", &hello.versions);
    write_str_entry(out, "role", hello.role.name());
    write_str_entry(out, "id", &hello.id);
    if let Some(nonce) = &hello.auth {
        write_str_entry(out, "auth", AUTH_MECHANISM);
        write_bin_entry(out, "nonce", nonce);
    }
    if !hello.features.is_empty() {
        write_strs_entry(out, "features", &hello.features);
    }
}

/// Reads a hello from a frame body. Unknown keys are ignored.
///
/// Fails with [`HandshakeError::BadMagic`] when the body is not a sparkwire handshake map,
/// [`HandshakeError::RoleNotAccepted`] for a role this side does not know, and
/// [`HandshakeError::Malformed`] when a key is missing or has the wrong type.
pub fn decode_hello(body: &[u8]) -> Result<Hello, HandshakeError> {
    let entries = Entries::parse(body)?;
    let versions = entries.uints("versions")?;
    let role_name = entries.str("role")?;
    let id = entries.str("id")?.to_string();
    let auth = match (entries.has("auth"), entries.has("nonce")) {
        (false, false) => None,
        (true, true) => {
            let mechanism = entries.str("auth")?;
            if mechanism != AUTH_MECHANISM {
                return Err(HandshakeError::Malformed(format!(
                    "authentication {mechanism:?} is not known; this side knows {AUTH_MECHANISM:?}"
                )));
            }
            Some(entries.bin_array("nonce")?)
        }
        _ => {
            return Err(HandshakeError::Malformed(
                "a hello must have both \"auth\" and \"nonce\", or neither".to_string(),
            ))
        }
    };
    let role = Role::from_name(role_name).ok_or_else(|| HandshakeError::RoleNotAccepted {
        role: role_name.to_string(),
        family: None,
    })?;
    let features = entries.strs("features")?;
    Ok(Hello {
        versions,
        role,
        id,
        auth,
        features,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_asking_to_authenticate_carries_the_mechanism_and_the_nonce() {
        let hello = Hello::new(&[Version::V2], Role::Worker, "w").with_auth([9; 32]);
        let mut out = Vec::new();
        encode_hello(&hello, &mut out);
        assert_eq!(out[0], 0x86);
        assert_eq!(decode_hello(&out), Ok(hello));
        let mut half = Vec::new();
        write_map(&mut half, 5);
        write_str_entry(&mut half, "magic", MAGIC);
        write_uints_entry(&mut half, "versions", &[2]);
        write_str_entry(&mut half, "role", "worker");
        write_str_entry(&mut half, "id", "");
        write_str_entry(&mut half, "auth", AUTH_MECHANISM);
        assert!(matches!(
            decode_hello(&half),
            Err(HandshakeError::Malformed(_))
        ));
    }

    #[test]
    fn hello_bytes_are_the_ones_protocol_handshake_md_shows() {
        let hello = Hello::new(&[Version::V1, Version::V2], Role::Worker, "worker-1");
        let mut out = Vec::new();
        encode_hello(&hello, &mut out);
        let expected: Vec<u8> = [
            &[0x84][..],
            &[0xa5],
            b"magic",
            &[0xa9],
            b"sparkwire",
            &[0xa8],
            b"versions",
            &[0x92, 0x01, 0x02],
            &[0xa4],
            b"role",
            &[0xa6],
            b"worker",
            &[0xa2],
            b"id",
            &[0xa8],
            b"worker-1",
        ]
        .concat();
        assert_eq!(out, expected);
        assert_eq!(out.len(), 0x35);
        assert_eq!(decode_hello(&out), Ok(hello));
    }

    #[test]
    fn a_hello_offering_close_reason_is_the_one_protocol_handshake_md_shows() {
        let hello = Hello::new(&[Version::V2], Role::AppClient, "app")
            .with_features(&[crate::wire::handshake::CLOSE_REASON]);
        let mut out = Vec::new();
        encode_hello(&hello, &mut out);
        let expected: Vec<u8> = [
            &[0x85][..],
            &[0xa5],
            b"magic",
            &[0xa9],
            b"sparkwire",
            &[0xa8],
            b"versions",
            &[0x91, 0x02],
            &[0xa4],
            b"role",
            &[0xaa],
            b"app-client",
            &[0xa2],
            b"id",
            &[0xa3],
            b"app",
            &[0xa8],
            b"features",
            &[0x91, 0xab],
            b"closeReason",
        ]
        .concat();
        assert_eq!(out, expected);
        assert_eq!(out.len(), 0x49);
        assert_eq!(decode_hello(&out), Ok(hello));
        // Features it does not know are kept, and a malformed list is refused.
        let mut odd = Vec::new();
        write_map(&mut odd, 5);
        write_str_entry(&mut odd, "magic", MAGIC);
        write_uints_entry(&mut odd, "versions", &[2]);
        write_str_entry(&mut odd, "role", "worker");
        write_str_entry(&mut odd, "id", "");
        write_uints_entry(&mut odd, "features", &[1]);
        assert!(matches!(
            decode_hello(&odd),
            Err(HandshakeError::Malformed(_))
        ));
    }

    #[test]
    fn hello_ignores_unknown_keys_and_keeps_unknown_versions() {
        let mut out = Vec::new();
        write_map(&mut out, 5);
        write_str_entry(&mut out, "id", "exec-7");
        write_str_entry(&mut out, "role", "executor");
        write_str_entry(&mut out, "compression", "lz4");
        write_uints_entry(&mut out, "versions", &[2, 9]);
        write_str_entry(&mut out, "magic", MAGIC);
        let hello = decode_hello(&out);
        assert_eq!(
            hello,
            Ok(Hello {
                versions: vec![2, 9],
                role: Role::Executor,
                id: "exec-7".to_string(),
                auth: None,
                features: vec![],
            })
        );
    }

    #[test]
    fn hello_without_sparkwire_magic_is_bad_magic() {
        let mut out = Vec::new();
        write_map(&mut out, 1);
        write_str_entry(&mut out, "magic", "sparkwirf");
        assert!(matches!(
            decode_hello(&out),
            Err(HandshakeError::BadMagic { found: Some(_) })
        ));
        assert!(matches!(
            decode_hello(b"GET / HTTP/1.1"),
            Err(HandshakeError::BadMagic { .. })
        ));
        let mut no_magic = Vec::new();
        write_map(&mut no_magic, 1);
        write_str_entry(&mut no_magic, "role", "worker");
        assert_eq!(
            decode_hello(&no_magic),
            Err(HandshakeError::BadMagic { found: None })
        );
    }

    #[test]
    fn hello_with_missing_or_mistyped_keys_is_malformed() {
        let mut out = Vec::new();
        write_map(&mut out, 2);
        write_str_entry(&mut out, "magic", MAGIC);
        write_str_entry(&mut out, "role", "worker");
        assert!(matches!(
            decode_hello(&out),
            Err(HandshakeError::Malformed(_))
        ));
        let mut typed = Vec::new();
        write_map(&mut typed, 4);
        write_str_entry(&mut typed, "magic", MAGIC);
        write_str_entry(&mut typed, "versions", "1,2");
        write_str_entry(&mut typed, "role", "worker");
        write_str_entry(&mut typed, "id", "");
        assert!(matches!(
            decode_hello(&typed),
            Err(HandshakeError::Malformed(_))
        ));
    }

    #[test]
    fn hello_with_an_unknown_role_is_not_accepted() {
        let mut out = Vec::new();
        write_map(&mut out, 4);
        write_str_entry(&mut out, "magic", MAGIC);
        write_uints_entry(&mut out, "versions", &[1]);
        write_str_entry(&mut out, "role", "historyServer");
        write_str_entry(&mut out, "id", "");
        assert_eq!(
            decode_hello(&out),
            Err(HandshakeError::RoleNotAccepted {
                role: "historyServer".to_string(),
                family: None
            })
        );
    }
}
