//! DriverClient ↔ Master messages (cluster deploy mode).

use crate::messages::common::{DriverDescription, EndpointRef, ErrorDescription};
use crate::messages::states::DriverState;

record! {
    /// DriverClient → Master (ask → SubmitDriverResponse): submit a driver.
    pub struct RequestSubmitDriver {
        /// The driver.
        pub driver_description: DriverDescription,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestSubmitDriver.
    pub struct SubmitDriverResponse {
        /// The master's endpoint.
        pub master: EndpointRef,
        /// Whether the driver was accepted.
        pub success: bool,
        /// The driver's id, when accepted.
        pub driver_id: Option<String>,
        /// Text for the user.
        pub message: String,
    }
}

record! {
    /// DriverClient → Master (ask → KillDriverResponse): kill a driver.
    pub struct RequestKillDriver {
        /// Driver id.
        pub driver_id: String,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestKillDriver.
    pub struct KillDriverResponse {
        /// The master's endpoint.
        pub master: EndpointRef,
        /// Driver id.
        pub driver_id: String,
        /// Whether a kill was requested.
        pub success: bool,
        /// Text for the user.
        pub message: String,
    }
}

record! {
    /// DriverClient → Master (ask → DriverStatusResponse): a driver's status.
    pub struct RequestDriverStatus {
        /// Driver id.
        pub driver_id: String,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestDriverStatus.
    pub struct DriverStatusResponse {
        /// Whether the master knows the driver.
        pub found: bool,
        /// Its state.
        pub state: Option<DriverState>,
        /// The worker running it.
        pub worker_id: Option<String>,
        /// host:port of that worker.
        pub worker_host_port: Option<String>,
        /// The error that ended it.
        pub exception: Option<ErrorDescription>,
    }
}

record! {
    /// DriverClient → Master (ask → KillAllDriversResponse): kill every driver.
    pub struct RequestKillAllDrivers {}
}

record! {
    /// Master → DriverClient: the answer to RequestKillAllDrivers.
    pub struct KillAllDriversResponse {
        /// The master's endpoint.
        pub master: EndpointRef,
        /// Whether kills were requested.
        pub success: bool,
        /// Text for the user.
        pub message: String,
    }
}
