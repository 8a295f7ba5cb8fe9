//! The browser playground in a real browser: headless Chromium
//! driven over WebDriver (Debian's `chromium` and `chromium-driver`, through
//! the `fantoccini` client), on the page `make playground` builds into
//! `dist/playground/`, served by `olm-guard playground`.
//!
//! - On scenarios of every module from `testdata/`, the page shows the
//!   verdict and message that `olm-guard run` gives on the same request,
//!   settings and cluster with the module in `dist/`.
//! - Typing into the object editor re-evaluates, and the new verdict is
//!   again `olm-guard run`'s on the text typed.
//! - The share link, opened in a fresh page, restores every input and the
//!   verdict.
//!
//! A screenshot of every checked state is kept in `target/playground-browser/`.
//!
//! Where Chromium, ChromeDriver or the built page is missing the tests fail,
//! naming each missing piece and how to get it (`scripts/test-deps.sh`,
//! `make playground`; `make test` runs both first): a missing tool is never
//! a pass.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

mod common;
use common::{missing_tool, module, on_path, root};

/// How long the page may take to load its wasm and answer; generous for a
/// loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A child process killed when the test ends, passed or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the tests need: found, or the test fails naming what is missing.
struct Needs {
    chromium: PathBuf,
    chromedriver: PathBuf,
    page: PathBuf,
}

fn needs() -> Needs {
    let browsers = ["chromium", "chromium-browser", "google-chrome"];
    let chromium = on_path(&browsers);
    let chromedriver = on_path(&["chromedriver"]);
    let page = root().join("dist/playground");
    let mut missing = Vec::new();
    if chromium.is_none() {
        missing.push(missing_tool(&browsers, "chromium"));
    }
    if chromedriver.is_none() {
        missing.push(missing_tool(&["chromedriver"], "chromium-driver"));
    }
    if !page.join("index.html").is_file() {
        missing
            .push("dist/playground/index.html is missing: build it with `make playground`".into());
    }
    match (chromium, chromedriver) {
        (Some(chromium), Some(chromedriver)) if missing.is_empty() => Needs {
            chromium,
            chromedriver,
            page,
        },
        _ => panic!("the browser test cannot run: {}", missing.join("; ")),
    }
}

/// ChromeDriver, listening on a port the system gave it: `--port=0` binds
/// whatever port is free at the moment it binds, and ChromeDriver says
/// which ("ChromeDriver was started successfully on port N."), so no port
/// is picked first and taken by another process (or another test of this
/// binary) before ChromeDriver binds it. Returns the driver and its port,
/// or panics with what it printed.
fn start_driver(chromedriver: &Path) -> (Killed, u16) {
    let mut child = Command::new(chromedriver)
        .arg("--port=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let stdout = child.stdout.take().expect("chromedriver's stdout is piped");
    let driver = Killed(child);
    // Read on a thread that drains the pipe for as long as ChromeDriver
    // runs, so that a later line can never block it (or kill it with
    // SIGPIPE once the pipe had no reader).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut printed = Vec::new();
        let mut sent = false;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if !sent && let Some(rest) = line.split("started successfully on port ").nth(1) {
                let _ = tx.send(Ok(rest.trim_end_matches('.').trim().to_string()));
                sent = true;
            } else if !sent {
                printed.push(line);
            }
        }
        if !sent {
            let _ = tx.send(Err(printed.join(" | ")));
        }
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(Ok(port)) => {
            let port = port
                .parse()
                .unwrap_or_else(|_| panic!("chromedriver printed no port number: {port}"));
            (driver, port)
        }
        Ok(Err(printed)) => panic!("chromedriver exited before it listened: {printed}"),
        Err(_) => panic!("chromedriver did not say it listened within {PATIENCE:?}"),
    }
}

/// The page, the driver and a browser session on it.
struct Playground {
    client: Client,
    url: String,
    _server: Killed,
    _driver: Killed,
    _profile: tempfile::TempDir,
}

impl Playground {
    async fn open(needs: &Needs) -> Playground {
        let (server, url) = serve(&needs.page);
        // Listening once it says so; its stdout, read no further, stays
        // open (ChromeDriver logs nothing more there without --verbose).
        let (driver, port) = start_driver(&needs.chromedriver);
        let profile = tempfile::tempdir().unwrap();
        // The flags Chromium needs as root in a sandbox without a network:
        // background connections would otherwise be refused by the dozen.
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--hide-scrollbars".into(),
            "--window-size=1280,1600".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": needs.chromium, "args": args},
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session through chromedriver");
        Playground {
            client,
            url,
            _server: server,
            _driver: driver,
            _profile: profile,
        }
    }

    /// Opens `url` and waits until the page has loaded its wasm and made
    /// its first evaluation.
    async fn load(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
        self.wait_for("document.body.dataset.state !== 'loading'")
            .await;
        let state = self.script("return document.body.dataset.state").await;
        assert_eq!(
            state,
            "ready",
            "the page did not start: {}",
            self.text("#error").await
        );
        self.wait_for("Number(document.body.dataset.evaluations || 0) > 0")
            .await;
    }

    async fn script(&self, body: &str) -> Value {
        self.client
            .execute(body, vec![])
            .await
            .unwrap_or_else(|e| panic!("script `{body}`: {e}"))
    }

    /// Polls `condition` (a JavaScript expression) until it is true.
    async fn wait_for(&self, condition: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.script(&format!("return Boolean({condition})")).await == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "waited {PATIENCE:?} for `{condition}`; the page shows: {}",
                self.text("body").await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn evaluations(&self) -> u64 {
        self.script("return Number(document.body.dataset.evaluations || 0)")
            .await
            .as_u64()
            .unwrap()
    }

    async fn text(&self, css: &str) -> String {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await.unwrap_or_default(),
            Err(e) => format!("(no {css}: {e})"),
        }
    }

    /// The verdict as the page shows it.
    async fn shown(&self) -> Shown {
        let answer = self
            .script(
                "const v = document.getElementById('verdict');
                 return {
                   allowed: v.dataset.allowed ?? null,
                   verdict: v.textContent,
                   message: document.getElementById('message').textContent,
                   error: document.getElementById('error').hidden ? '' :
                          document.getElementById('error').textContent,
                 };",
            )
            .await;
        assert_eq!(answer["error"], "", "the page shows an error: {answer}");
        Shown {
            allowed: answer["allowed"] == "true",
            verdict: answer["verdict"].as_str().unwrap().to_string(),
            message: answer["message"].as_str().unwrap().to_string(),
        }
    }

    /// Every input field's value, by the page's own names.
    async fn inputs(&self) -> Value {
        self.script(
            "const out = { rule: document.getElementById('rule').value };
             for (const f of ['object', 'oldObject', 'operation', 'namespace', 'user',
                              'groups', 'settings', 'cluster', 'request'])
               out[f] = document.getElementById(f).value;
             return out;",
        )
        .await
    }

    /// Fills the form as a user pasting into it would, then waits for the
    /// evaluation that follows (the page debounces typing).
    async fn fill(&self, rule: &str, fields: &Value) {
        let before = self
            .client
            .execute(
                "const [rule, fields] = arguments;
                 const rules = document.getElementById('rule');
                 rules.value = rule;
                 rules.dispatchEvent(new Event('change'));
                 for (const id of ['object', 'oldObject', 'operation', 'namespace', 'user',
                                   'groups', 'settings', 'cluster', 'request'])
                   document.getElementById(id).value = fields[id] ?? '';
                 const count = Number(document.body.dataset.evaluations || 0);
                 document.getElementById('object').dispatchEvent(new Event('input'));
                 return count;",
                vec![json!(rule), fields.clone()],
            )
            .await
            .expect("the form is filled");
        self.wait_for(&format!(
            "Number(document.body.dataset.evaluations || 0) > {before}"
        ))
        .await;
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        let dir = root().join("target/playground-browser");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    async fn close(self) {
        self.client.close().await.expect("the session closes");
    }
}

/// `olm-guard playground --port 0` on `page`, and the address it prints.
fn serve(page: &Path) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(["playground", "--port", "0", "--dir"])
        .arg(page)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("olm-guard playground starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("olm-guard playground prints its address");
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in `{line}`"))
        .to_string();
    (Killed(child), url)
}

#[derive(Debug, PartialEq)]
struct Shown {
    allowed: bool,
    verdict: String,
    message: String,
}

/// `olm-guard run` on the module in `dist/` with `args`: (allowed, message).
fn run(rule: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .arg("run")
        .arg(module(rule))
        .args(args)
        .args(["-o", "json"])
        .current_dir(root())
        .output()
        .expect("olm-guard run");
    let review: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "olm-guard run {args:?}: {e}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    // `--object` prints a List of reviews (one per object), `--request`
    // the review itself.
    let review = match review["kind"].as_str() {
        Some("List") => &review["items"][0],
        _ => &review,
    };
    let response = &review["response"];
    (
        response["allowed"].as_bool().expect("response.allowed"),
        response["status"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Scenarios of every module: denials and admissions, settings, a
/// mutation, and cluster snapshots for the context-aware rules.
const SCENARIOS: &[&str] = &[
    "catalog-union/r2-two-members-denied",
    "catalog-union/r2-image-source-accepted",
    "catalog-union/op-update-migrated",
    "og-intersection/csv-r6-conflict-denied",
    "og-intersection/csv-r6-kiali-add-allowed",
    "aggregation-escalation/covers-aggregate-to-view-denied",
    "aggregation-escalation/covers-cert-manager-allowed",
    "group-authorization/authz-bootstrap-roles-grant-nothing-denied",
    "group-authorization/authz-cluster-admin-binding-allowed",
    "revision-uniqueness/auto-increment-duplicate-still-denied",
    "scope-rbac/instance-bind-permission-one-namespace-denied",
    "scope-rbac/instance-bind-permission-allowed",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_gives_olm_guard_runs_verdict_on_testdata_scenarios() {
    let needs = needs();
    let page = Playground::open(&needs).await;
    page.load(&page.url).await;
    for scenario in SCENARIOS {
        let dir = root().join("testdata").join(scenario);
        let rule = scenario.split('/').next().unwrap();
        let expect: Value = serde_json::from_str(&read(&dir.join("expect.json"))).unwrap();
        let mut fields = json!({"request": read(&dir.join("request.json"))});
        let mut args = vec![
            "--request".to_string(),
            dir.join("request.json").display().to_string(),
        ];
        for (field, file) in [("settings", "settings.json"), ("cluster", "cluster.yaml")] {
            let path = dir.join(file);
            if path.is_file() {
                fields[field] = json!(read(&path));
                args.push(format!("--{field}"));
                args.push(path.display().to_string());
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (allowed, message) = run(rule, &args);
        assert_eq!(
            Some(allowed),
            expect["allowed"].as_bool(),
            "{scenario}: olm-guard run disagrees with expect.json"
        );

        page.fill(rule, &fields).await;
        let shown = page.shown().await;
        page.screenshot(&scenario.replace('/', "--")).await;
        assert_eq!(
            (shown.allowed, shown.message.as_str()),
            (allowed, message.as_str()),
            "{scenario}: the page shows `{}`",
            shown.verdict
        );
        if expect["mutated"] == json!(true) {
            let diff = page.text("#diff").await;
            assert!(
                shown.verdict.contains("mutated") && diff.lines().any(|l| l.starts_with('+')),
                "{scenario}: the mutation is shown: {} / {diff}",
                shown.verdict
            );
        }
    }
    page.close().await;
}

/// A CatalogSource of today's CRD: one source member, allowed.
const CATALOG_SOURCE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: operatorhubio-catalog
  namespace: olm
spec:
  displayName: Community Operators
  catalogImageSource:
    catalogImage: quay.io/operatorhubio/catalog:latest";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_into_the_object_re_evaluates() {
    let needs = needs();
    let page = Playground::open(&needs).await;
    page.load(&page.url).await;
    page.fill("catalog-union", &json!({"object": CATALOG_SOURCE}))
        .await;
    let before = page.shown().await;
    let work = tempfile::tempdir().unwrap();
    let object = work.path().join("object.yaml");
    std::fs::write(&object, CATALOG_SOURCE).unwrap();
    let expected = run("catalog-union", &["--object", object.to_str().unwrap()]);
    assert_eq!((before.allowed, before.message.clone()), expected);
    assert!(before.allowed, "today's CRD form is allowed: {before:?}");
    page.screenshot("edit-1-before").await;

    // Real keystrokes at the end of the editor: a second source, `address`,
    // beside the catalog image.
    let evaluations = page.evaluations().await;
    let editor = page
        .client
        .find(Locator::Id("object"))
        .await
        .expect("the object editor");
    editor.click().await.expect("the editor takes focus");
    // As after picking the first example; an edit must not leave it named.
    page.script("document.getElementById('example').value = '0'; return null;")
        .await;
    page.script("const e = document.getElementById('object'); e.setSelectionRange(e.value.length, e.value.length);")
        .await;
    editor
        .send_keys("\n  address: 10.0.0.1:50051")
        .await
        .expect("typing");
    page.wait_for(&format!(
        "Number(document.body.dataset.evaluations || 0) > {evaluations} && \
         document.getElementById('object').value.endsWith('50051')"
    ))
    .await;
    // The debounced evaluation of the last keystroke.
    let typed = page.inputs().await["object"].as_str().unwrap().to_string();
    assert!(typed.ends_with("\n  address: 10.0.0.1:50051"), "{typed}");
    std::fs::write(&object, &typed).unwrap();
    let expected = run("catalog-union", &["--object", object.to_str().unwrap()]);
    let deadline = Instant::now() + PATIENCE;
    let mut after = page.shown().await;
    while (after.allowed, after.message.clone()) != expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = page.shown().await;
    }
    page.screenshot("edit-2-after").await;
    assert_eq!(
        page.script("return document.getElementById('example').value;")
            .await,
        json!(""),
        "the example picker still names an example after the object was edited"
    );
    assert_eq!(
        (after.allowed, after.message.clone()),
        expected,
        "{after:?}"
    );
    assert!(!after.allowed, "two sources are denied: {after:?}");
    assert!(after.message.contains("address"), "{}", after.message);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_restores_the_inputs_and_the_verdict() {
    let needs = needs();
    let page = Playground::open(&needs).await;
    page.load(&page.url).await;
    // A context-aware example picked the way a user picks it.
    let dir = root().join("testdata/og-intersection/csv-r6-conflict-denied");
    page.fill(
        "og-intersection",
        &json!({
            "request": read(&dir.join("request.json")),
            "cluster": read(&dir.join("cluster.yaml")),
            "user": "ignored-beside-a-request",
        }),
    )
    .await;
    let inputs = page.inputs().await;
    let shown = page.shown().await;
    assert!(!shown.allowed, "{shown:?}");
    page.client
        .find(Locator::Id("share"))
        .await
        .expect("the share button")
        .click()
        .await
        .expect("a click");
    page.wait_for("document.getElementById('share-link').value.includes('#')")
        .await;
    let link = page
        .script("return document.getElementById('share-link').value")
        .await;
    let link = link.as_str().unwrap().to_string();
    page.screenshot("share-1-link").await;

    page.client.goto("about:blank").await.unwrap();
    page.load(&link).await;
    page.screenshot("share-2-restored").await;
    assert_eq!(page.inputs().await, inputs, "the link restores every input");
    assert_eq!(page.shown().await, shown, "and the verdict");
    page.close().await;
}
