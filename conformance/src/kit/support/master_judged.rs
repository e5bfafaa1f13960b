//! The master's cases whose requirement the case's judge checks at their end
//! ([`crate::harness::env::Judge`]): a conversation the case leaves for the judge to finish (rule N3), and
//! a situation the judge alone could not make happen (rule P4).

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
