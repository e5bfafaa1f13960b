//! Layer 4: reference Master, Worker, driver and executor, built only on the public API of the
//! layers before it, as an outside implementation would be.

pub mod cluster;
pub mod diagram;
pub mod driver;
pub mod executor;
pub mod master;
pub mod spark_url;
pub mod tap;
pub mod task;
