//! Placeholder; see below.
use super::store::Store;
pub async fn run(_store: Store) {}
