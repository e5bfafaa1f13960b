//! Spark's auth engine of `spark.network.crypto` (`org.apache.spark.network.crypto.AuthEngine`,
//! the forward-secure protocol of that package's README, Spark 3.1.3, 3.2 and later): an X25519
//! exchange whose ephemeral public keys travel AES-GCM-encrypted under keys derived by HKDF
//! from the shared secret, each round bound to the rounds before it.
//!
//! One `AuthMessage` each way, in an `RpcRequest` and its `RpcResponse`: tag `0xFB`, the app id,
//! a 16-byte salt and the ciphertext (Tink's `AesGcmJce`: a 12-byte IV, the encrypted 32-byte
//! public key, a 16-byte tag). For a message with transcript `T` (empty for the client's, the
//! client's encoded message for the server's), `aad = appId ‖ salt ‖ T` and the key-encrypting
//! key is `HKDF-SHA256(ikm = secret, salt, info = aad, 16 bytes)`.
//!
//! The session: `shared = X25519(own private, peer public)`, `T2` = both messages encoded;
//! `clientIv = HKDF(shared, T2, "inputIv")`, `serverIv = HKDF(shared, T2, "outputIv")` (16
//! bytes each); the key is `HKDF(shared, T2, "derivedKey", 16)` with
//! `spark.network.crypto.authEngineVersion=2`, the raw 32-byte `shared` with version 1 (the
//! default of every release that has the setting, 4.0.1's included; a release without the
//! setting speaks version 1 only).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;
use x25519_dalek::{x25519, X25519_BASEPOINT_BYTES};

use super::sasl::{put_bytes, Reader};
use super::{random_bytes, AuthError, EngineVersion};

/// The tag byte of an `AuthMessage`.
pub const AUTH_TAG: u8 = 0xFB;

const GCM_IV: usize = 12;
const GCM_TAG: usize = 16;
const KEY: usize = 16;

/// An `AuthMessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMessage {
    /// The app id (`sparkSaslUser` in a standalone cluster).
    pub app_id: String,
    /// The non-secret salt of the key derivation.
    pub salt: Vec<u8>,
    /// Tink's AES-GCM output: IV, ciphertext, tag.
    pub ciphertext: Vec<u8>,
}

impl AuthMessage {
    /// The bytes of the message (an `RpcRequest`'s or `RpcResponse`'s body, and the transcript).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(13 + self.app_id.len() + self.salt.len() + 64);
        out.push(AUTH_TAG);
        put_bytes(&mut out, self.app_id.as_bytes());
        put_bytes(&mut out, &self.salt);
        put_bytes(&mut out, &self.ciphertext);
        out
    }

    /// Reads a message; [`AuthError::Malformed`] if it is not one (a SASL peer's first token,
    /// say).
    pub fn decode(b: &[u8]) -> Result<AuthMessage, AuthError> {
        let mut r = Reader(b);
        if r.u8()? != AUTH_TAG {
            return Err(AuthError::Malformed("not an AuthMessage (tag 0xFB)".into()));
        }
        let app_id = String::from_utf8(r.bytes()?.to_vec())
            .map_err(|_| AuthError::Malformed("an AuthMessage's app id is not UTF-8".into()))?;
        let salt = r.bytes()?.to_vec();
        let ciphertext = r.bytes()?.to_vec();
        if !r.0.is_empty() {
            return Err(AuthError::Malformed(format!(
                "{} bytes after an AuthMessage",
                r.0.len()
            )));
        }
        Ok(AuthMessage {
            app_id,
            salt,
            ciphertext,
        })
    }
}

/// The keys of an authenticated session, as both sides derive them.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    /// The AES key: 32 bytes with engine version 1, 16 with version 2.
    pub key: Vec<u8>,
    /// `HKDF(shared, transcript, "inputIv")`: the CTR IV of what the server sends.
    pub client_iv: [u8; 16],
    /// `HKDF(shared, transcript, "outputIv")`: the CTR IV of what the client sends.
    pub server_iv: [u8; 16],
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKeys")
            .field("key", &format_args!("[{} bytes]", self.key.len()))
            .finish_non_exhaustive()
    }
}

fn hkdf(ikm: &[u8], salt: &[u8], info: &[u8], out: &mut [u8]) -> Result<(), AuthError> {
    Hkdf::<Sha256>::new(Some(salt), ikm)
        .expand(info, out)
        .map_err(|_| AuthError::Crypto("HKDF output length".into()))
}

fn seal(
    secret: &[u8],
    app_id: &str,
    transcript: &[u8],
    public: &[u8; 32],
) -> Result<AuthMessage, AuthError> {
    let salt = random_bytes::<KEY>()?;
    let aad = [app_id.as_bytes(), &salt, transcript].concat();
    let mut kek = [0u8; KEY];
    hkdf(secret, &salt, &aad, &mut kek)?;
    let iv = random_bytes::<GCM_IV>()?;
    let sealed = Aes128Gcm::new((&kek).into())
        .encrypt(
            Nonce::from_slice(&iv),
            Payload {
                msg: public,
                aad: &aad,
            },
        )
        .map_err(|_| AuthError::Crypto("AES-GCM encryption".into()))?;
    Ok(AuthMessage {
        app_id: app_id.to_string(),
        salt: salt.to_vec(),
        ciphertext: [&iv[..], &sealed].concat(),
    })
}

fn open(
    secret: &[u8],
    app_id: &str,
    transcript: &[u8],
    m: &AuthMessage,
) -> Result<[u8; 32], AuthError> {
    if m.app_id != app_id {
        return Err(AuthError::Rejected(format!(
            "app id {:?}, not {app_id:?}",
            m.app_id
        )));
    }
    if m.ciphertext.len() != GCM_IV + 32 + GCM_TAG {
        return Err(AuthError::Malformed(format!(
            "an encrypted public key of {} bytes, not {}",
            m.ciphertext.len(),
            GCM_IV + 32 + GCM_TAG
        )));
    }
    let aad = [app_id.as_bytes(), &m.salt, transcript].concat();
    let mut kek = [0u8; KEY];
    hkdf(secret, &m.salt, &aad, &mut kek)?;
    let (iv, sealed) = m.ciphertext.split_at(GCM_IV);
    let public = Aes128Gcm::new((&kek).into())
        .decrypt(
            Nonce::from_slice(iv),
            Payload {
                msg: sealed,
                aad: &aad,
            },
        )
        .map_err(|_| {
            AuthError::Rejected(
                "the peer's public key does not decrypt: it does not hold the secret".into(),
            )
        })?;
    public
        .try_into()
        .map_err(|_| AuthError::Malformed("a public key not of 32 bytes".into()))
}

fn shared(private: &[u8; 32], public: &[u8; 32]) -> Result<[u8; 32], AuthError> {
    let s = x25519(*private, *public);
    if s == [0u8; 32] {
        return Err(AuthError::Rejected(
            "the peer's public key is of small order".into(),
        ));
    }
    Ok(s)
}

fn session(
    shared: &[u8; 32],
    transcript: &[u8],
    version: EngineVersion,
) -> Result<SessionKeys, AuthError> {
    let key = match version {
        EngineVersion::V1 => shared.to_vec(),
        EngineVersion::V2 => {
            let mut k = [0u8; KEY];
            hkdf(shared, transcript, b"derivedKey", &mut k)?;
            k.to_vec()
        }
    };
    let mut client_iv = [0u8; 16];
    let mut server_iv = [0u8; 16];
    hkdf(shared, transcript, b"inputIv", &mut client_iv)?;
    hkdf(shared, transcript, b"outputIv", &mut server_iv)?;
    Ok(SessionKeys {
        key,
        client_iv,
        server_iv,
    })
}

/// The client's side of one exchange.
pub struct EngineClient {
    secret: Vec<u8>,
    app_id: String,
    version: EngineVersion,
    private: [u8; 32],
    challenge: AuthMessage,
}

impl std::fmt::Debug for EngineClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineClient")
            .field("app_id", &self.app_id)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl EngineClient {
    /// A client of app `app_id` holding `secret`, with a fresh ephemeral key.
    pub fn new(app_id: &str, secret: &str, version: EngineVersion) -> Result<Self, AuthError> {
        let private = random_bytes::<32>()?;
        let public = x25519(private, X25519_BASEPOINT_BYTES);
        let challenge = seal(secret.as_bytes(), app_id, &[], &public)?;
        Ok(EngineClient {
            secret: secret.as_bytes().to_vec(),
            app_id: app_id.to_string(),
            version,
            private,
            challenge,
        })
    }

    /// The challenge to send.
    pub fn challenge(&self) -> &AuthMessage {
        &self.challenge
    }

    /// The session, given the server's response.
    pub fn finish(&self, response: &AuthMessage) -> Result<SessionKeys, AuthError> {
        let t1 = self.challenge.encode();
        let public = open(&self.secret, &self.app_id, &t1, response)?;
        let s = shared(&self.private, &public)?;
        let t2 = [t1, response.encode()].concat();
        session(&s, &t2, self.version)
    }
}

/// The server's side: the response to a client's challenge and the session.
pub fn respond(
    secret: &str,
    challenge: &AuthMessage,
    version: EngineVersion,
) -> Result<(AuthMessage, SessionKeys), AuthError> {
    let app_id = challenge.app_id.as_str();
    let public = open(secret.as_bytes(), app_id, &[], challenge)?;
    let private = random_bytes::<32>()?;
    let own = x25519(private, X25519_BASEPOINT_BYTES);
    let t1 = challenge.encode();
    let response = seal(secret.as_bytes(), app_id, &t1, &own)?;
    let s = shared(&private, &public)?;
    let t2 = [t1, response.encode()].concat();
    Ok((response, session(&s, &t2, version)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_and_server_derive_the_same_session_per_version() {
        for v in [EngineVersion::V1, EngineVersion::V2] {
            let c = EngineClient::new("sparkSaslUser", "s3cret", v).expect("client");
            let (r, server) = respond("s3cret", c.challenge(), v).expect("server");
            let client = c.finish(&r).expect("client session");
            assert!(client == server);
            assert_eq!(
                client.key.len(),
                if v == EngineVersion::V1 { 32 } else { 16 }
            );
            assert_ne!(client.client_iv, client.server_iv);
        }
    }

    #[test]
    fn a_wrong_secret_is_rejected_on_either_side() {
        let c = EngineClient::new("sparkSaslUser", "right", EngineVersion::V1).expect("client");
        assert!(matches!(
            respond("wrong", c.challenge(), EngineVersion::V1),
            Err(AuthError::Rejected(_))
        ));
        let (r, _) = respond("right", c.challenge(), EngineVersion::V1).expect("server");
        let other = EngineClient::new("sparkSaslUser", "wrong", EngineVersion::V1).expect("c");
        assert!(matches!(other.finish(&r), Err(AuthError::Rejected(_))));
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// Spark's `AuthEngineSuite.testFixedChallengeResponse`: a client with a fixed private key,
    /// its challenge and a Spark server's response (app id `appId`, secret `secret`) give the
    /// session key whose id Spark's test names (version 2) and the key it names for version 1.
    #[test]
    fn spark_s_fixed_challenge_and_response_give_spark_s_session_keys() {
        let private: [u8; 32] =
            hex("efe6b68b3fce92158e3637f6ef9d937e75558928dd4b401de04b43d300a73186")
                .try_into()
                .expect("32 bytes");
        let challenge = AuthMessage::decode(&hex(
            "fb00000005617070496400000010890b6e960f48e998777267a7e4e623220000003c48ad7dc7ec9466da9\
             3bda9f11488dc9404050e02c661d87d67c782444944c6e369b27e0a416c30845a2d9e64271511ca98b41d\
             65f8c426e18ff380f6",
        ))
        .expect("Spark's challenge");
        let response = AuthMessage::decode(&hex(
            "fb00000005617070496400000010708451c9dd2792c97c1ca66e6df449ef0000003c64fe899ecdaf458d4\
             e25e9d5c5a380b8e6d1a184692fac065ed84f8592c18e9629f9c636809dca2ffc041f20346eb53db78738\
             08ecad08b46b5ee3ff",
        ))
        .expect("Spark's response");
        let client = |version| EngineClient {
            secret: b"secret".to_vec(),
            app_id: "appId".into(),
            version,
            private,
            challenge: challenge.clone(),
        };
        // TransportCipherUtil.getKeyId: HKDF-SHA256 of the key, no salt, info "keyID", 32 bytes.
        let v2 = client(EngineVersion::V2)
            .finish(&response)
            .expect("v2 session");
        let mut id = [0u8; 32];
        hkdf(&v2.key, &[], b"keyID", &mut id).expect("hkdf");
        assert_eq!(
            id.to_vec(),
            hex("de04fd52d71040ed9d260579dacfdf4f5695f991ce8ddb1dde05a7335880906e")
        );
        let v1 = client(EngineVersion::V1)
            .finish(&response)
            .expect("v1 session");
        assert_eq!(
            v1.key,
            hex("31963f15a320d5c90333f7ecf5cf3a31c7eaf151de07fef8494663a9f47cfd31")
        );
        // The same server response does not open for another secret.
        let wrong = EngineClient {
            secret: b"other".to_vec(),
            ..client(EngineVersion::V2)
        };
        assert!(matches!(
            wrong.finish(&response),
            Err(AuthError::Rejected(_))
        ));
    }

    #[test]
    fn messages_round_trip_and_junk_is_malformed() {
        let c = EngineClient::new("app", "s", EngineVersion::V2).expect("client");
        let b = c.challenge().encode();
        assert_eq!(AuthMessage::decode(&b).expect("decodes"), *c.challenge());
        assert_eq!(b.len(), 1 + 4 + 3 + 4 + 16 + 4 + 60);
        assert!(AuthMessage::decode(&b[..b.len() - 1]).is_err());
        assert!(AuthMessage::decode(&[0xEA, 0, 0, 0, 0]).is_err());
        let mut neg = b.clone();
        neg[1] = 0xFF;
        assert!(AuthMessage::decode(&neg).is_err());
    }
}
