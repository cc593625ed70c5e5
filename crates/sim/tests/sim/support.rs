//! Shared scaffolding for the simulator tests: the simulator in-process on its own runtime
//! thread (as `driftd sim` runs it), the real kubectl, a kube client from the written
//! kubeconfig, and polling with deadlines.
#![allow(dead_code)]

use driftd_sim::{SimOptions, Simulator};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub const KUBECTL: &str = "/usr/bin/kubectl";

pub use driftd_sim::testing::wait_for;

/// A simulator serving on loopback from its own thread and runtime, so tests on any runtime
/// (or none) reach it only over HTTP, as kubectl and kube clients reach a cluster. Stopped on
/// drop.
pub struct SimProc {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub url: String,
}

impl SimProc {
    pub fn start() -> SimProc {
        SimProc::start_with(SimOptions::default())
    }

    pub fn start_with(options: SimOptions) -> SimProc {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let path = kubeconfig.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let sim = Simulator::start_with("127.0.0.1:0".parse().unwrap(), options)
                    .await
                    .expect("simulator starts");
                sim.write_kubeconfig(&path).expect("kubeconfig written");
                url_tx.send(sim.url()).unwrap();
                let _ = stopped.await;
                drop(sim);
            });
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("simulator reports its URL");
        SimProc {
            stop: Some(stop),
            thread: Some(thread),
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
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
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

/// The first event of a watch of `api` from resourceVersion `rv` (an ERROR event is one
/// too); panics if none comes within 15 s.
pub async fn first_watch_event(
    api: &kube::Api<k8s_openapi::api::core::v1::ConfigMap>,
    params: &kube::api::WatchParams,
    rv: &str,
) -> kube::api::WatchEvent<k8s_openapi::api::core::v1::ConfigMap> {
    use futures::{StreamExt, TryStreamExt};
    let mut stream = api.watch(params, rv).await.unwrap().boxed();
    tokio::time::timeout(Duration::from_secs(15), stream.try_next())
        .await
        .expect("a watch event in time")
        .unwrap()
        .expect("the watch stays open")
}
