#!/bin/sh
# Measures the figures of issue 13 ("Done when") against the `sparkwire master` binary:
#   - a 60 s flood by a `ui` peer that asks RequestMasterState and never reads: the master's
#     highest RSS, and the latency of workers registering meanwhile (one after another);
#   - a master held to 1,024 file descriptors with 1,124 idle handshaked `ui` peers: how soon a
#     fresh worker registers with a 3 s --idle-timeout;
#   - the master's RSS over 10 cycles of opening and closing 2,000 connections.
# Each prints a line starting with FIGURE. FLOOD_SECS=N shortens the flood.
# Usage: scripts/isolation-figures.sh [--release]
set -eu
cd "$(dirname "$0")/.."
exec cargo test "$@" --test isolation_figures -- --ignored --nocapture --test-threads=1
