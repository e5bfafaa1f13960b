//! The fault of SPEC §15.5 (one master, several releases): a master that places executors
//! whatever the releases announced. The case of `cases/spec/s15_5.rs` checks the sentence
//! it breaks.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::wire::Envelope;

use super::{decoded, reencoded, Act, Behaviour, Decoded, State, D};

/// `release-ignored`: the proxy drops `sparkRelease` from every RegisterWorker and
/// RegisterApplication the suite sends, so that the master places as if none were announced.
pub(super) struct ReleaseIgnored;

impl Behaviour for ReleaseIgnored {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let Some(Decoded {
            version,
            envelope: Ok(Some(Envelope::Send(m))),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let m = match m {
            D::RegisterWorker(r) if r.spark_release.is_some() => {
                D::RegisterWorker(r.with_spark_release(None))
            }
            D::RegisterApplication(r) if r.spark_release.is_some() => {
                D::RegisterApplication(r.with_spark_release(None))
            }
            _ => return Act::Forward(body),
        };
        reencoded(&Envelope::Send(m), version, body)
    }
}
