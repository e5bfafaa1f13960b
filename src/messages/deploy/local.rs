//! Deploy messages Spark sends only inside one process. They are defined for completeness; they
//! never cross a connection, and the codec refuses them both ways.

record! {
    /// Master → itself: decommission the workers with these ids.
    pub struct DecommissionWorkers {
        /// Worker ids.
        pub ids: Vec<String> => with_ids,
    }
}

record! {
    /// Worker → itself: clean old application directories.
    pub struct WorkDirCleanup {}
}

record! {
    /// Worker → itself: try registering again.
    pub struct ReregisterWithMaster {}
}

record! {
    /// Worker → itself: time to heartbeat.
    pub struct SendHeartbeat {}
}

record! {
    /// Worker → itself: a decommission signal arrived.
    pub struct WorkerDecommissionSigReceived {}
}

record! {
    /// Driver backend → its AppClient (local ask → Bool): stop the client.
    pub struct StopAppClient {}
}
