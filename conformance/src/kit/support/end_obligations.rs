//! The end-of-trace obligations a worker and an executor owe (protocol/rules.md, End of the
//! trace: N4 and N2), checked by the case's judge ([`crate::harness::env::Judge::settle`]): the case gives
//! the endpoint something it must answer and lets go of the connection at once; the judge
//! listens on it, within the case's time, until the answer came, and fails the case when it
//! never does. The endpoint, which the suite started for the case, is stopped only once the
//! judge stopped listening: stopped earlier, it would close the connection, which excuses it.

use crate::harness::env::Ctx;
use crate::harness::verdict::Outcome;

/// The case's requirement is checked by its judge, which is off on Spark's wire: there the case
/// is skipped.
pub(crate) fn judged(ctx: &Ctx) -> Outcome {
    match ctx.log.wire() {
        crate::harness::env::Wire::Sparkwire => Ok(()),
        crate::harness::env::Wire::Spark(_) => Err(crate::harness::peer::not_on_spark_wire(
            "the judge, which checks what a finished conversation owes, is off there",
        )),
    }
}
