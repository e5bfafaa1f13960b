//! Spark's SASL bootstrap (`org.apache.spark.network.sasl`): the `SaslMessage` that carries each
//! client token in an `RpcRequest`, and the DIGEST-MD5 mechanism (RFC 2831) as Java's
//! `Sasl.createSaslClient` / `createSaslServer` speak it with Spark's settings.
//!
//! Spark's settings: mechanism `DIGEST-MD5`, server name (and realm) `default`, no protocol (so
//! the digest-uri is `null/default`), the user name the Base64 of the SASL user
//! (`sparkSaslUser` in a standalone cluster) and the password the Base64 of the secret, both as
//! UTF-8. The exchange is two round trips: the client's empty first token is answered with the
//! server's challenge (realm, nonce, qop, charset, algorithm), the client's digest-response with
//! `rspauth=…`. Both qualities of protection are spoken: `auth` (authentication only) and
//! `auth-conf` (`spark.authenticate.enableSaslEncryption`: the session is then sealed by
//! [`SaslPrivacy`] with the RC4 cipher the exchange chose).

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

use super::sasl_conf::{SaslCipher, SaslPrivacy};
use super::{random_bytes, AuthError, MAX_TOKEN};

/// The tag byte of a `SaslMessage`.
pub const SASL_TAG: u8 = 0xEA;

/// The realm and server name Spark gives both sides.
pub const REALM: &str = "default";

/// The digest-uri Spark's client sends: Java's `protocol + "/" + serverName` with no protocol.
pub const DIGEST_URI: &str = "null/default";

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard Base64 with padding (Netty's `Base64.encode` without line breaks for short input).
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A `SaslMessage`: tag `0xEA`, the app id (an `int32` length and UTF-8), the token's length
/// (an `int32` Spark writes and ignores) and the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslMessage {
    /// The app id the secret is looked up under (`sparkSaslUser` in a standalone cluster).
    pub app_id: String,
    /// The SASL token.
    pub token: Vec<u8>,
}

impl SaslMessage {
    /// The bytes of the message, the body of an `RpcRequest`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + self.app_id.len() + self.token.len());
        out.push(SASL_TAG);
        put_bytes(&mut out, self.app_id.as_bytes());
        out.extend_from_slice(&(self.token.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.token);
        out
    }

    /// Reads a message; the token is what follows the length field, as Spark reads it.
    pub fn decode(b: &[u8]) -> Result<SaslMessage, AuthError> {
        let mut r = Reader(b);
        if r.u8()? != SASL_TAG {
            return Err(AuthError::Malformed("not a SaslMessage (tag 0xEA)".into()));
        }
        let app_id = String::from_utf8(r.bytes()?.to_vec())
            .map_err(|_| AuthError::Malformed("a SaslMessage's app id is not UTF-8".into()))?;
        r.take(4)?;
        let token = r.0.to_vec();
        if token.len() > MAX_TOKEN {
            return Err(AuthError::Malformed(format!(
                "a SASL token of {} bytes (at most {MAX_TOKEN})",
                token.len()
            )));
        }
        Ok(SaslMessage { app_id, token })
    }
}

/// Spark's `Encoders.ByteArrays` / `Strings`: an `int32` length and the bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

/// A bounded reader of Spark's encodings.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], AuthError> {
        if self.0.len() < n {
            return Err(AuthError::Malformed("a message ends early".into()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, AuthError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], AuthError> {
        let n = self.take(4)?;
        let n = i32::from_be_bytes([n[0], n[1], n[2], n[3]]);
        let n = usize::try_from(n)
            .map_err(|_| AuthError::Malformed(format!("a negative length {n}")))?;
        self.take(n)
    }
}

/// The directives of a DIGEST-MD5 challenge or response (RFC 2831 §7.1: `name=value` or
/// `name="quoted"`, separated by commas), in order.
pub fn parse_directives(text: &[u8]) -> Result<Vec<(String, String)>, AuthError> {
    let bad = |why: &str| AuthError::Malformed(format!("a DIGEST-MD5 token: {why}"));
    let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8"))?;
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(c) if c.is_ascii_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_ascii_whitespace() {
                break;
            }
            name.push(c);
            chars.next();
        }
        while matches!(chars.peek(), Some(c) if c.is_ascii_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || name.is_empty() {
            return Err(bad("a directive without `=`"));
        }
        while matches!(chars.peek(), Some(c) if c.is_ascii_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(bad("an unterminated quoted string")),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(bad("an unterminated quoted string")),
                    },
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value.truncate(value.trim_end().len());
        }
        if out.len() >= 64 {
            return Err(bad("more than 64 directives"));
        }
        out.push((name.to_ascii_lowercase(), value));
    }
    Ok(out)
}

fn directive<'a>(ds: &'a [(String, String)], name: &str) -> Option<&'a str> {
    ds.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn once<'a>(ds: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, AuthError> {
    let mut it = ds.iter().filter(|(n, _)| n == name);
    let first = it.next().map(|(_, v)| v.as_str());
    if it.next().is_some() {
        return Err(AuthError::Malformed(format!(
            "a DIGEST-MD5 token repeats `{name}`"
        )));
    }
    Ok(first)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// What both ends of one DIGEST-MD5 exchange agree on.
struct Exchange<'a> {
    username: &'a str,
    realm: &'a str,
    password: &'a str,
    nonce: &'a str,
    cnonce: &'a str,
    nc: &'a str,
    qop: &'a str,
    digest_uri: &'a str,
    authzid: Option<&'a str>,
}

impl Exchange<'_> {
    /// `H(A1)`, binary: the session key the confidentiality layer's keys come from.
    fn session_key(&self) -> [u8; 16] {
        let mut inner = Md5::new();
        inner.update(self.username.as_bytes());
        inner.update(b":");
        inner.update(self.realm.as_bytes());
        inner.update(b":");
        inner.update(self.password.as_bytes());
        let mut a1 = Md5::new();
        a1.update(inner.finalize());
        a1.update(b":");
        a1.update(self.nonce.as_bytes());
        a1.update(b":");
        a1.update(self.cnonce.as_bytes());
        if let Some(z) = self.authzid {
            a1.update(b":");
            a1.update(z.as_bytes());
        }
        a1.finalize().into()
    }

    /// RFC 2831 §2.1.2.1: `response-value` (with `A2` = `AUTHENTICATE:digest-uri`) or, for the
    /// server's `rspauth`, the same with `A2` = `:digest-uri`.
    fn digest(&self, rspauth: bool) -> String {
        let ha1 = hex(&self.session_key());
        let mut a2 = Md5::new();
        if !rspauth {
            a2.update(b"AUTHENTICATE");
        }
        a2.update(b":");
        a2.update(self.digest_uri.as_bytes());
        if self.qop != "auth" {
            a2.update(b":00000000000000000000000000000000");
        }
        let ha2 = hex(&a2.finalize());
        let mut kd = Md5::new();
        for (i, part) in [
            ha1.as_str(),
            self.nonce,
            self.nc,
            self.cnonce,
            self.qop,
            ha2.as_str(),
        ]
        .iter()
        .enumerate()
        {
            if i > 0 {
                kd.update(b":");
            }
            kd.update(part.as_bytes());
        }
        hex(&kd.finalize())
    }
}

/// The state of a DIGEST-MD5 client (Spark's `SparkSaslClient`).
#[derive(Debug)]
pub struct DigestClient {
    username: String,
    password: String,
    encrypt: bool,
    state: ClientState,
    layer: Option<SaslPrivacy>,
}

#[derive(Debug)]
enum ClientState {
    Start,
    Sent {
        expected_rspauth: String,
        layer: Option<SaslPrivacy>,
    },
    Done,
}

impl DigestClient {
    /// A client of SASL user `user` (`sparkSaslUser`) holding `secret`.
    pub fn new(user: &str, secret: &str) -> Self {
        DigestClient {
            username: base64(user.as_bytes()),
            password: base64(secret.as_bytes()),
            encrypt: false,
            state: ClientState::Start,
            layer: None,
        }
    }

    /// A client that asks for quality of protection `auth-conf` only, as Spark's does with
    /// `spark.authenticate.enableSaslEncryption=true`: a server that does not offer it, or
    /// offers no cipher spoken here, is refused.
    pub fn encrypting(user: &str, secret: &str) -> Self {
        DigestClient {
            encrypt: true,
            ..DigestClient::new(user, secret)
        }
    }

    /// Once complete with `auth-conf`: the confidentiality layer the rest of the connection runs
    /// through (taken once).
    pub fn take_layer(&mut self) -> Option<SaslPrivacy> {
        self.layer.take()
    }

    /// The first token: DIGEST-MD5 has no initial response, so it is empty.
    pub fn first_token(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Whether the server has proven it holds the secret too.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, ClientState::Done)
    }

    /// The next token given the server's: the digest-response to the challenge; nothing after
    /// a correct `rspauth`.
    pub fn step(&mut self, server: &[u8]) -> Result<Option<Vec<u8>>, AuthError> {
        match std::mem::replace(&mut self.state, ClientState::Done) {
            ClientState::Start => {
                let (token, expected, layer) = self.respond(server)?;
                self.state = ClientState::Sent {
                    expected_rspauth: expected,
                    layer,
                };
                Ok(Some(token))
            }
            ClientState::Sent {
                expected_rspauth,
                layer,
            } => {
                let ds = parse_directives(server)?;
                let got = once(&ds, "rspauth")?
                    .ok_or_else(|| AuthError::Malformed("no rspauth from the server".into()))?;
                if !bool::from(got.as_bytes().ct_eq(expected_rspauth.as_bytes())) {
                    return Err(AuthError::Rejected(
                        "the server's rspauth is wrong: it does not hold the secret".into(),
                    ));
                }
                self.layer = layer;
                Ok(None)
            }
            ClientState::Done => Err(AuthError::Protocol(
                "a SASL token after the exchange completed".into(),
            )),
        }
    }

    #[allow(clippy::type_complexity)]
    fn respond(
        &self,
        challenge: &[u8],
    ) -> Result<(Vec<u8>, String, Option<SaslPrivacy>), AuthError> {
        let ds = parse_directives(challenge)?;
        let nonce = once(&ds, "nonce")?
            .ok_or_else(|| AuthError::Malformed("a challenge without a nonce".into()))?;
        match once(&ds, "algorithm")? {
            Some(a) if a.eq_ignore_ascii_case("md5-sess") => {}
            other => {
                return Err(AuthError::Malformed(format!(
                    "a challenge's algorithm is {other:?}, not md5-sess"
                )))
            }
        }
        let qops = once(&ds, "qop")?.unwrap_or("auth");
        let want = if self.encrypt { "auth-conf" } else { "auth" };
        if !qops.split(',').any(|q| q.trim() == want) {
            return Err(AuthError::Unsupported(format!(
                "the server offers qop {qops:?}, without `{want}`{}",
                if self.encrypt {
                    " (spark.authenticate.enableSaslEncryption asks for auth-conf)"
                } else {
                    " (spark.authenticate.enableSaslEncryption=false asks for auth)"
                }
            )));
        }
        let cipher = if self.encrypt {
            let offered = once(&ds, "cipher")?.unwrap_or("");
            Some(SaslCipher::strongest_of(offered).ok_or_else(|| {
                AuthError::Unsupported(format!(
                    "the server's SASL ciphers {offered:?} include no RC4 (rc4, rc4-56, rc4-40)"
                ))
            })?)
        } else {
            None
        };
        let realm = directive(&ds, "realm").unwrap_or(REALM).to_string();
        let utf8 = once(&ds, "charset")?.is_some_and(|c| c.eq_ignore_ascii_case("utf-8"));
        let cnonce = base64(&random_bytes::<32>()?);
        let ex = Exchange {
            username: &self.username,
            realm: &realm,
            password: &self.password,
            nonce,
            cnonce: &cnonce,
            nc: "00000001",
            qop: want,
            digest_uri: DIGEST_URI,
            authzid: None,
        };
        let mut t = String::new();
        if utf8 {
            t.push_str("charset=utf-8,");
        }
        t.push_str(&format!(
            "username={},realm={},nonce={},nc=00000001,cnonce={},digest-uri={},maxbuf=65536,response={},qop={want}",
            quote(&self.username),
            quote(&realm),
            quote(nonce),
            quote(&cnonce),
            quote(DIGEST_URI),
            ex.digest(false),
        ));
        if let Some(c) = cipher {
            t.push_str(&format!(",cipher={}", quote(c.token())));
        }
        let layer = cipher.map(|c| SaslPrivacy::new(&ex.session_key(), c, true));
        Ok((t.into_bytes(), ex.digest(true), layer))
    }
}

/// The state of a DIGEST-MD5 server (Spark's `SparkSaslServer`, without `alwaysEncrypt`).
#[derive(Debug)]
pub struct DigestServer {
    password: String,
    always_encrypt: bool,
    state: ServerState,
    layer: Option<SaslPrivacy>,
}

#[derive(Debug)]
enum ServerState {
    Start,
    Challenged { nonce: String },
    Done,
    Failed,
}

impl DigestServer {
    /// A server holding `secret`.
    pub fn new(secret: &str) -> Self {
        DigestServer {
            password: base64(secret.as_bytes()),
            always_encrypt: false,
            state: ServerState::Start,
            layer: None,
        }
    }

    /// A server that offers quality of protection `auth-conf` only, as Spark's does with
    /// `spark.network.sasl.serverAlwaysEncrypt=true` (without it, `auth-conf,auth`).
    pub fn always_encrypting(secret: &str) -> Self {
        DigestServer {
            always_encrypt: true,
            ..DigestServer::new(secret)
        }
    }

    /// Once complete with `auth-conf`: the confidentiality layer the rest of the connection runs
    /// through (taken once).
    pub fn take_layer(&mut self) -> Option<SaslPrivacy> {
        self.layer.take()
    }

    /// Whether the client has proven it holds the secret.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, ServerState::Done)
    }

    /// The server's token given the client's: the challenge for the first, `rspauth` for a
    /// correct digest-response, [`AuthError::Rejected`] for a wrong one.
    pub fn step(&mut self, client: &[u8]) -> Result<Vec<u8>, AuthError> {
        match std::mem::replace(&mut self.state, ServerState::Failed) {
            ServerState::Start => {
                let nonce = base64(&random_bytes::<32>()?);
                // As Java's server with Spark's settings: `auth-conf` first (preferred), and the
                // ciphers spoken here.
                let t = format!(
                    "realm={},nonce={},qop={},charset=utf-8,cipher={},algorithm=md5-sess",
                    quote(REALM),
                    quote(&nonce),
                    quote(if self.always_encrypt {
                        "auth-conf"
                    } else {
                        "auth-conf,auth"
                    }),
                    quote(SaslCipher::Rc4.token()),
                );
                self.state = ServerState::Challenged { nonce };
                Ok(t.into_bytes())
            }
            ServerState::Challenged { nonce } => {
                let t = self.verify(&nonce, client)?;
                self.state = ServerState::Done;
                Ok(t)
            }
            ServerState::Done | ServerState::Failed => Err(AuthError::Protocol(
                "a SASL token after the exchange ended".into(),
            )),
        }
    }

    fn verify(&mut self, nonce: &str, response: &[u8]) -> Result<Vec<u8>, AuthError> {
        let ds = parse_directives(response)?;
        let need = |name: &str| -> Result<&str, AuthError> {
            once(&ds, name)?
                .ok_or_else(|| AuthError::Malformed(format!("a digest-response without `{name}`")))
        };
        let username = need("username")?;
        let got_nonce = need("nonce")?;
        let cnonce = need("cnonce")?;
        let nc = need("nc")?;
        let digest_uri = need("digest-uri")?;
        let response = need("response")?;
        let qop = once(&ds, "qop")?.unwrap_or("auth");
        let realm = once(&ds, "realm")?.unwrap_or(REALM);
        let authzid = once(&ds, "authzid")?;
        if got_nonce != nonce {
            return Err(AuthError::Rejected(
                "the digest-response names another nonce".into(),
            ));
        }
        if nc != "00000001" {
            return Err(AuthError::Rejected(format!(
                "nonce-count {nc}, not 00000001"
            )));
        }
        let cipher = match qop {
            "auth" if !self.always_encrypt => None,
            "auth" => {
                return Err(AuthError::Rejected(
                    "qop auth, where spark.network.sasl.serverAlwaysEncrypt demands auth-conf"
                        .into(),
                ))
            }
            "auth-conf" => {
                let c = once(&ds, "cipher")?
                    .ok_or_else(|| AuthError::Malformed("qop auth-conf without a cipher".into()))?;
                Some(
                    SaslCipher::from_token(c)
                        .filter(|c| *c == SaslCipher::Rc4)
                        .ok_or_else(|| {
                            AuthError::Rejected(format!(
                                "cipher {c:?}, which was not offered (rc4)"
                            ))
                        })?,
                )
            }
            other => {
                return Err(AuthError::Unsupported(format!(
                    "qop {other:?} (auth and auth-conf are offered)"
                )))
            }
        };
        if realm != REALM {
            return Err(AuthError::Rejected(format!(
                "realm {realm:?}, not {REALM:?}"
            )));
        }
        if digest_uri.rsplit('/').next() != Some(REALM) {
            return Err(AuthError::Rejected(format!(
                "digest-uri {digest_uri:?} does not name server {REALM:?}"
            )));
        }
        if authzid.is_some_and(|z| z != username) {
            return Err(AuthError::Rejected(
                "the authorization id is not the authentication id".into(),
            ));
        }
        let ex = Exchange {
            username,
            realm,
            password: &self.password,
            nonce,
            cnonce,
            nc,
            qop,
            digest_uri,
            authzid,
        };
        let expected = ex.digest(false);
        if !bool::from(
            response
                .to_ascii_lowercase()
                .as_bytes()
                .ct_eq(expected.as_bytes()),
        ) {
            return Err(AuthError::Rejected(
                "the digest-response is wrong: the peer does not hold the secret".into(),
            ));
        }
        self.layer = cipher.map(|c| SaslPrivacy::new(&ex.session_key(), c, false));
        Ok(format!("rspauth={}", ex.digest(true)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("sparkSaslUser", "c3BhcmtTYXNsVXNlcg=="),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn rfc_2831_example_response_and_rspauth() {
        // RFC 2831 §4's example (IMAP, realm elwood.innosoft.com, user chris, password secret).
        let ex = Exchange {
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: "OA6MG9tEQGm2hh",
            cnonce: "OA6MHXh6VqTrRk",
            nc: "00000001",
            qop: "auth",
            digest_uri: "imap/elwood.innosoft.com",
            authzid: None,
        };
        assert_eq!(ex.digest(false), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(ex.digest(true), "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn directives_read_quoted_escaped_and_bare_values() {
        let ds = parse_directives(br#"realm="a\"b",nonce="x,y", qop=auth ,algorithm=md5-sess"#)
            .expect("parses");
        assert_eq!(directive(&ds, "realm"), Some("a\"b"));
        assert_eq!(directive(&ds, "nonce"), Some("x,y"));
        assert_eq!(directive(&ds, "qop"), Some("auth"));
        assert!(parse_directives(b"realm=\"open").is_err());
        assert!(parse_directives(b"novalue").is_err());
    }
}
