//! The cases of protocol/handshake.md, one file per section.

pub mod s1;
pub mod s10_1;
pub mod s10_2;
pub mod s11;
pub mod s12;
pub mod s1_1;
pub mod s2;
pub mod s3;
pub mod s4;
pub mod s5;
pub mod s6;
pub mod s7;
pub mod s8;
pub mod s9;
