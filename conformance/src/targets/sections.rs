//! The cases written by spec section in files of their own (`spec4_fields.rs`, …), collected
//! for their target.

use crate::case::{Case, Cases, Target};

/// The master's cases of the files by section.
pub fn master() -> Vec<Case> {
    let mut cs = Cases::new(Target::Master);
    crate::targets::spec4_fields::add(&mut cs);
    crate::targets::spec7_asks::add(&mut cs);
    crate::targets::spec14_ownership::add(&mut cs);
    crate::targets::handshake_features::add(&mut cs);
    crate::targets::spec14_closing::add(&mut cs);
    crate::targets::spec8_closes::add_master(&mut cs);
    crate::targets::spec4_encoder::add_master(&mut cs);
    crate::targets::limits::add(&mut cs);
    crate::targets::admin::add(&mut cs);
    crate::targets::tls::add(&mut cs);
    crate::targets::spec1::add(&mut cs);
    cs.list
}

/// The worker's cases of the files by section.
pub fn worker() -> Vec<Case> {
    let mut cs = Cases::new(Target::Worker);
    crate::targets::spec8_closes::add_worker(&mut cs);
    crate::targets::spec4_encoder::add_worker(&mut cs);
    crate::targets::end_obligations::add_worker(&mut cs);
    cs.list
}

/// The executor's cases of the files by section.
pub fn executor() -> Vec<Case> {
    let mut cs = Cases::new(Target::Executor);
    crate::targets::spec4_executor::add(&mut cs);
    crate::targets::spec8_closes::add_executor(&mut cs);
    crate::targets::spec4_encoder::add_executor(&mut cs);
    crate::targets::end_obligations::add_executor(&mut cs);
    cs.list
}

/// The driver's cases of the files by section.
pub fn driver() -> Vec<Case> {
    let mut cs = Cases::new(Target::Driver);
    crate::targets::spec8_closes::add_driver(&mut cs);
    crate::targets::spec11_driver::add(&mut cs);
    crate::targets::spec11_driver::add_nested_maps(&mut cs);
    crate::targets::cluster_manager::add(&mut cs);
    crate::targets::spec4_encoder::add_driver(&mut cs);
    cs.list
}
