//! What the cases of one topic share: the descriptions of the endpoints they check, the
//! messages they build and the helpers their bodies call (none of them a case).

pub mod admin;
pub mod auth;
pub mod client;
pub mod cluster_manager;
pub mod driver;
pub mod end_obligations;
pub mod executor;
pub mod handshake_features;
pub mod limits;
pub mod master;
pub mod master_clients;
pub mod master_judged;
pub mod open_points;
pub mod server;
pub mod spark;
pub mod spec1;
pub mod spec11;
pub mod spec11_driver;
pub mod spec14;
pub mod spec14_closing;
pub mod spec14_launch;
pub mod spec14_ownership;
pub mod spec16;
pub mod spec4_encoder;
pub mod spec4_executor;
pub mod spec4_fields;
pub mod spec7_asks;
pub mod spec8_closes;
pub mod worker;
