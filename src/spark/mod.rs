//! Reading Spark's own wire (feature `spark`): Netty transport frames ([`frame`]), the bodies of
//! RPC frames ([`rpc`]), Java serialization ([`serial`], read and written; Scala values in [`java`]), the mapping of
//! Spark's Java objects to sparkwire's typed messages ([`map`]), the conversion of a connection's
//! bytes into trace events ([`tracer`]), TCP reassembly of captures ([`pcap`]), and a transparent
//! proxy that traces and validates live traffic ([`proxy`]).

pub mod build;
pub mod classes;
pub mod decode;
pub mod encode;
pub mod frame;
pub mod java;
pub mod map;
pub mod pcap;
pub mod proxy;
pub mod rpc;
pub mod serial;
pub mod tracer;
#[cfg(feature = "testing")]
pub mod vectors;
