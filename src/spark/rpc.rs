//! The bodies Spark's RPC frames carry: NettyRpcEnv's `RequestMessage` (sender and receiver
//! addresses, the receiving endpoint's name, then a Java serialization stream), and the
//! block-transfer messages of `org.apache.spark.network.shuffle.protocol`.

use bytes::{Buf, Bytes};

use super::frame::FrameEncodeError;
use super::serial::{mutf8, MAGIC};

/// The endpoint Spark's `RpcEndpointVerifier` is registered as, in every Spark process.
pub const VERIFIER: &str = "endpoint-verifier";

/// The class of the ask a Spark peer sends [`VERIFIER`] before it sends an endpoint anything.
pub const CHECK_EXISTENCE: &str = "org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence";

/// A request or one-way body.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMessage {
    /// The sender's RPC address; `None` for a client-mode RpcEnv (an executor).
    pub sender: Option<(String, i32)>,
    /// The receiver's RPC address.
    pub receiver: Option<(String, i32)>,
    /// The receiving endpoint's name (`Master`, `Worker`, `CoarseGrainedScheduler`, …).
    pub endpoint: String,
    /// The Java serialization stream of the message.
    pub stream: Bytes,
}

/// Formats an RPC address as `host:port`.
pub fn address_text(a: &(String, i32)) -> String {
    format!("{}:{}", a.0, a.1)
}

/// Java's `DataInput.readUTF`: a `u16` length and modified UTF-8.
fn read_utf(b: &mut Bytes) -> Option<String> {
    if b.len() < 2 {
        return None;
    }
    let len = usize::from(b.get_u16());
    if b.len() < len {
        return None;
    }
    let raw = b.split_to(len);
    mutf8::decode(&raw)
}

/// Java's `DataOutput.writeUTF`.
fn write_utf(out: &mut Vec<u8>, s: &str, what: &'static str) -> Result<(), FrameEncodeError> {
    let b = mutf8::encode(s);
    let n = u16::try_from(b.len()).map_err(|_| FrameEncodeError::TooLong { what, len: b.len() })?;
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&b);
    Ok(())
}

fn write_address(out: &mut Vec<u8>, a: &Option<(String, i32)>) -> Result<(), FrameEncodeError> {
    match a {
        None => out.push(0),
        Some((host, port)) => {
            out.push(1);
            write_utf(out, host, "a host name")?;
            out.extend_from_slice(&port.to_be_bytes());
        }
    }
    Ok(())
}

fn read_address(b: &mut Bytes) -> Option<Option<(String, i32)>> {
    if b.is_empty() {
        return None;
    }
    match b.get_u8() {
        0 => Some(None),
        1 => {
            let host = read_utf(b)?;
            if b.len() < 4 {
                return None;
            }
            Some(Some((host, b.get_i32())))
        }
        _ => None,
    }
}

impl RequestMessage {
    /// The body as `NettyRpcEnv`'s `RequestMessage.serialize` writes it: the sender's and the
    /// receiver's addresses (each a presence flag, `writeUTF` host and `int32` port), the
    /// endpoint's name, then the Java stream.
    pub fn encode(&self) -> Result<Vec<u8>, FrameEncodeError> {
        let mut out = Vec::with_capacity(self.stream.len() + 64);
        write_address(&mut out, &self.sender)?;
        write_address(&mut out, &self.receiver)?;
        write_utf(&mut out, &self.endpoint, "an endpoint name")?;
        out.extend_from_slice(&self.stream);
        Ok(out)
    }

    /// Reads a body as a `RequestMessage`; `None` when it is not one (its Java stream must start
    /// right after the endpoint name).
    pub fn parse(body: &Bytes) -> Option<RequestMessage> {
        let mut b = body.clone();
        let sender = read_address(&mut b)?;
        let receiver = read_address(&mut b)?;
        let endpoint = read_utf(&mut b)?;
        if !b.starts_with(&MAGIC) {
            return None;
        }
        Some(RequestMessage {
            sender,
            receiver,
            endpoint,
            stream: b,
        })
    }
}

/// The class name of a block-transfer message (`BlockTransferMessage.Type`), by its type byte.
pub fn block_transfer_class(body: &[u8]) -> Option<&'static str> {
    let name = match body.first()? {
        0 => "OpenBlocks",
        1 => "UploadBlock",
        2 => "RegisterExecutor",
        3 => "StreamHandle",
        4 => "RegisterDriver",
        5 => "ShuffleServiceHeartbeat",
        6 => "UploadBlockStream",
        7 => "RemoveBlocks",
        8 => "BlocksRemoved",
        9 => "FetchShuffleBlocks",
        10 => "GetLocalDirsForExecutors",
        11 => "LocalDirsForExecutors",
        12 => "PushBlockStream",
        13 => "FinalizeShuffleMerge",
        14 => "MergeStatuses",
        15 => "BlockPushReturnCode",
        16 => "RemoveShuffleMerge",
        17 => "FetchShuffleBlockChunks",
        18 => "DiagnoseCorruption",
        19 => "CorruptionCause",
        _ => return None,
    };
    Some(match name {
        "OpenBlocks" => "org.apache.spark.network.shuffle.protocol.OpenBlocks",
        "UploadBlock" => "org.apache.spark.network.shuffle.protocol.UploadBlock",
        "RegisterExecutor" => "org.apache.spark.network.shuffle.protocol.RegisterExecutor",
        "StreamHandle" => "org.apache.spark.network.shuffle.protocol.StreamHandle",
        "RegisterDriver" => "org.apache.spark.network.shuffle.protocol.mesos.RegisterDriver",
        "ShuffleServiceHeartbeat" => {
            "org.apache.spark.network.shuffle.protocol.mesos.ShuffleServiceHeartbeat"
        }
        "UploadBlockStream" => "org.apache.spark.network.shuffle.protocol.UploadBlockStream",
        "RemoveBlocks" => "org.apache.spark.network.shuffle.protocol.RemoveBlocks",
        "BlocksRemoved" => "org.apache.spark.network.shuffle.protocol.BlocksRemoved",
        "FetchShuffleBlocks" => "org.apache.spark.network.shuffle.protocol.FetchShuffleBlocks",
        "GetLocalDirsForExecutors" => {
            "org.apache.spark.network.shuffle.protocol.GetLocalDirsForExecutors"
        }
        "LocalDirsForExecutors" => {
            "org.apache.spark.network.shuffle.protocol.LocalDirsForExecutors"
        }
        "PushBlockStream" => "org.apache.spark.network.shuffle.protocol.PushBlockStream",
        "FinalizeShuffleMerge" => "org.apache.spark.network.shuffle.protocol.FinalizeShuffleMerge",
        "MergeStatuses" => "org.apache.spark.network.shuffle.protocol.MergeStatuses",
        "BlockPushReturnCode" => "org.apache.spark.network.shuffle.protocol.BlockPushReturnCode",
        "RemoveShuffleMerge" => "org.apache.spark.network.shuffle.protocol.RemoveShuffleMerge",
        "FetchShuffleBlockChunks" => {
            "org.apache.spark.network.shuffle.protocol.FetchShuffleBlockChunks"
        }
        "DiagnoseCorruption" => "org.apache.spark.network.shuffle.protocol.DiagnoseCorruption",
        _ => "org.apache.spark.network.shuffle.protocol.CorruptionCause",
    })
}
