//! The original auth protocol of `spark.network.crypto` (Spark 2.2 to 3.1.2; its README's first
//! protocol), **known broken**: CVE-2021-38296 (a captured exchange lets an attacker recover the
//! session key). Spoken here only where an operator opts in (`sparkwire.legacyAuthEngine=true`,
//! SPEC §15.6), to let a Spark 3.0 cluster with crypto on use sparkwire's daemons; every session
//! that runs it is logged at WARN naming the CVE by the code that runs it.
//!
//! One `ClientChallenge` (tag `0xFA`) in an `RpcRequest`, one `ServerResponse` (tag `0xFB`, the
//! tag the X25519 engine's `AuthMessage` took over) in its `RpcResponse`; each field is Spark's
//! `Encoders`: an `int32` length and the bytes for strings (UTF-8) and byte arrays, a bare
//! `int32` for numbers.
//!
//! - `ClientChallenge`: tag, app id, kdf (`PBKDF2WithHmacSHA1`), iterations (1024), cipher
//!   (`AES/CTR/NoPadding`), key length in bits (128), nonce (key length / 8 random bytes),
//!   challenge = `E(appId ‖ nonce ‖ c)` with `c` the client's key length / 8 random bytes.
//! - The auth key is `PBKDF2(kdf, password = the secret's UTF-8, salt = nonce, iterations,
//!   key length)`. Both sides encrypt with one AES-CTR stream under it and decrypt with another,
//!   both starting at the IV = the nonce's first 16 bytes (zero-padded when shorter): each side's
//!   first message starts at keystream offset 0, and the server's four encrypted fields run on
//!   one stream, in wire order.
//! - `ServerResponse`: tag, `E(appId ‖ nonce ‖ r)` where `r` is `c + 1` with `c` and `r` read as
//!   Java's `BigInteger` (big-endian two's complement, `r` in its shortest form: see
//!   [`raw_response`]), then `E(sessionNonce)` (16 random bytes), `E(ivA)`, `E(ivB)` (16 random
//!   bytes each). The server sends with `ivA` and reads with `ivB`; the client the other way
//!   round. The session key is `PBKDF2(kdf, secret, sessionNonce, iterations, key length)` and
//!   every byte after the response runs through AES-CTR ([`super::cipher`]) as with the X25519
//!   engine.
//!
//! A server takes the client's kdf, iterations, cipher and key length as Spark's does, within
//! bounds: the kdfs Java names `PBKDF2WithHmacSHA1`, `…SHA224`, `…SHA256`, `…SHA384`, `…SHA512`;
//! 1 to [`MAX_ITERATIONS`] iterations (a peer cannot make the server spend more); cipher
//! `AES/CTR/NoPadding` (any case); keys of 128, 192 or 256 bits; nonces of 1 to [`MAX_NONCE`]
//! bytes; an app id of at most [`MAX_APP_ID`] bytes and a challenge of at most
//! [`MAX_CHALLENGE`]. Anything else is a typed error and costs the connection only.

use sha1::Sha1;
use sha2::{Sha224, Sha256, Sha384, Sha512};
use subtle::ConstantTimeEq;

use super::cipher::CtrStream;
use super::engine::SessionKeys;
use super::sasl::{put_bytes, Reader};
use super::{random_bytes, AuthError};

/// The tag byte of a `ClientChallenge`.
pub const CHALLENGE_TAG: u8 = 0xFA;
/// The tag byte of a `ServerResponse` (the same as the X25519 engine's `AuthMessage`).
pub const RESPONSE_TAG: u8 = 0xFB;
/// The one cipher spoken: Spark 3.0's default and the only stream cipher commons-crypto offers.
pub const CIPHER: &str = "AES/CTR/NoPadding";
/// Most PBKDF2 iterations a server computes for a peer (Spark's default is 1024).
pub const MAX_ITERATIONS: u32 = 65_536;
/// Longest nonce (PBKDF2 salt) taken.
pub const MAX_NONCE: usize = 64;
/// Longest app id taken.
pub const MAX_APP_ID: usize = 256;
/// Longest encrypted challenge or response taken.
pub const MAX_CHALLENGE: usize = 1024;

/// What the CVE is, for the WARN every session that runs this protocol logs.
pub const WARNING: &str = "the original auth protocol of spark.network.crypto (Spark 2.2 to \
                           3.1.2) is broken (CVE-2021-38296: a captured exchange gives away the \
                           session key); upgrade the Spark peers to 3.1.3 or later";

/// `spark.network.crypto.keyFactoryAlgorithm`: the PBKDF2 pseudo-random function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Kdf {
    /// `PBKDF2WithHmacSHA1`, Spark's default.
    #[default]
    Sha1,
    /// `PBKDF2WithHmacSHA224`.
    Sha224,
    /// `PBKDF2WithHmacSHA256`.
    Sha256,
    /// `PBKDF2WithHmacSHA384`.
    Sha384,
    /// `PBKDF2WithHmacSHA512`.
    Sha512,
}

impl Kdf {
    /// The name Java's `SecretKeyFactory` knows it by (what goes on the wire).
    pub fn name(self) -> &'static str {
        match self {
            Kdf::Sha1 => "PBKDF2WithHmacSHA1",
            Kdf::Sha224 => "PBKDF2WithHmacSHA224",
            Kdf::Sha256 => "PBKDF2WithHmacSHA256",
            Kdf::Sha384 => "PBKDF2WithHmacSHA384",
            Kdf::Sha512 => "PBKDF2WithHmacSHA512",
        }
    }

    /// The kdf a name names (Java's algorithm names compare ignoring case).
    pub fn from_name(name: &str) -> Option<Kdf> {
        [
            Kdf::Sha1,
            Kdf::Sha224,
            Kdf::Sha256,
            Kdf::Sha384,
            Kdf::Sha512,
        ]
        .into_iter()
        .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    fn derive(self, secret: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
        match self {
            Kdf::Sha1 => pbkdf2::pbkdf2_hmac::<Sha1>(secret, salt, iterations, out),
            Kdf::Sha224 => pbkdf2::pbkdf2_hmac::<Sha224>(secret, salt, iterations, out),
            Kdf::Sha256 => pbkdf2::pbkdf2_hmac::<Sha256>(secret, salt, iterations, out),
            Kdf::Sha384 => pbkdf2::pbkdf2_hmac::<Sha384>(secret, salt, iterations, out),
            Kdf::Sha512 => pbkdf2::pbkdf2_hmac::<Sha512>(secret, salt, iterations, out),
        }
    }
}

/// The parameters a client chooses (Spark's `spark.network.crypto.keyFactoryAlgorithm`,
/// `…keyFactoryIterations`, `…keyLength`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyParams {
    /// The PBKDF2 function.
    pub kdf: Kdf,
    /// PBKDF2 iterations, 1 to [`MAX_ITERATIONS`].
    pub iterations: u32,
    /// Key length in bits: 128, 192 or 256.
    pub key_bits: u32,
}

impl Default for LegacyParams {
    /// Spark 3.0's defaults.
    fn default() -> Self {
        LegacyParams {
            kdf: Kdf::Sha1,
            iterations: 1024,
            key_bits: 128,
        }
    }
}

impl LegacyParams {
    fn check(&self) -> Result<(), AuthError> {
        if !(1..=MAX_ITERATIONS).contains(&self.iterations) {
            return Err(AuthError::Unsupported(format!(
                "{} PBKDF2 iterations (1 to {MAX_ITERATIONS} are taken)",
                self.iterations
            )));
        }
        if ![128, 192, 256].contains(&self.key_bits) {
            return Err(AuthError::Unsupported(format!(
                "an AES key of {} bits (128, 192 or 256)",
                self.key_bits
            )));
        }
        Ok(())
    }

    fn key(&self, secret: &[u8], salt: &[u8]) -> Vec<u8> {
        let mut k = vec![0u8; (self.key_bits / 8) as usize];
        self.kdf.derive(secret, salt, self.iterations, &mut k);
        k
    }
}

/// A `ClientChallenge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientChallenge {
    /// The app id (`sparkSaslUser` in a standalone cluster).
    pub app_id: String,
    /// The PBKDF2 function's Java name.
    pub kdf: String,
    /// PBKDF2 iterations.
    pub iterations: i32,
    /// The cipher's Java transformation.
    pub cipher: String,
    /// Key length in bits.
    pub key_length: i32,
    /// The salt of the auth key.
    pub nonce: Vec<u8>,
    /// `E(appId ‖ nonce ‖ c)`.
    pub challenge: Vec<u8>,
}

impl ClientChallenge {
    /// The bytes of the message (an `RpcRequest`'s body).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            33 + self.app_id.len()
                + self.kdf.len()
                + self.cipher.len()
                + self.nonce.len()
                + self.challenge.len(),
        );
        out.push(CHALLENGE_TAG);
        put_bytes(&mut out, self.app_id.as_bytes());
        put_bytes(&mut out, self.kdf.as_bytes());
        out.extend_from_slice(&self.iterations.to_be_bytes());
        put_bytes(&mut out, self.cipher.as_bytes());
        out.extend_from_slice(&self.key_length.to_be_bytes());
        put_bytes(&mut out, &self.nonce);
        put_bytes(&mut out, &self.challenge);
        out
    }

    /// Reads a challenge; [`AuthError::Malformed`] if it is not one.
    pub fn decode(b: &[u8]) -> Result<ClientChallenge, AuthError> {
        let mut r = Reader(b);
        if r.u8()? != CHALLENGE_TAG {
            return Err(AuthError::Malformed(
                "not a ClientChallenge (tag 0xFA)".into(),
            ));
        }
        let text = |r: &mut Reader<'_>, what: &str| -> Result<String, AuthError> {
            String::from_utf8(r.bytes()?.to_vec()).map_err(|_| {
                AuthError::Malformed(format!("a ClientChallenge's {what} is not UTF-8"))
            })
        };
        let int = |r: &mut Reader<'_>| -> Result<i32, AuthError> {
            let b = r.take(4)?;
            Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let app_id = text(&mut r, "app id")?;
        let kdf = text(&mut r, "kdf")?;
        let iterations = int(&mut r)?;
        let cipher = text(&mut r, "cipher")?;
        let key_length = int(&mut r)?;
        let nonce = r.bytes()?.to_vec();
        let challenge = r.bytes()?.to_vec();
        if !r.0.is_empty() {
            return Err(AuthError::Malformed(format!(
                "{} bytes after a ClientChallenge",
                r.0.len()
            )));
        }
        Ok(ClientChallenge {
            app_id,
            kdf,
            iterations,
            cipher,
            key_length,
            nonce,
            challenge,
        })
    }
}

/// A `ServerResponse`: each field encrypted with the auth key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerResponse {
    /// `E(appId ‖ nonce ‖ c + 1)`.
    pub response: Vec<u8>,
    /// `E(sessionNonce)`.
    pub nonce: Vec<u8>,
    /// `E(the IV the server sends with)`: what the client reads with.
    pub input_iv: Vec<u8>,
    /// `E(the IV the server reads with)`: what the client sends with.
    pub output_iv: Vec<u8>,
}

impl ServerResponse {
    /// The bytes of the message (an `RpcResponse`'s body).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            17 + self.response.len() + self.nonce.len() + self.input_iv.len() + 16,
        );
        out.push(RESPONSE_TAG);
        put_bytes(&mut out, &self.response);
        put_bytes(&mut out, &self.nonce);
        put_bytes(&mut out, &self.input_iv);
        put_bytes(&mut out, &self.output_iv);
        out
    }

    /// Reads a response; [`AuthError::Malformed`] if it is not one.
    pub fn decode(b: &[u8]) -> Result<ServerResponse, AuthError> {
        let mut r = Reader(b);
        if r.u8()? != RESPONSE_TAG {
            return Err(AuthError::Malformed(
                "not a ServerResponse (tag 0xFB)".into(),
            ));
        }
        let response = r.bytes()?.to_vec();
        let nonce = r.bytes()?.to_vec();
        let input_iv = r.bytes()?.to_vec();
        let output_iv = r.bytes()?.to_vec();
        if !r.0.is_empty() {
            return Err(AuthError::Malformed(format!(
                "{} bytes after a ServerResponse",
                r.0.len()
            )));
        }
        Ok(ServerResponse {
            response,
            nonce,
            input_iv,
            output_iv,
        })
    }
}

/// Java's `new BigInteger(c).add(ONE).toByteArray()`: `c` read as a big-endian two's-complement
/// integer, plus one, written in the fewest bytes that keep its sign (at least one). `None` for
/// an empty `c` (which Java refuses).
pub fn raw_response(c: &[u8]) -> Option<Vec<u8>> {
    let first = *c.first()?;
    // Sign-extended by one byte, the sum always fits.
    let mut n = Vec::with_capacity(c.len() + 1);
    n.push(if first & 0x80 != 0 { 0xFF } else { 0x00 });
    n.extend_from_slice(c);
    for b in n.iter_mut().rev() {
        let (v, carry) = b.overflowing_add(1);
        *b = v;
        if !carry {
            break;
        }
    }
    let mut start = 0;
    while start + 1 < n.len() {
        let (b, next) = (n[start], n[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    Some(n.split_off(start))
}

/// The auth key's two AES-CTR streams: one that encrypts, one that decrypts, both from the
/// nonce's IV.
struct AuthCipher {
    enc: CtrStream,
    dec: CtrStream,
}

impl AuthCipher {
    fn new(key: &[u8], nonce: &[u8]) -> Result<Self, AuthError> {
        let mut iv = [0u8; 16];
        let n = nonce.len().min(16);
        iv[..n].copy_from_slice(&nonce[..n]);
        Ok(AuthCipher {
            enc: CtrStream::new(key, &iv)?,
            dec: CtrStream::new(key, &iv)?,
        })
    }

    fn encrypt(&mut self, data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        self.enc.apply(&mut v);
        v
    }

    fn decrypt(&mut self, data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        self.dec.apply(&mut v);
        v
    }
}

/// Checks that `plain` is `appId ‖ nonce ‖ rest` and gives `rest`.
fn unwrap_proof<'a>(
    plain: &'a [u8],
    app_id: &[u8],
    nonce: &[u8],
    whose: &str,
) -> Result<&'a [u8], AuthError> {
    let head = app_id.len() + nonce.len();
    if plain.len() < head || plain[..app_id.len()] != *app_id || plain[app_id.len()..head] != *nonce
    {
        return Err(AuthError::Rejected(format!(
            "the {whose} does not decrypt to the app id and nonce: the peer does not hold the \
             secret"
        )));
    }
    Ok(&plain[head..])
}

fn iv16(b: Vec<u8>, what: &str) -> Result<[u8; 16], AuthError> {
    b.try_into()
        .map_err(|b: Vec<u8>| AuthError::Malformed(format!("{what} of {} bytes, not 16", b.len())))
}

/// The client's side of one exchange (what a Spark 3.0 client with crypto on runs).
pub struct LegacyClient {
    secret: Vec<u8>,
    app_id: String,
    params: LegacyParams,
    raw: Vec<u8>,
    auth: AuthCipher,
    message: ClientChallenge,
}

impl std::fmt::Debug for LegacyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyClient")
            .field("app_id", &self.app_id)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl LegacyClient {
    /// A client of app `app_id` holding `secret`, with Spark 3.0's default parameters.
    pub fn new(app_id: &str, secret: &str) -> Result<Self, AuthError> {
        LegacyClient::with_params(app_id, secret, LegacyParams::default())
    }

    /// A client with the parameters `params`.
    pub fn with_params(
        app_id: &str,
        secret: &str,
        params: LegacyParams,
    ) -> Result<Self, AuthError> {
        params.check()?;
        let len = (params.key_bits / 8) as usize;
        let nonce = random_bytes::<32>()?[..len].to_vec();
        let raw = random_bytes::<32>()?[..len].to_vec();
        let key = params.key(secret.as_bytes(), &nonce);
        let mut auth = AuthCipher::new(&key, &nonce)?;
        let challenge = auth.encrypt(&[app_id.as_bytes(), &nonce, &raw].concat());
        let message = ClientChallenge {
            app_id: app_id.to_string(),
            kdf: params.kdf.name().to_string(),
            iterations: params.iterations as i32,
            cipher: CIPHER.to_string(),
            key_length: params.key_bits as i32,
            nonce,
            challenge,
        };
        Ok(LegacyClient {
            secret: secret.as_bytes().to_vec(),
            app_id: app_id.to_string(),
            params,
            raw,
            auth,
            message,
        })
    }

    /// The challenge to send.
    pub fn challenge(&self) -> &ClientChallenge {
        &self.message
    }

    /// The session, given the server's response: [`AuthError::Rejected`] when the server does
    /// not prove the secret.
    pub fn finish(mut self, response: &ServerResponse) -> Result<SessionKeys, AuthError> {
        if response.response.len() > MAX_CHALLENGE || response.nonce.len() > MAX_NONCE {
            return Err(AuthError::Malformed(
                "a ServerResponse's fields are too long".into(),
            ));
        }
        let plain = self.auth.decrypt(&response.response);
        let got = unwrap_proof(
            &plain,
            self.app_id.as_bytes(),
            &self.message.nonce,
            "response",
        )?;
        let expected = raw_response(&self.raw)
            .ok_or_else(|| AuthError::Crypto("an empty challenge".into()))?;
        if got.len() != expected.len() || !bool::from(got.ct_eq(&expected)) {
            return Err(AuthError::Rejected(
                "the server's answer to the challenge is wrong: it does not hold the secret".into(),
            ));
        }
        let session_nonce = self.auth.decrypt(&response.nonce);
        if session_nonce.is_empty() {
            return Err(AuthError::Malformed("an empty session nonce".into()));
        }
        let recv = iv16(self.auth.decrypt(&response.input_iv), "an input IV")?;
        let send = iv16(self.auth.decrypt(&response.output_iv), "an output IV")?;
        Ok(SessionKeys {
            key: self.params.key(&self.secret, &session_nonce),
            client_iv: recv,
            server_iv: send,
        })
    }
}

/// The server's side: checks `challenge` against `secret` and answers it, with the session's
/// keys. [`AuthError::Rejected`] when the client does not hold the secret,
/// [`AuthError::Unsupported`] for parameters out of bounds.
pub fn respond(
    secret: &str,
    challenge: &ClientChallenge,
) -> Result<(ServerResponse, SessionKeys), AuthError> {
    let kdf = Kdf::from_name(&challenge.kdf)
        .ok_or_else(|| AuthError::Unsupported(format!("the key factory {:?}", challenge.kdf)))?;
    if !challenge.cipher.eq_ignore_ascii_case(CIPHER) {
        return Err(AuthError::Unsupported(format!(
            "the cipher {:?} (only {CIPHER})",
            challenge.cipher
        )));
    }
    let params = LegacyParams {
        kdf,
        iterations: u32::try_from(challenge.iterations).unwrap_or(0),
        key_bits: u32::try_from(challenge.key_length).unwrap_or(0),
    };
    params.check()?;
    if challenge.app_id.len() > MAX_APP_ID {
        return Err(AuthError::Malformed(format!(
            "an app id of {} bytes (at most {MAX_APP_ID})",
            challenge.app_id.len()
        )));
    }
    if challenge.nonce.is_empty() || challenge.nonce.len() > MAX_NONCE {
        return Err(AuthError::Malformed(format!(
            "a nonce of {} bytes (1 to {MAX_NONCE})",
            challenge.nonce.len()
        )));
    }
    if challenge.challenge.len() > MAX_CHALLENGE {
        return Err(AuthError::Malformed(format!(
            "a challenge of {} bytes (at most {MAX_CHALLENGE})",
            challenge.challenge.len()
        )));
    }
    let secret = secret.as_bytes();
    let key = params.key(secret, &challenge.nonce);
    let mut auth = AuthCipher::new(&key, &challenge.nonce)?;
    let app_id = challenge.app_id.as_bytes();
    let plain = auth.decrypt(&challenge.challenge);
    let c = unwrap_proof(&plain, app_id, &challenge.nonce, "challenge")?;
    let r = raw_response(c)
        .ok_or_else(|| AuthError::Malformed("a challenge with no random part".into()))?;
    let response = auth.encrypt(&[app_id, &challenge.nonce, &r].concat());
    let session_nonce = random_bytes::<16>()?;
    let server_recv = random_bytes::<16>()?;
    let server_send = random_bytes::<16>()?;
    let answer = ServerResponse {
        response,
        nonce: auth.encrypt(&session_nonce),
        input_iv: auth.encrypt(&server_send),
        output_iv: auth.encrypt(&server_recv),
    };
    Ok((
        answer,
        SessionKeys {
            key: params.key(secret, &session_nonce),
            client_iv: server_send,
            server_iv: server_recv,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spark::auth::CtrSession;

    #[test]
    fn raw_response_is_java_s_biginteger_plus_one_in_its_shortest_form() {
        // Plain increments keep the length.
        assert_eq!(raw_response(&[0x12, 0x34]), Some(vec![0x12, 0x35]));
        assert_eq!(raw_response(&[0x12, 0xFF]), Some(vec![0x13, 0x00]));
        // The largest positive value grows a sign byte.
        assert_eq!(raw_response(&[0x7F, 0xFF]), Some(vec![0x00, 0x80, 0x00]));
        // -1 + 1 = 0, one byte.
        assert_eq!(raw_response(&[0xFF, 0xFF, 0xFF]), Some(vec![0x00]));
        // Leading zeros are dropped, a negative number's redundant 0xFF bytes too.
        assert_eq!(raw_response(&[0x00, 0x00, 0x05]), Some(vec![0x06]));
        assert_eq!(raw_response(&[0xFF, 0xFF, 0x80]), Some(vec![0x81]));
        // -32769 + 1 = -32768: 0x8000.
        assert_eq!(raw_response(&[0xFF, 0x7F, 0xFF]), Some(vec![0x80, 0x00]));
        assert_eq!(raw_response(&[0x80]), Some(vec![0x81]));
        assert_eq!(raw_response(&[]), None);
    }

    #[test]
    fn pbkdf2_hmac_sha1_matches_rfc_6070() {
        let mut out = [0u8; 20];
        Kdf::Sha1.derive(b"password", b"salt", 2, &mut out);
        assert_eq!(
            out,
            [
                0xea, 0x6c, 0x01, 0x4d, 0xc7, 0x2d, 0x6f, 0x8c, 0xcd, 0x1e, 0xd9, 0x2a, 0xce, 0x1d,
                0x41, 0xf0, 0xd8, 0xde, 0x89, 0x57
            ]
        );
    }

    #[test]
    fn a_challenge_is_spark_s_encoding_and_reads_back() {
        let c = LegacyClient::new("sparkSaslUser", "s3cret").expect("client");
        let m = c.challenge();
        let b = m.encode();
        assert_eq!(b[0], 0xFA);
        assert_eq!(&b[1..5], &13u32.to_be_bytes());
        assert_eq!(&b[5..18], b"sparkSaslUser");
        assert_eq!(&b[18..22], &18u32.to_be_bytes());
        assert_eq!(&b[22..40], b"PBKDF2WithHmacSHA1");
        assert_eq!(&b[40..44], &1024i32.to_be_bytes());
        assert_eq!(&b[44..48], &17u32.to_be_bytes());
        assert_eq!(&b[48..65], b"AES/CTR/NoPadding");
        assert_eq!(&b[65..69], &128i32.to_be_bytes());
        assert_eq!(&b[69..73], &16u32.to_be_bytes());
        assert_eq!(m.nonce.len(), 16);
        // appId ‖ nonce ‖ 16 random bytes, encrypted.
        assert_eq!(m.challenge.len(), 13 + 16 + 16);
        assert_eq!(b.len(), 73 + 16 + 4 + 45);
        assert_eq!(ClientChallenge::decode(&b).expect("decode"), *m);
    }

    fn session_works(client: &SessionKeys, server: &SessionKeys) {
        let mut c = CtrSession::client(client).expect("client session");
        let mut s = CtrSession::server(server).expect("server session");
        let mut up = b"RegisterWorker".to_vec();
        c.send.apply(&mut up);
        assert_ne!(&up, b"RegisterWorker");
        s.recv.apply(&mut up);
        assert_eq!(&up, b"RegisterWorker");
        let mut down = b"RegisteredWorker".to_vec();
        s.send.apply(&mut down);
        c.recv.apply(&mut down);
        assert_eq!(&down, b"RegisteredWorker");
    }

    #[test]
    fn client_and_server_with_one_secret_agree_on_a_session_for_every_kdf_and_key_length() {
        for kdf in [
            Kdf::Sha1,
            Kdf::Sha224,
            Kdf::Sha256,
            Kdf::Sha384,
            Kdf::Sha512,
        ] {
            for key_bits in [128, 192, 256] {
                let params = LegacyParams {
                    kdf,
                    iterations: 3,
                    key_bits,
                };
                let c =
                    LegacyClient::with_params("sparkSaslUser", "s3cret", params).expect("client");
                let wire = c.challenge().encode();
                let (answer, server) =
                    respond("s3cret", &ClientChallenge::decode(&wire).expect("decode"))
                        .expect("server takes it");
                let answer = ServerResponse::decode(&answer.encode()).expect("decode");
                let client = c.finish(&answer).expect("client takes the answer");
                assert_eq!(client, server);
                assert_eq!(client.key.len(), key_bits as usize / 8);
                session_works(&client, &server);
            }
        }
    }

    #[test]
    fn a_wrong_secret_is_rejected_by_either_side() {
        let c = LegacyClient::new("sparkSaslUser", "right").expect("client");
        let e = respond("wrong", c.challenge()).expect_err("server refuses");
        assert!(matches!(e, AuthError::Rejected(_)), "{e}");
        // A server with another secret that answered anyway: the client refuses its answer.
        let other = LegacyClient::new("sparkSaslUser", "wrong").expect("client");
        let (answer, _) = respond("wrong", other.challenge()).expect("answer");
        let e = c.finish(&answer).expect_err("client refuses");
        assert!(matches!(e, AuthError::Rejected(_)), "{e}");
    }

    #[test]
    fn a_replayed_answer_to_another_challenge_is_rejected() {
        let a = LegacyClient::new("sparkSaslUser", "s3cret").expect("a");
        let b = LegacyClient::new("sparkSaslUser", "s3cret").expect("b");
        let (answer_to_a, _) = respond("s3cret", a.challenge()).expect("answer");
        let e = b.finish(&answer_to_a).expect_err("b refuses a's answer");
        assert!(matches!(e, AuthError::Rejected(_)), "{e}");
    }

    #[test]
    fn a_tampered_answer_is_rejected() {
        let c = LegacyClient::new("sparkSaslUser", "s3cret").expect("client");
        let (mut answer, _) = respond("s3cret", c.challenge()).expect("answer");
        let last = answer.response.len() - 1;
        answer.response[last] ^= 1;
        let e = c.finish(&answer).expect_err("refused");
        assert!(matches!(e, AuthError::Rejected(_)), "{e}");
    }

    #[test]
    fn parameters_out_of_bounds_are_refused_with_typed_errors() {
        let c = LegacyClient::new("sparkSaslUser", "s3cret").expect("client");
        let base = c.challenge().clone();
        let cases: Vec<(ClientChallenge, &str)> = vec![
            (
                ClientChallenge {
                    iterations: MAX_ITERATIONS as i32 + 1,
                    ..base.clone()
                },
                "unsupported",
            ),
            (
                ClientChallenge {
                    iterations: -1,
                    ..base.clone()
                },
                "unsupported",
            ),
            (
                ClientChallenge {
                    key_length: 100,
                    ..base.clone()
                },
                "unsupported",
            ),
            (
                ClientChallenge {
                    kdf: "PBKDF2WithHmacMD5".into(),
                    ..base.clone()
                },
                "unsupported",
            ),
            (
                ClientChallenge {
                    cipher: "AES/CBC/PKCS5Padding".into(),
                    ..base.clone()
                },
                "unsupported",
            ),
            (
                ClientChallenge {
                    nonce: Vec::new(),
                    ..base.clone()
                },
                "malformed",
            ),
            (
                ClientChallenge {
                    nonce: vec![0; MAX_NONCE + 1],
                    ..base.clone()
                },
                "malformed",
            ),
            (
                ClientChallenge {
                    app_id: "x".repeat(MAX_APP_ID + 1),
                    ..base.clone()
                },
                "malformed",
            ),
            (
                ClientChallenge {
                    challenge: vec![0; MAX_CHALLENGE + 1],
                    ..base.clone()
                },
                "malformed",
            ),
            (
                ClientChallenge {
                    challenge: Vec::new(),
                    ..base.clone()
                },
                "rejected",
            ),
        ];
        for (m, kind) in cases {
            let e = respond("s3cret", &m).expect_err("refused");
            let got = match e {
                AuthError::Unsupported(_) => "unsupported",
                AuthError::Malformed(_) => "malformed",
                AuthError::Rejected(_) => "rejected",
                ref other => panic!("{other}"),
            };
            assert_eq!(got, kind, "{e}");
        }
        // The right secret but no random part after appId ‖ nonce: refused, not a panic.
        let key = LegacyParams::default().key(b"s3cret", &base.nonce);
        let mut auth = AuthCipher::new(&key, &base.nonce).expect("cipher");
        let bare = auth.encrypt(&[b"sparkSaslUser".as_slice(), &base.nonce].concat());
        let e = respond(
            "s3cret",
            &ClientChallenge {
                challenge: bare,
                ..base
            },
        )
        .expect_err("refused");
        assert!(matches!(e, AuthError::Malformed(_)), "{e}");
    }

    #[test]
    fn truncated_or_padded_messages_are_malformed_never_a_panic() {
        let c = LegacyClient::new("sparkSaslUser", "s3cret").expect("client");
        let b = c.challenge().encode();
        for n in 0..b.len() {
            assert!(matches!(
                ClientChallenge::decode(&b[..n]),
                Err(AuthError::Malformed(_))
            ));
        }
        let mut long = b.clone();
        long.push(0);
        assert!(matches!(
            ClientChallenge::decode(&long),
            Err(AuthError::Malformed(_))
        ));
        let mut negative = b.clone();
        negative[1..5].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            ClientChallenge::decode(&negative),
            Err(AuthError::Malformed(_))
        ));
        let (answer, _) = respond("s3cret", c.challenge()).expect("answer");
        let a = answer.encode();
        for n in 0..a.len() {
            assert!(matches!(
                ServerResponse::decode(&a[..n]),
                Err(AuthError::Malformed(_))
            ));
        }
        // An IV of the wrong length is typed, not a panic.
        let c = LegacyClient::new("sparkSaslUser", "s3cret").expect("client");
        let (mut answer, _) = respond("s3cret", c.challenge()).expect("answer");
        answer.output_iv.pop();
        assert!(matches!(c.finish(&answer), Err(AuthError::Malformed(_))));
    }
}
