//! The cases of protocol/rules.md, one file per letter of the rules (W: a worker's, P: an application's, …).

pub mod f;
pub mod k;
pub mod m;
pub mod n;
pub mod p;
pub mod t;
pub mod w;
pub mod x;
