//! Frame-size limits: how large a frame a connection accepts and sends, and which setting says so.
//!
//! The limit counts the frame's body, the `N` bytes after the 4-byte length prefix. After the
//! handshake it is [`ConnectionConfig::max_frame_size`](crate::connection::ConnectionConfig), the
//! counterpart of Spark's `spark.rpc.message.maxSize` (128 MiB by default). Before the handshake
//! it is fixed at [`HANDSHAKE_FRAME_LIMIT`] (64 KiB).

use std::fmt;

/// Spark's setting for the largest RPC message.
pub const SPARK_MAX_SIZE_KEY: &str = "spark.rpc.message.maxSize";

/// The sparkwire setting that plays the part of `spark.rpc.message.maxSize`.
pub const MAX_FRAME_SIZE_FIELD: &str = "ConnectionConfig::max_frame_size";

/// The default largest frame body: 128 MiB, Spark's default `spark.rpc.message.maxSize`.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 128 * 1024 * 1024;

/// The largest frame body accepted before the handshake completes: 64 KiB.
pub const HANDSHAKE_FRAME_LIMIT: usize = 64 * 1024;

/// The most a decoder reserves ahead of the bytes it has received, so that a peer that declares a
/// large frame and then trickles it makes the buffer grow only as fast as bytes really arrive.
pub const READ_CHUNK: usize = 64 * 1024;

/// Which setting controls a limit: told in every oversized-frame error so that a person knows what
/// to raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitSetting {
    /// The limit after the handshake: `spark.rpc.message.maxSize`, sparkwire's
    /// [`MAX_FRAME_SIZE_FIELD`].
    MessageMaxSize,
    /// The fixed limit before the handshake completes (protocol/handshake.md); no setting changes it.
    Handshake,
}

impl LimitSetting {
    /// Spark's name for the setting, if Spark has one.
    pub fn spark_key(self) -> Option<&'static str> {
        match self {
            LimitSetting::MessageMaxSize => Some(SPARK_MAX_SIZE_KEY),
            LimitSetting::Handshake => None,
        }
    }

    /// sparkwire's name for the setting, if it can be changed.
    pub fn config_field(self) -> Option<&'static str> {
        match self {
            LimitSetting::MessageMaxSize => Some(MAX_FRAME_SIZE_FIELD),
            LimitSetting::Handshake => None,
        }
    }
}

impl fmt::Display for LimitSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitSetting::MessageMaxSize => {
                write!(f, "{SPARK_MAX_SIZE_KEY} (sparkwire: {MAX_FRAME_SIZE_FIELD})")
            }
            LimitSetting::Handshake => write!(
                f,
                "the pre-handshake frame limit ({HANDSHAKE_FRAME_LIMIT} bytes, fixed by protocol/handshake.md)"
            ),
        }
    }
}

/// The largest frame body a codec accepts and sends, and the setting that controls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameLimit {
    max: usize,
    setting: LimitSetting,
}

impl FrameLimit {
    /// The limit before the handshake: [`HANDSHAKE_FRAME_LIMIT`].
    pub const HANDSHAKE: FrameLimit = FrameLimit {
        max: HANDSHAKE_FRAME_LIMIT,
        setting: LimitSetting::Handshake,
    };

    /// The default limit after the handshake: [`DEFAULT_MAX_FRAME_SIZE`].
    pub const DEFAULT: FrameLimit = FrameLimit {
        max: DEFAULT_MAX_FRAME_SIZE,
        setting: LimitSetting::MessageMaxSize,
    };

    /// A limit after the handshake of `max` bytes. A frame's length prefix has 4 bytes, so a limit
    /// above `u32::MAX` acts as `u32::MAX`.
    pub fn message(max: usize) -> FrameLimit {
        FrameLimit {
            max,
            setting: LimitSetting::MessageMaxSize,
        }
    }

    /// The largest frame body allowed, in bytes.
    pub fn max(self) -> usize {
        self.max
    }

    /// The largest body this limit lets through, capped by what a 4-byte length can say.
    pub fn effective_max(self) -> u64 {
        (self.max as u64).min(u64::from(u32::MAX))
    }

    /// The setting that controls the limit.
    pub fn setting(self) -> LimitSetting {
        self.setting
    }

    /// True when a body of `len` bytes is within the limit.
    pub fn allows(self, len: u64) -> bool {
        len <= self.effective_max()
    }
}

impl Default for FrameLimit {
    fn default() -> Self {
        FrameLimit::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limit_is_sparks_128_mib_and_names_its_settings() {
        let limit = FrameLimit::default();
        assert_eq!(limit.max(), 134_217_728);
        assert_eq!(
            limit.setting().spark_key(),
            Some("spark.rpc.message.maxSize")
        );
        assert_eq!(
            limit.setting().config_field(),
            Some("ConnectionConfig::max_frame_size")
        );
        assert!(limit.allows(134_217_728));
        assert!(!limit.allows(134_217_729));
    }

    #[test]
    fn limits_above_four_gib_act_as_the_largest_length_prefix() {
        let limit = FrameLimit::message(usize::MAX);
        assert_eq!(limit.effective_max(), u64::from(u32::MAX));
        assert!(!limit.allows(u64::from(u32::MAX) + 1));
    }

    #[test]
    fn handshake_limit_is_64_kib_with_no_setting() {
        assert_eq!(FrameLimit::HANDSHAKE.max(), 65_536);
        assert_eq!(FrameLimit::HANDSHAKE.setting().spark_key(), None);
        assert!(FrameLimit::HANDSHAKE
            .setting()
            .to_string()
            .contains("pre-handshake"));
    }
}
