//! driftd's end-to-end and CLI tests: one test binary, one scaffold (`scaffold`). They run
//! the real `driftd` binary, the real `kubectl` and a real Prometheus against the cluster
//! simulator, exactly as against a cluster. The simulator's own protocol and kubectl tests
//! live in `crates/sim/tests`; logic is unit-tested in each crate.

mod scaffold;

mod adopt;
mod audit;
mod bench;
mod browser;
mod check_cli;
mod check_sim;
mod cluster_log;
mod commit_cli;
mod corpus;
mod corpus_sim;
mod dashboards;
mod docs;
mod drift_slo;
mod e2e_custom;
mod e2e_demo;
mod e2e_deploy;
mod e2e_dry_run;
mod e2e_faults;
mod e2e_prometheus;
mod e2e_rules;
mod e2e_secrets;
mod e2e_serve;
mod field_selectors;
mod ha;
mod hash_key;
mod helm;
mod http_auth;
mod http_server;
mod intent_cli;
mod locks;
mod paging;
mod plan;
mod pulumi;
mod pulumi_interrupted;
mod real_manifests;
mod real_manifests_sim;
mod remediation;
mod serve_config;
mod shards;
mod sim_cli;
mod stale_config;
mod store_at_rest;
mod store_concurrency;
mod uncommitted;
mod validation;
mod validation_agreement;
