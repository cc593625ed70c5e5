//! Shared scaffolding for the simulator tests: the real `driftd sim` binary as a child
//! process, the real kubectl, a kube client from the written kubeconfig, and polling.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const KUBECTL: &str = "/usr/bin/kubectl";

#[path = "../common/mod.rs"]
mod common;
/// Polls a condition with a deadline (shared with the end-to-end tests).
pub use common::wait_for;

/// `driftd sim` running as a child process (killed on drop).
pub struct SimProc {
    child: Child,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub url: String,
}

impl SimProc {
    pub fn start(extra: &[&str]) -> SimProc {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_driftd"))
            .args(["sim", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("driftd sim starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        while url.is_empty() {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "driftd sim exited before printing its URL"
            );
            if let Some(u) = line.trim().strip_prefix("url: ") {
                url = u.to_string();
            }
        }
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in stdout.lines() {});
        wait_for("kubeconfig file", Duration::from_secs(10), || {
            kubeconfig.exists().then_some(())
        });
        SimProc {
            child,
            dir,
            kubeconfig,
            url,
        }
    }

    pub fn kubectl_output(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(KUBECTL)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("kubectl runs")
    }

    /// Runs kubectl; panics with its stderr if it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args, &[]);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs kubectl expecting failure; returns its stderr.
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args, &[]);
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded"
        );
        String::from_utf8(out.stderr).unwrap()
    }

    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).unwrap()
    }

    /// Writes a file in the test's directory and returns its path as a string.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// POSTs to a `/_sim/...` admin endpoint.
    pub async fn admin(&self, path: &str, body: Value) -> Value {
        let resp = reqwest::Client::new()
            .post(format!("{}/_sim/{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "admin {path}: {}",
            resp.status()
        );
        resp.json().await.unwrap()
    }
}

impl Drop for SimProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports:
        - containerPort: 80
        env:
        - {name: MODE, value: prod}
        resources:
          requests: {cpu: 1000m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports:
  - port: 80
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
"#;
