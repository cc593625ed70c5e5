//! Finds the material some tests need from outside the repository (`../shared/`: the
//! real-manifest corpora and upstream samples, beside a checkout of this repository, or
//! where `DRIFTD_SHARED_DIR` says). Without it those tests are ignored, with the reason in
//! the test output; with `DRIFTD_REQUIRE_SHARED` set (CI sets it when the folder is there)
//! its absence fails the build instead of skipping them.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_material)");
    println!("cargo::rerun-if-env-changed=DRIFTD_SHARED_DIR");
    println!("cargo::rerun-if-env-changed=DRIFTD_REQUIRE_SHARED");
    let repo = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // The parent folder changes when `shared/` appears or goes away beside the checkout.
    if let Some(parent) = repo.parent() {
        println!("cargo::rerun-if-changed={}", parent.display());
    }
    let shared = match std::env::var_os("DRIFTD_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => repo.join("../shared"),
    };
    if has_material(&shared) {
        let shared = shared.canonicalize().unwrap_or(shared);
        println!("cargo::rustc-cfg=shared_material");
        println!("cargo::rustc-env=DRIFTD_SHARED_DIR={}", shared.display());
    } else if std::env::var_os("DRIFTD_REQUIRE_SHARED").is_some() {
        panic!(
            "DRIFTD_REQUIRE_SHARED is set but {} holds no real-manifests/: the tests that need it would be skipped",
            shared.display()
        );
    }
}

fn has_material(dir: &Path) -> bool {
    dir.join("real-manifests").is_dir()
}
