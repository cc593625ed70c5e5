//! `driftd serve` wiring: store, watchers, drift engine, HTTP server.
