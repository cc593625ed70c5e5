//! The simulator's own tests: its wire protocol as the real `kube` client sees it
//! (`protocol`) and the real kubectl driving it as a user would (`kubectl`).

mod bench;
mod dry_run;
mod kubectl;
mod kubectl_workloads;
mod protocol;
mod restore;
mod support;
