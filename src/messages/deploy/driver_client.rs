//! DriverClient ↔ Master messages (cluster deploy mode).

use crate::messages::common::{DriverDescription, EndpointRef, ErrorDescription};
use crate::messages::states::DriverState;

record! {
    /// DriverClient → Master (ask → SubmitDriverResponse): submit a driver.
    pub struct RequestSubmitDriver {
        /// The driver.
        pub driver_description: DriverDescription => with_driver_description,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestSubmitDriver.
    pub struct SubmitDriverResponse {
        /// The master's endpoint.
        pub master: EndpointRef => with_master,
        /// Whether the driver was accepted.
        pub success: bool => with_success,
        /// The driver's id, when accepted.
        pub driver_id: Option<String> => with_driver_id,
        /// Text for the user.
        pub message: String => with_message,
    }
}

record! {
    /// DriverClient → Master (ask → KillDriverResponse): kill a driver.
    pub struct RequestKillDriver {
        /// Driver id.
        pub driver_id: String => with_driver_id,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestKillDriver.
    pub struct KillDriverResponse {
        /// The master's endpoint.
        pub master: EndpointRef => with_master,
        /// Driver id.
        pub driver_id: String => with_driver_id,
        /// Whether a kill was requested.
        pub success: bool => with_success,
        /// Text for the user.
        pub message: String => with_message,
    }
}

record! {
    /// DriverClient → Master (ask → DriverStatusResponse): a driver's status.
    pub struct RequestDriverStatus {
        /// Driver id.
        pub driver_id: String => with_driver_id,
    }
}

record! {
    /// Master → DriverClient: the answer to RequestDriverStatus.
    pub struct DriverStatusResponse {
        /// Whether the master knows the driver.
        pub found: bool => with_found,
        /// Its state.
        pub state: Option<DriverState> => with_state,
        /// The worker running it.
        pub worker_id: Option<String> => with_worker_id,
        /// host:port of that worker.
        pub worker_host_port: Option<String> => with_worker_host_port,
        /// The error that ended it.
        pub exception: Option<ErrorDescription> => with_exception,
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
        pub master: EndpointRef => with_master,
        /// Whether kills were requested.
        pub success: bool => with_success,
        /// Text for the user.
        pub message: String => with_message,
    }
}
