//! The long-form documents of the repository's `docs/` folder, as rustdoc: how to operate a
//! cluster, Spark interop, the Wireshark dissector, the conformance suite, the library's
//! reference driver, and contributing. Each module is one document, word for word; their Rust
//! examples are compiled and run as doctests. The README on the repository's front page links to
//! the same files. Paths they name (`protocol/SPEC.md`, `scripts/…`) are the repository's.

#[doc = include_str!("../docs/operating.md")]
pub mod operating {}

#[doc = include_str!("../docs/spark.md")]
pub mod spark {}

#[doc = include_str!("../docs/wireshark.md")]
pub mod wireshark {}

#[doc = include_str!("../docs/conformance.md")]
pub mod conformance {}

#[doc = include_str!("../docs/library.md")]
pub mod library {}

#[doc = include_str!("../docs/contributing.md")]
pub mod contributing {}

#[doc = include_str!("../docs/simulation.md")]
pub mod simulation {}
