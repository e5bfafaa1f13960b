//! `--busy-poll-us`: the driver's busy-poll window
//! ([`DriverConfig::busy_poll`](sparkwire::reference::driver::DriverConfig::busy_poll)) for the
//! commands that run a driver on one thread: `driver`, `submit` and `local-cluster`.

use std::time::Duration;

use clap::Args;

/// The default window, µs: on a 2-vCPU machine 50 µs took 2×1 tiny-task throughput from about
/// 21,000 to 47,000 tasks per second on less CPU; under about 30 µs the window closes before a
/// tiny task's result is back (BENCHMARKS.md).
const DEFAULT_MICROS: u64 = 50;

/// The most taken: a window longer than this is spinning, not polling.
const MAX_MICROS: u64 = 10_000;

/// The busy-poll flag of a command that runs a driver.
#[derive(Debug, Clone, Args)]
pub(crate) struct BusyPollArgs {
    /// After handling executors' messages while tasks are out, the driver keeps polling its
    /// connections for this many microseconds before it sleeps, so that quick results are read
    /// without a wake-up; 0: never; at most 10000.
    #[arg(long = "busy-poll-us", value_name = "MICROS", default_value_t = DEFAULT_MICROS)]
    micros: u64,
}

impl BusyPollArgs {
    /// The window; a value over the most is refused.
    pub(crate) fn window(&self) -> Result<Duration, String> {
        if self.micros > MAX_MICROS {
            return Err(format!(
                "--busy-poll-us {} is over the most it takes, {MAX_MICROS} µs",
                self.micros
            ));
        }
        Ok(Duration::from_micros(self.micros))
    }

    /// The flag as it is written on a command line.
    pub(crate) fn to_args(&self) -> [String; 2] {
        ["--busy-poll-us".into(), self.micros.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_up_to_the_most_are_taken_and_longer_ones_refused() {
        let args = |micros| BusyPollArgs { micros };
        assert_eq!(args(0).window(), Ok(Duration::ZERO));
        assert_eq!(args(50).window(), Ok(Duration::from_micros(50)));
        assert_eq!(args(MAX_MICROS).window(), Ok(Duration::from_millis(10)));
        let refused = args(MAX_MICROS + 1).window().expect_err("refused");
        assert!(refused.contains("10000 µs"), "{refused}");
        assert_eq!(args(7).to_args(), ["--busy-poll-us", "7"]);
    }
}
