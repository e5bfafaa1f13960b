//! The protocol versions a case offers.

use crate::harness::env::Ctx;
use sparkwire::messages::Version;

/// The version to speak: 2 unless the master offers only 1.
pub fn highest(ctx: &Ctx) -> Version {
    match ctx.log.endpoint_versions() {
        Some(p) if !p.contains(&2) => Version::V1,
        _ => Version::V2,
    }
}
