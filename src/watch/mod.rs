//! kube-runtime watchers for the kinds in the desired state.
