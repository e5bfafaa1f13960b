//! The cases of protocol/SPEC.md, one file per section.

pub mod s1;
pub mod s10;
pub mod s11;
pub mod s11_3;
pub mod s13;
pub mod s14_2;
pub mod s14_3;
pub mod s14_4;
pub mod s14_5;
pub mod s15_5;
pub mod s16;
pub mod s2;
pub mod s3;
pub mod s4;
pub mod s4_1;
pub mod s6;
pub mod s7_1;
pub mod s8;
pub mod s8_1;
pub mod s8_2;
