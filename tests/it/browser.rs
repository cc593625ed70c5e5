//! The drift page in a real browser: headless Chromium, driven over WebDriver by
//! chromedriver, against `driftd serve` on the simulator. What an on-call engineer sees:
//! readiness before the first list, the drifting objects with their changed fields and who
//! changed them, a filter that narrows the list, a page of the list and its next-page link,
//! untrusted markup shown as text, and a screenshot under `target/` for people to look at.

use crate::scaffold::*;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const T: Duration = Duration::from_secs(60);

/// A value a hostile committer could put in a ConfigMap: were it markup, it would retitle
/// the page and set a global.
const SCRIPT: &str = "<script>document.title='pwned';window.pwned=1</script>";

/// chromedriver and one Chromium session, driven synchronously so the scaffold's blocking
/// helpers and `wait_for` can be used between steps.
struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    _driver: Proc,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Browser {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "the browser test needs {CHROMEDRIVER} and {CHROMIUM} (Debian: apt-get install chromium chromium-driver)"
        );
        let port = free_port();
        let mut cmd = Command::new(CHROMEDRIVER);
        cmd.arg(format!("--port={port}"));
        let mut driver = Proc::spawn("chromedriver", cmd);
        driver.wait_line("started successfully", T);
        let profile = tempfile::tempdir().unwrap();
        // Headless as root in CI; the network flags keep Chromium from dialling out (the
        // test machines refuse such connections, and a page of ours loads nothing remote).
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1400,1800",
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": CHROMIUM, "args": args}),
        );
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = rt
            .block_on(
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps)
                    .connect(&format!("http://127.0.0.1:{port}")),
            )
            .unwrap_or_else(|e| panic!("cannot start a Chromium session: {e}"));
        Browser {
            rt,
            client: Some(client),
            _driver: driver,
            _profile: profile,
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    fn goto(&self, url: &str) {
        self.rt
            .block_on(self.client().goto(url))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
    }

    /// The visible text of the page (what a person reads, markup not included).
    fn body_text(&self) -> String {
        self.text("body").unwrap_or_default()
    }

    fn text(&self, css: &str) -> Option<String> {
        self.rt.block_on(async {
            let element = self.client().find(Locator::Css(css)).await.ok()?;
            element.text().await.ok()
        })
    }

    /// The visible text of every `.object` on the page.
    fn objects(&self) -> Vec<String> {
        self.rt.block_on(async {
            let mut texts = Vec::new();
            for element in self
                .client()
                .find_all(Locator::Css(".object"))
                .await
                .unwrap()
            {
                texts.push(element.text().await.unwrap());
            }
            texts
        })
    }

    fn title(&self) -> String {
        self.rt.block_on(self.client().title()).unwrap()
    }

    fn script(&self, js: &str) -> serde_json::Value {
        self.rt.block_on(self.client().execute(js, vec![])).unwrap()
    }

    fn current_url(&self) -> String {
        self.rt
            .block_on(self.client().current_url())
            .unwrap()
            .to_string()
    }

    /// Follows the link `css` finds, as a person clicks it.
    fn click(&self, css: &str) {
        self.rt.block_on(async {
            self.client()
                .find(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("{css}: {e}"))
                .click()
                .await
                .unwrap();
        })
    }

    /// Picks `value` in the filter form's `name` select and submits the form with its button,
    /// as a person would.
    fn filter_by(&self, name: &str, value: &str) {
        self.rt.block_on(async {
            let select = self
                .client()
                .find(Locator::Css(&format!("#filters select[name={name}]")))
                .await
                .unwrap();
            select.select_by_value(value).await.unwrap();
            self.client()
                .find(Locator::Css("#filters button"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        })
    }

    fn screenshot(&self, path: &Path) {
        let png = self.rt.block_on(self.client().screenshot()).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG screenshot");
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.rt.block_on(client.close());
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `target/` of this build (next to the `driftd` binary's profile folder).
fn target_dir() -> PathBuf {
    Path::new(DRIFTD)
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

#[test]
fn drift_page_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    // The example app plus a ConfigMap whose value is a script.
    let app = edited_examples(&dir.path().join("app"), |text| text.to_string());
    std::fs::write(
        app.join("30-notes.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n  namespace: shop\n\
             data:\n  note: {}\n",
            serde_json::to_string(SCRIPT).unwrap()
        ),
    )
    .unwrap();
    commit(&dir.path().join("driftd.db"), "shop", &app);
    sim.kubectl(&["apply", "-f", app.to_str().unwrap()]);

    let browser = Browser::start();
    // ConfigMaps cannot be listed yet: the daemon stays before its first complete list.
    sim.admin(
        "POST",
        "faults",
        json!({"resource": "configmaps", "verb": "list", "count": 100000, "code": 500}),
    );
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    browser.goto(&format!("{}/", daemon.url));
    let readiness = browser.text("#readiness").unwrap();
    assert!(
        readiness.starts_with("not ready: still listing"),
        "{readiness}"
    );
    let text = browser.body_text();
    assert!(!text.contains("No drift"), "{text}");
    sim.admin("DELETE", "faults", serde_json::Value::Null);
    // (The ConfigMap watcher retries with backoff: allow for its next attempt.)
    wait_for("/readyz 200", T, || {
        (daemon.get("/readyz").0 == 200).then_some(())
    });

    // Hand edits: an image set by kubectl, the script ConfigMap's value changed, the
    // Service deleted.
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    sim.merge_patch(
        "shop",
        &["configmap", "notes"],
        &json!({"data": {"note": "<b>edited</b>"}}),
    );
    sim.kubectl(&["-n", "shop", "delete", "service", "web"]);

    wait_for("the page to show three drifting objects", T, || {
        browser.goto(&format!("{}/", daemon.url));
        (browser.objects().len() == 3).then_some(())
    });
    let readiness = browser.text("#readiness").unwrap();
    assert!(readiness.starts_with("ready"), "{readiness}");
    let objects = browser.objects();
    let web = objects
        .iter()
        .find(|o| o.contains("Deployment shop/web"))
        .unwrap_or_else(|| panic!("{objects:#?}"));
    assert!(web.starts_with("modified"), "{web}");
    assert!(
        web.contains("spec.template.spec.containers[name=app].image"),
        "{web}"
    );
    assert!(web.contains("\"nginx:1.27\""), "{web}");
    assert!(web.contains("\"nginx:1.28\""), "{web}");
    assert!(web.contains("kubectl-set"), "{web}");
    assert!(web.contains("drifting for"), "{web}");
    let sources = browser.text("#sources").unwrap();
    assert!(sources.contains("shop"), "{sources}");

    // The script is text on the page and did not run.
    let notes = objects
        .iter()
        .find(|o| o.contains("ConfigMap shop/notes"))
        .unwrap_or_else(|| panic!("{objects:#?}"));
    assert!(
        notes.contains(&serde_json::to_string(SCRIPT).unwrap()),
        "{notes}"
    );
    assert!(notes.contains("\"<b>edited</b>\""), "{notes}");
    assert!(notes.contains("kubectl-patch"), "{notes}");
    assert_eq!(browser.title(), "driftd: drift");
    assert_eq!(browser.script("return typeof window.pwned;"), "undefined");

    // The command the page gives for looking at the object works as shown.
    let command = web
        .lines()
        .find_map(|l| l.strip_prefix("Look at it: "))
        .unwrap_or_else(|| panic!("{web}"));
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert_eq!(
        command.split_whitespace().next(),
        Some("kubectl"),
        "{command}"
    );
    let yaml = sim.kubectl(&args);
    assert!(yaml.contains("image: nginx:1.28"), "{yaml}");

    std::fs::create_dir_all(target_dir()).unwrap();
    let shot = target_dir().join("drift-page.png");
    browser.screenshot(&shot);

    // In pages of two: the list order is source, kind, namespace, name, so the ConfigMap
    // and the Deployment, then a link to the page with the Service.
    browser.goto(&format!("{}/?limit=2", daemon.url));
    let objects = browser.objects();
    assert_eq!(objects.len(), 2, "{objects:#?}");
    assert!(objects[0].contains("ConfigMap shop/notes"), "{objects:#?}");
    assert!(objects[1].contains("Deployment shop/web"), "{objects:#?}");
    let next = browser.text("#next").unwrap();
    assert!(next.contains("Next page (1 more)"), "{next}");
    browser.click("#next-page");
    wait_for("the next page", T, || {
        browser.current_url().contains("continue=").then_some(())
    });
    let objects = browser.objects();
    assert_eq!(objects.len(), 1, "{objects:#?}");
    assert!(objects[0].contains("Service shop/web"), "{objects:#?}");
    assert!(browser.text("#last-page").is_some());
    assert!(browser.text("#next-page").is_none());

    // The filter form narrows the list and leaves a shareable link.
    browser.filter_by("class", "missing");
    wait_for("the filtered page", T, || {
        browser
            .current_url()
            .contains("class=missing")
            .then_some(())
    });
    let objects = browser.objects();
    assert_eq!(objects.len(), 1, "{objects:#?}");
    assert!(objects[0].contains("Service shop/web"), "{objects:#?}");
    assert!(objects[0].starts_with("missing"), "{objects:#?}");

    browser.goto(&format!("{}/?kind=ConfigMap", daemon.url));
    let objects = browser.objects();
    assert_eq!(objects.len(), 1, "{objects:#?}");
    assert!(objects[0].contains("ConfigMap shop/notes"), "{objects:#?}");

    // An unknown class is answered with the valid ones, not an empty list.
    browser.goto(&format!("{}/?class=modifed", daemon.url));
    let text = browser.body_text();
    assert!(text.contains("unknown class `modifed`"), "{text}");
    assert!(text.contains("Valid classes: in_sync, modified"), "{text}");
    let (status, _) = daemon.get("/?class=modifed");
    assert_eq!(status, 400);

    eprintln!("drift page screenshot: {}", shot.display());
}
