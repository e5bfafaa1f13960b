//! What the cases of one topic share: the descriptions of the endpoints they check, the
//! messages they build and the helpers their bodies call (none of them a case).

pub mod admin;
pub mod auth;
pub mod authorization;
pub mod bound_ids;
pub mod client;
pub mod close_kinds;
pub mod cluster_manager;
pub mod decoding;
pub mod decoding_driver;
pub mod driver;
pub mod end_obligations;
pub mod executor;
pub mod executor_layouts;
pub mod field_maps;
pub mod field_order;
pub mod handshake_features;
pub mod launches;
pub mod limits;
pub mod lost_on_close;
pub mod master;
pub mod master_asks;
pub mod master_clients;
pub mod master_judged;
pub mod one_connection;
pub mod open_points;
pub mod server;
pub mod spark;
pub mod waiting_reasons;
pub mod worker;
