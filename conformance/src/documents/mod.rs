//! The documents the suite renders from its own code and stored runs, which CI checks are
//! fresh: `CASES.md` (every case), `COVERAGE.md` (every normative sentence of the protocol
//! documents mapped to the cases that check it) and `SPARK.md` (the verdict on real Spark).

pub mod cases_md;
pub mod coverage;
pub mod spark_auth_md;
pub mod spark_md;
