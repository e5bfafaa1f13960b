//! SPEC §10, serialized tasks: what an executor reports of a task (`StatusUpdate`'s data, one
//! final update) and how a driver fills a `TaskDescription` (its name, stage attempt and cpus).
//! One function per case; each cites the sentence it checks.
