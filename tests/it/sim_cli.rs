//! `driftd sim`, the command that runs the simulator for people and scripts.

use crate::scaffold::wait_for;
use std::time::Duration;

const T: Duration = Duration::from_secs(15);

#[test]
fn sim_command_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kc");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_driftd"))
        .args(["sim", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("kubeconfig", T, || kubeconfig.exists().then_some(()));
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains("server: http://127.0.0.1:"), "{text}");
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = wait_for("exit after SIGTERM", T, || child.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(
        out.contains("url: http://127.0.0.1:") && out.contains("kubeconfig: "),
        "{out}"
    );
}
