//! The server's answer: the version chosen, or a refusal with a reason.

use std::fmt;

use super::error::HandshakeError;
use super::map::{
    write_map, write_str_entry, write_strs_entry, write_uint_entry, write_uints_entry, Entries,
    MAGIC,
};
use super::role::Role;
use crate::messages::Version;

/// Why a server refused a hello. Each has a fixed name on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalReason {
    /// `badMagic`: the hello is not a sparkwire hello.
    BadMagic,
    /// `noCommonVersion`: none of the offered versions is one the server speaks.
    NoCommonVersion,
    /// `roleNotAccepted`: the server takes no connections from this role (unknown role, or a role
    /// of the other family).
    RoleNotAccepted,
    /// `malformedHello`: the hello has the magic value but a key is missing or mistyped.
    MalformedHello,
    /// `frameTooLarge`: the hello frame is over the 64 KiB pre-handshake limit.
    FrameTooLarge,
    /// `authRequired`: the server has a shared secret and the hello did not ask to authenticate
    /// (an older client, or one without the secret).
    AuthRequired,
    /// `authFailed`: the client's proof is not the one the server's secret gives.
    AuthFailed,
    /// `authNotConfigured`: the hello asked to authenticate and the server has no secret.
    AuthNotConfigured,
    /// `tooManyConnections`: the server holds as many connections as it takes; the client may
    /// try again later.
    TooManyConnections,
    /// A reason this side does not know, as received (a newer server may add reasons).
    Other(String),
}

impl RefusalReason {
    /// The reason's name on the wire.
    pub fn name(&self) -> &str {
        match self {
            RefusalReason::BadMagic => "badMagic",
            RefusalReason::NoCommonVersion => "noCommonVersion",
            RefusalReason::RoleNotAccepted => "roleNotAccepted",
            RefusalReason::MalformedHello => "malformedHello",
            RefusalReason::FrameTooLarge => "frameTooLarge",
            RefusalReason::AuthRequired => "authRequired",
            RefusalReason::AuthFailed => "authFailed",
            RefusalReason::AuthNotConfigured => "authNotConfigured",
            RefusalReason::TooManyConnections => "tooManyConnections",
            RefusalReason::Other(name) => name,
        }
    }

    /// The reason named `name`; unknown names become [`RefusalReason::Other`].
    pub fn from_name(name: &str) -> RefusalReason {
        match name {
            "badMagic" => RefusalReason::BadMagic,
            "noCommonVersion" => RefusalReason::NoCommonVersion,
            "roleNotAccepted" => RefusalReason::RoleNotAccepted,
            "malformedHello" => RefusalReason::MalformedHello,
            "frameTooLarge" => RefusalReason::FrameTooLarge,
            "authRequired" => RefusalReason::AuthRequired,
            "authFailed" => RefusalReason::AuthFailed,
            "authNotConfigured" => RefusalReason::AuthNotConfigured,
            "tooManyConnections" => RefusalReason::TooManyConnections,
            other => RefusalReason::Other(other.to_string()),
        }
    }
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A hello the server accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The version both sides use from now on.
    pub version: Version,
    /// Version numbers the server speaks.
    pub versions: Vec<u64>,
    /// The server's role.
    pub role: Role,
    /// The server's id.
    pub id: String,
    /// The features of the hello's that the server takes (the `features` key,
    /// protocol/handshake.md §12); not written when empty.
    pub features: Vec<String>,
}

/// A hello the server refused; it closes the connection after sending this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub reason: RefusalReason,
    /// An explanation for a person.
    pub message: String,
    /// Version numbers the server speaks.
    pub versions: Vec<u64>,
}

/// The server's first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The connection goes on in the chosen version.
    Accepted(Accepted),
    /// The connection closes.
    Refused(Refusal),
}

/// Appends the answer's frame body (the map, without the length prefix) to `out`.
pub fn encode_answer(answer: &Answer, out: &mut Vec<u8>) {
    match answer {
        Answer::Accepted(a) => {
            write_map(out, 5 + u32::from(!a.features.is_empty()));
            write_str_entry(out, "magic", MAGIC);
            write_uint_entry(out, "version", u64::from(a.version.number()));
            write_uints_entry(out, "versions", &a.versions);
            write_str_entry(out, "role", a.role.name());
            write_str_entry(out, "id", &a.id);
            if !a.features.is_empty() {
                write_strs_entry(out, "features", &a.features);
            }
        }
        Answer::Refused(r) => {
            write_map(out, 4);
            write_str_entry(out, "magic", MAGIC);
            write_str_entry(out, "refused", r.reason.name());
            write_str_entry(out, "message", &r.message);
            write_uints_entry(out, "versions", &r.versions);
        }
    }
}

/// Reads an answer from a frame body. Unknown keys are ignored.
///
/// Exactly one of `version` and `refused` must be present. An accepted answer must name a version
/// and a role this side knows.
pub fn decode_answer(body: &[u8]) -> Result<Answer, HandshakeError> {
    let entries = Entries::parse(body)?;
    match (entries.has("version"), entries.has("refused")) {
        (true, false) => {
            let number = entries.uint("version")?;
            let version = Version::from_number(number).ok_or_else(|| {
                HandshakeError::Malformed(format!(
                    "the server chose version {number}, which this side does not know"
                ))
            })?;
            let role_name = entries.str("role")?;
            let role = Role::from_name(role_name).ok_or_else(|| {
                HandshakeError::Malformed(format!(
                    "the server declares the unknown role {role_name:?}"
                ))
            })?;
            Ok(Answer::Accepted(Accepted {
                version,
                versions: entries.uints("versions")?,
                role,
                id: entries.str("id")?.to_string(),
                features: entries.strs("features")?,
            }))
        }
        (false, true) => Ok(Answer::Refused(Refusal {
            reason: RefusalReason::from_name(entries.str("refused")?),
            message: entries.str("message")?.to_string(),
            versions: entries.uints("versions")?,
        })),
        (true, true) => Err(HandshakeError::Malformed(
            "an answer has either \"version\" or \"refused\", not both".to_string(),
        )),
        (false, false) => Err(HandshakeError::Malformed(
            "an answer needs \"version\" or \"refused\"".to_string(),
        )),
    }
}

/// The version to use: the highest of `supported` whose number is among `offered`.
pub fn negotiate(offered: &[u64], supported: &[Version]) -> Option<Version> {
    supported
        .iter()
        .copied()
        .filter(|v| offered.contains(&u64::from(v.number())))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiate_picks_the_highest_common_version() {
        assert_eq!(negotiate(&[1, 2], &Version::ALL), Some(Version::V2));
        assert_eq!(negotiate(&[2, 1], &[Version::V1]), Some(Version::V1));
        assert_eq!(negotiate(&[1, 3, 7], &Version::ALL), Some(Version::V1));
        assert_eq!(negotiate(&[3], &Version::ALL), None);
        assert_eq!(negotiate(&[], &Version::ALL), None);
        assert_eq!(negotiate(&[1], &[Version::V2]), None);
    }

    #[test]
    fn answers_round_trip_both_forms() {
        let accepted = Answer::Accepted(Accepted {
            version: Version::V2,
            versions: vec![1, 2],
            role: Role::Master,
            id: "master-1".to_string(),
            features: vec![],
        });
        let refused = Answer::Refused(Refusal {
            reason: RefusalReason::NoCommonVersion,
            message: "speaks 2 only".to_string(),
            versions: vec![2],
        });
        for answer in [accepted, refused] {
            let mut out = Vec::new();
            encode_answer(&answer, &mut out);
            assert_eq!(decode_answer(&out), Ok(answer));
        }
    }

    fn hex(text: &str) -> Vec<u8> {
        text.split_whitespace()
            .filter_map(|pair| u8::from_str_radix(pair, 16).ok())
            .collect()
    }

    #[test]
    fn answer_bytes_are_the_ones_protocol_handshake_md_shows() {
        let accepted = Answer::Accepted(Accepted {
            version: Version::V2,
            versions: vec![1, 2],
            role: Role::Master,
            id: "master".to_string(),
            features: vec![],
        });
        let mut out = Vec::new();
        encode_answer(&accepted, &mut out);
        assert_eq!(
            out,
            hex(
                "85 a5 6d 61 67 69 63 a9 73 70 61 72 6b 77 69 72 65 a7 76 65 72 73 69 6f 6e 02 \
                 a8 76 65 72 73 69 6f 6e 73 92 01 02 a4 72 6f 6c 65 a6 6d 61 73 74 65 72 \
                 a2 69 64 a6 6d 61 73 74 65 72"
            )
        );
        assert_eq!(out.len(), 0x3c);
        let refused = Answer::Refused(Refusal {
            reason: RefusalReason::NoCommonVersion,
            message: "no common version".to_string(),
            versions: vec![2],
        });
        let mut out = Vec::new();
        encode_answer(&refused, &mut out);
        assert_eq!(
            out,
            hex("84 a5 6d 61 67 69 63 a9 73 70 61 72 6b 77 69 72 65 a7 72 65 66 75 73 65 64 \
                 af 6e 6f 43 6f 6d 6d 6f 6e 56 65 72 73 69 6f 6e a7 6d 65 73 73 61 67 65 \
                 b1 6e 6f 20 63 6f 6d 6d 6f 6e 20 76 65 72 73 69 6f 6e a8 76 65 72 73 69 6f 6e 73 91 02")
        );
        assert_eq!(out.len(), 0x4e);
    }

    #[test]
    fn unknown_refusal_reasons_are_kept_by_name() {
        let answer = Answer::Refused(Refusal {
            reason: RefusalReason::Other("overloaded".to_string()),
            message: "try later".to_string(),
            versions: vec![],
        });
        let mut out = Vec::new();
        encode_answer(&answer, &mut out);
        assert_eq!(decode_answer(&out), Ok(answer));
        for known in [
            "badMagic",
            "noCommonVersion",
            "roleNotAccepted",
            "malformedHello",
            "frameTooLarge",
            "authRequired",
            "authFailed",
            "authNotConfigured",
            "tooManyConnections",
        ] {
            assert_eq!(RefusalReason::from_name(known).name(), known);
            assert!(!matches!(
                RefusalReason::from_name(known),
                RefusalReason::Other(_)
            ));
        }
    }

    #[test]
    fn answer_with_both_or_neither_outcome_or_an_unknown_version_is_malformed() {
        let mut both = Vec::new();
        write_map(&mut both, 3);
        write_str_entry(&mut both, "magic", MAGIC);
        write_uint_entry(&mut both, "version", 1);
        write_str_entry(&mut both, "refused", "badMagic");
        assert!(matches!(
            decode_answer(&both),
            Err(HandshakeError::Malformed(_))
        ));

        let mut neither = Vec::new();
        write_map(&mut neither, 1);
        write_str_entry(&mut neither, "magic", MAGIC);
        assert!(matches!(
            decode_answer(&neither),
            Err(HandshakeError::Malformed(_))
        ));

        let mut future = Vec::new();
        write_map(&mut future, 5);
        write_str_entry(&mut future, "magic", MAGIC);
        write_uint_entry(&mut future, "version", 3);
        write_uints_entry(&mut future, "versions", &[3]);
        write_str_entry(&mut future, "role", "master");
        write_str_entry(&mut future, "id", "");
        assert!(matches!(
            decode_answer(&future),
            Err(HandshakeError::Malformed(_))
        ));
    }
}
