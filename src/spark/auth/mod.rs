//! Spark's own authentication on its wire (`spark.authenticate=true`; feature `spark-auth`):
//! the bootstraps a Spark process runs on each new connection before any RPC, both sides.
//!
//! - **SASL DIGEST-MD5** ([`sasl`]): Spark's default, `org.apache.spark.network.sasl`, spoken
//!   by every release; `SaslMessage`s (tag `0xEA`) in `RpcRequest`s, two round trips, then the
//!   connection goes on in plaintext (quality of protection `auth`) or, with
//!   `spark.authenticate.enableSaslEncryption=true`, sealed by SASL's own confidentiality layer
//!   (`auth-conf`, RC4: [`sasl_conf`]).
//! - **the auth engine** ([`engine`]) of `spark.network.crypto.enabled=true`, Spark 3.1.3 and
//!   3.2 on: one `AuthMessage` (tag `0xFB`) each way, an X25519 exchange bound to the shared
//!   secret, then every byte each way runs through AES-CTR ([`cipher`],
//!   `spark.network.crypto.cipher`'s default `AES/CTR/NoPadding`), with
//!   `spark.network.crypto.authEngineVersion` 1 (the default) or 2.
//!
//! A Spark server with crypto on takes either (it falls back to SASL when the first token is
//! not an `AuthMessage`, unless `spark.network.crypto.saslFallback=false`); with crypto off it
//! takes SASL only, failing an `AuthMessage` with an `RpcFailure` on which a client with
//! fallback retries SASL on the same connection.
//!
//! The state machines here are IO-free; [`client_handshake`] and [`server_handshake`] (feature
//! `spark-proxy`) run them over a tokio stream and give back an [`AuthStream`] that carries
//! Spark's frames on, encrypted when the session is.
//!
//! With `spark.network.crypto.cipher=AES/GCM/NoPadding` (Spark 4.0 on) the session runs through
//! Spark's segmented AES-GCM ([`gcm`]) instead of AES-CTR.
//!
//! - **the original auth protocol** ([`legacy`]) of `spark.network.crypto`, Spark 2.2 to 3.1.2
//!   (`ClientChallenge`, tag `0xFA`, and `ServerResponse`), AES-CTR after it: **broken**
//!   (CVE-2021-38296), so spoken only when the operator opts in with sparkwire's own setting
//!   `sparkwire.legacyAuthEngine=true` (with `spark.network.crypto.enabled` on), which a Spark
//!   3.0 peer with crypto on needs; each session that runs it is logged at WARN naming the CVE.
//!   Without it a server answers a `ClientChallenge` as Spark 3.1.3 and later do: an
//!   `RpcFailure` after which the client may go on with SASL on the same connection (when SASL
//!   is taken), or the connection closes ([`AuthError::Unsupported`]) with
//!   `spark.network.crypto.saslFallback=false`; either way a WARN names the CVE.
//!
//! Not spoken (each refused with a typed error, never silently weakened): SASL encryption with
//! `3des` or `des` (Java offers RC4 beside them and chooses it).

pub mod cipher;
pub mod engine;
pub mod gcm;
pub mod legacy;
pub mod sasl;
pub mod sasl_conf;
#[cfg(feature = "spark-proxy")]
mod stream;

use std::time::Duration;

pub use cipher::{CtrSession, CtrStream};
pub use engine::{AuthMessage, EngineClient, SessionKeys};
pub use gcm::{GcmOpener, GcmSealer, GcmSession};
pub use legacy::{ClientChallenge, LegacyClient, ServerResponse};
pub use sasl::{DigestClient, DigestServer, SaslMessage};
pub use sasl_conf::{SaslCipher, SaslPrivacy};
#[cfg(feature = "spark-proxy")]
pub use stream::{client_handshake, server_handshake, AuthStream, MAX_AUTH_FRAME};

/// The SASL user (and auth engine app id) every process of a standalone cluster names:
/// Spark's `SecurityManager.getSaslUser()`.
pub const SASL_USER: &str = "sparkSaslUser";

/// Largest SASL token taken.
pub const MAX_TOKEN: usize = 16 * 1024;

/// Why a bootstrap failed. Each costs only the connection it happened on.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The peer sent something that is not what Spark writes there.
    #[error("malformed: {0}")]
    Malformed(String),
    /// The peer's proof is wrong: it does not hold the secret (or names another user or app).
    #[error("authentication failed: {0}")]
    Rejected(String),
    /// The peer answered our bootstrap with an `RpcFailure` (its text).
    #[error("the peer refused the bootstrap: {0}")]
    Refused(String),
    /// The peer asks for something not spoken here (SASL encryption, a cipher, a scheme).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A frame out of turn (a message before authentication, say).
    #[error("protocol: {0}")]
    Protocol(String),
    /// A primitive failed (an OS random source, a key length).
    #[error("crypto: {0}")]
    Crypto(String),
    /// The peer did not finish in time.
    #[error("the bootstrap did not finish within {0:?}")]
    Timeout(Duration),
    /// The connection failed or closed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// `spark.network.crypto.authEngineVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EngineVersion {
    /// Version 1, the default: the session key is the X25519 output itself (AES-256).
    #[default]
    V1,
    /// Version 2: the session key is HKDF of it (AES-128).
    V2,
}

impl EngineVersion {
    /// The setting's value: 1 or 2.
    pub fn number(self) -> u8 {
        match self {
            EngineVersion::V1 => 1,
            EngineVersion::V2 => 2,
        }
    }
}

impl std::str::FromStr for EngineVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "1" => Ok(EngineVersion::V1),
            "2" => Ok(EngineVersion::V2),
            other => Err(format!(
                "spark.network.crypto.authEngineVersion is 1 or 2, not {other:?}"
            )),
        }
    }
}

/// `spark.network.crypto.cipher`: the transport cipher after the auth engine. Spark does not
/// negotiate it: both sides must name the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TransportCipher {
    /// `AES/CTR/NoPadding`, the default of every release.
    #[default]
    Ctr,
    /// `AES/GCM/NoPadding` (Spark 4.0 and later): Tink's segmented AES-GCM ([`gcm`]).
    Gcm,
}

impl TransportCipher {
    /// The setting's value.
    pub fn name(self) -> &'static str {
        match self {
            TransportCipher::Ctr => "AES/CTR/NoPadding",
            TransportCipher::Gcm => "AES/GCM/NoPadding",
        }
    }
}

impl std::str::FromStr for TransportCipher {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // Spark compares the names ignoring case.
        match s.trim().to_ascii_uppercase().as_str() {
            "AES/CTR/NOPADDING" => Ok(TransportCipher::Ctr),
            "AES/GCM/NOPADDING" => Ok(TransportCipher::Gcm),
            other => Err(format!(
                "spark.network.crypto.cipher is AES/CTR/NoPadding or AES/GCM/NoPadding, not {other:?}"
            )),
        }
    }
}

/// What a client speaks, as Spark's settings name it.
#[derive(Debug, Clone)]
pub struct ClientAuth {
    /// `spark.authenticate.secret`.
    pub secret: String,
    /// The app id / SASL user: [`SASL_USER`].
    pub app_id: String,
    /// `spark.network.crypto.enabled`: the auth engine first, else SASL only.
    pub crypto: bool,
    /// `spark.network.crypto.saslFallback`: SASL after the engine is refused.
    pub sasl_fallback: bool,
    /// `spark.network.crypto.authEngineVersion`.
    pub version: EngineVersion,
    /// `spark.network.crypto.cipher`.
    pub cipher: TransportCipher,
    /// `spark.network.auth.rpcTimeout` (Spark's default 30 s), for the whole bootstrap.
    pub timeout: Duration,
    /// `spark.authenticate.enableSaslEncryption`: SASL asks for `auth-conf` only and the
    /// session is sealed ([`sasl_conf`]).
    pub sasl_encryption: bool,
    /// `sparkwire.legacyAuthEngine` (sparkwire's, not Spark's): with crypto on, the client
    /// speaks the original, broken protocol of Spark 2.2 to 3.1.2 ([`legacy`]) in place of the
    /// X25519 engine, as a Spark 3.0 client does (for a Spark 3.0 server with SASL fallback
    /// off). Off by default.
    pub legacy: bool,
}

impl ClientAuth {
    /// Spark's defaults with `spark.authenticate=true`: SASL only.
    pub fn sasl(secret: impl Into<String>) -> Self {
        ClientAuth {
            secret: secret.into(),
            app_id: SASL_USER.into(),
            crypto: false,
            sasl_fallback: true,
            version: EngineVersion::V1,
            cipher: TransportCipher::Ctr,
            timeout: Duration::from_secs(30),
            sasl_encryption: false,
            legacy: false,
        }
    }

    /// `spark.network.crypto.enabled=true` with the other defaults.
    pub fn crypto(secret: impl Into<String>) -> Self {
        ClientAuth {
            crypto: true,
            ..ClientAuth::sasl(secret)
        }
    }

    /// Sets one of Spark's settings by its name, as [`ServerAuth::set`] does;
    /// `spark.authenticate.enableSaslEncryption` is the client's own.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        if key.trim() == "spark.authenticate.enableSaslEncryption" {
            self.sasl_encryption = flag(key, value)?;
            return Ok(());
        }
        let mut server = ServerAuth {
            crypto: self.crypto,
            sasl_fallback: self.sasl_fallback,
            version: self.version,
            cipher: self.cipher,
            legacy: self.legacy,
            ..ServerAuth::new(String::new())
        };
        server.set(key, value)?;
        self.crypto = server.crypto;
        self.sasl_fallback = server.sasl_fallback;
        self.version = server.version;
        self.cipher = server.cipher;
        self.legacy = server.legacy;
        Ok(())
    }
}

/// What a server takes, as Spark's settings name it.
#[derive(Debug, Clone)]
pub struct ServerAuth {
    /// `spark.authenticate.secret`.
    pub secret: String,
    /// `spark.network.crypto.enabled`: the auth engine is taken (with SASL as fallback).
    pub crypto: bool,
    /// `spark.network.crypto.saslFallback`: whether SASL is taken when crypto is on.
    pub sasl_fallback: bool,
    /// `spark.network.crypto.authEngineVersion`: the version of the session key derived.
    pub version: EngineVersion,
    /// `spark.network.crypto.cipher`: the transport cipher after the auth engine.
    pub cipher: TransportCipher,
    /// How long a peer has to finish the bootstrap.
    pub timeout: Duration,
    /// `spark.network.sasl.serverAlwaysEncrypt`: SASL offers `auth-conf` only (else
    /// `auth-conf,auth`, and the client chooses).
    pub sasl_always_encrypt: bool,
    /// `sparkwire.legacyAuthEngine` (sparkwire's, not Spark's): with crypto on, the original,
    /// broken protocol of Spark 2.2 to 3.1.2 ([`legacy`], CVE-2021-38296) is taken beside the
    /// X25519 engine. Off by default: a `ClientChallenge` is then refused as Spark 3.1.3's
    /// server refuses it.
    pub legacy: bool,
}

fn flag(key: &str, v: &str) -> Result<bool, String> {
    match v.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("{key} is true or false, not {other:?}")),
    }
}

impl ServerAuth {
    /// What Spark's server takes with crypto on and SASL fallback allowed: both schemes.
    pub fn new(secret: impl Into<String>) -> Self {
        ServerAuth {
            secret: secret.into(),
            crypto: true,
            sasl_fallback: true,
            version: EngineVersion::V1,
            cipher: TransportCipher::Ctr,
            timeout: Duration::from_secs(30),
            sasl_always_encrypt: false,
            legacy: false,
        }
    }

    /// Sets one of Spark's settings by its name: `spark.network.crypto.enabled`,
    /// `spark.network.crypto.saslFallback`, `spark.network.sasl.serverAlwaysEncrypt` (`true` /
    /// `false`), `spark.network.crypto.authEngineVersion` (1 / 2) or
    /// `spark.network.crypto.cipher` (`AES/CTR/NoPadding` / `AES/GCM/NoPadding`), or sparkwire's
    /// own `sparkwire.legacyAuthEngine` (`true` / `false`);
    /// `spark.authenticate.enableSaslEncryption` is taken and changes nothing here (it is a
    /// client's setting, which Spark's server does not read either); any other name is an error.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let flag = |v: &str| flag(key, v);
        match key.trim() {
            "spark.network.sasl.serverAlwaysEncrypt" => self.sasl_always_encrypt = flag(value)?,
            "spark.authenticate.enableSaslEncryption" => {
                flag(value)?;
            }
            "spark.network.crypto.enabled" => self.crypto = flag(value)?,
            "spark.network.crypto.saslFallback" => self.sasl_fallback = flag(value)?,
            "spark.network.crypto.authEngineVersion" => self.version = value.parse()?,
            "spark.network.crypto.cipher" => self.cipher = value.parse()?,
            "sparkwire.legacyAuthEngine" => self.legacy = flag(value)?,
            other => {
                return Err(format!(
                    "{other:?} is not a setting of Spark's authentication spoken here \
                     (spark.network.crypto.enabled, spark.network.crypto.saslFallback, \
                     spark.network.crypto.authEngineVersion, spark.network.crypto.cipher, \
                     spark.authenticate.enableSaslEncryption, \
                     spark.network.sasl.serverAlwaysEncrypt, sparkwire.legacyAuthEngine)"
                ))
            }
        }
        Ok(())
    }

    /// Whether SASL is taken.
    pub fn takes_sasl(&self) -> bool {
        !self.crypto || self.sasl_fallback
    }
}

/// What a bootstrap agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiated {
    /// SASL DIGEST-MD5, quality of protection `auth`: plaintext after it.
    Sasl,
    /// SASL DIGEST-MD5, quality of protection `auth-conf`: sealed with the cipher after it.
    SaslEncrypted(SaslCipher),
    /// The auth engine, AES-CTR after it.
    Engine(EngineVersion),
    /// The auth engine, AES-GCM after it (`spark.network.crypto.cipher=AES/GCM/NoPadding`).
    EngineGcm(EngineVersion),
    /// The original, broken auth protocol of Spark 2.2 to 3.1.2 ([`legacy`], CVE-2021-38296),
    /// AES-CTR after it.
    Legacy,
}

impl std::fmt::Display for Negotiated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Negotiated::Sasl => f.write_str("SASL DIGEST-MD5 (auth)"),
            Negotiated::SaslEncrypted(c) => {
                write!(f, "SASL DIGEST-MD5 (auth-conf, cipher {})", c.token())
            }
            Negotiated::Engine(v) => write!(f, "auth engine v{} with AES-CTR", v.number()),
            Negotiated::EngineGcm(v) => write!(f, "auth engine v{} with AES-GCM", v.number()),
            Negotiated::Legacy => f.write_str(
                "the original auth protocol of Spark 2.2 to 3.1.2 (broken: CVE-2021-38296) \
                 with AES-CTR",
            ),
        }
    }
}

/// `N` bytes from the OS's random source.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], AuthError> {
    let mut b = [0u8; N];
    getrandom::getrandom(&mut b).map_err(|e| AuthError::Crypto(format!("OS random: {e}")))?;
    Ok(b)
}
