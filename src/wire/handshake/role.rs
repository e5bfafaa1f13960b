//! The roles a peer can declare in its hello, their wire names, and the family each carries.

use std::fmt;

use crate::messages::{CoarseMessage, DeployMessage, Family};

/// What a peer is. The role a client declares decides which family of messages the connection
/// carries (see [`Role::family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// A standalone Worker (deploy family).
    Worker,
    /// A driver's StandaloneAppClient, talking to the Master (deploy family).
    AppClient,
    /// A DriverClient submitting drivers in cluster deploy mode (deploy family).
    DriverClient,
    /// The standalone Master (deploy family).
    Master,
    /// An executor's CoarseGrainedExecutorBackend (coarse family).
    Executor,
    /// A cluster manager's application master (coarse family).
    ClusterManager,
    /// A driver's CoarseGrainedSchedulerBackend (coarse family).
    Driver,
    /// A UI or REST client of a master or a worker (deploy family).
    Ui,
}

impl Role {
    /// Every role, in the order protocol/handshake.md lists them.
    pub const ALL: [Role; 8] = [
        Role::Worker,
        Role::AppClient,
        Role::DriverClient,
        Role::Master,
        Role::Executor,
        Role::ClusterManager,
        Role::Driver,
        Role::Ui,
    ];

    /// The role's name on the wire: the role's name in `protocol/definition.json`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::AppClient => "app-client",
            Role::DriverClient => "driver-client",
            Role::Master => "master",
            Role::Executor => "executor",
            Role::ClusterManager => "cluster-manager",
            Role::Driver => "driver",
            Role::Ui => "ui",
        }
    }

    /// The role with that wire name.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The family a connection of this role carries: [`DeployMessage::FAMILY`] (`deploy`) for
    /// worker, app client, driver client, master and ui; [`CoarseMessage::FAMILY`] (`coarse`) for
    /// executor, cluster manager and driver.
    pub fn family(self) -> &'static str {
        match self {
            Role::Worker | Role::AppClient | Role::DriverClient | Role::Master | Role::Ui => {
                DeployMessage::FAMILY
            }
            Role::Executor | Role::ClusterManager | Role::Driver => CoarseMessage::FAMILY,
        }
    }

    /// True when this role's connections carry family `F`.
    pub fn carries<F: Family>(self) -> bool {
        self.family() == F::FAMILY
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_round_trip_and_unknown_names_are_none() {
        for role in Role::ALL {
            assert_eq!(Role::from_name(role.name()), Some(role));
        }
        assert_eq!(Role::from_name("Worker"), None);
        assert_eq!(Role::from_name("scheduler"), None);
    }

    #[test]
    fn deploy_roles_and_coarse_roles_carry_their_family() {
        let deploy: Vec<Role> = Role::ALL
            .into_iter()
            .filter(|r| r.carries::<DeployMessage>())
            .collect();
        let coarse: Vec<Role> = Role::ALL
            .into_iter()
            .filter(|r| r.carries::<CoarseMessage>())
            .collect();
        assert_eq!(
            deploy,
            [
                Role::Worker,
                Role::AppClient,
                Role::DriverClient,
                Role::Master,
                Role::Ui
            ]
        );
        assert_eq!(coarse, [Role::Executor, Role::ClusterManager, Role::Driver]);
    }
}
