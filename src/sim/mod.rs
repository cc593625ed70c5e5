//! The cluster simulator: an HTTP server speaking the Kubernetes REST/watch protocol.
//!
//! OWNER: simulator helper. Interface fixed; bodies are stubs until implemented.

pub mod defaults;
pub mod smp;

use std::net::SocketAddr;
use std::path::Path;

/// A running simulator. Dropping it stops the server.
pub struct Simulator {
    addr: SocketAddr,
}

impl Simulator {
    /// Binds `listen` (port 0 picks a free port) and starts serving.
    pub async fn start(listen: SocketAddr) -> std::io::Result<Simulator> {
        Ok(Simulator { addr: listen })
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// A kubeconfig (YAML) whose current context points at this simulator.
    pub fn kubeconfig_yaml(&self) -> String {
        String::new()
    }
    /// Writes the kubeconfig atomically (write to temp, rename) so watchers of the path
    /// never read half a file.
    pub fn write_kubeconfig(&self, _path: &Path) -> std::io::Result<()> {
        Ok(())
    }
}
