//! The master's flows across its cluster, which run alone: scheduling (rule W8,
//! spark.deploy.spreadOut, cores.max), executors launched, changing state, lost and killed
//! (rules E…), drivers on workers (D3), failover and heartbeats. Each registers workers with
//! cores and memory, which an application of an earlier case still waiting for cores would take
//! first: `Need::NoOtherApplication`. What those cases (in `cases/flow/master.rs`) share.
