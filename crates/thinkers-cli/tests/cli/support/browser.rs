//! Headless Chromium over the W3C WebDriver protocol (chromedriver, spoken to with reqwest), for
//! the browser tests of the chat page (crate `thinkers`) and of `thinkers serve`, which include
//! this one file. `browser()` is `None` (and says so) when
//! `THINKERS_CHROMIUM` and `THINKERS_CHROMEDRIVER` are not set; `scripts/test.sh` sets them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// A browser, or `None` with a loud note when none is installed.
pub(crate) async fn browser(test: &str) -> Option<Browser> {
    let (Ok(chromium), Ok(chromedriver)) = (
        std::env::var("THINKERS_CHROMIUM"),
        std::env::var("THINKERS_CHROMEDRIVER"),
    ) else {
        eprintln!(
            "\n*** SKIPPED {test}: THINKERS_CHROMIUM and THINKERS_CHROMEDRIVER are not set. \
             scripts/test.sh installs Debian's chromium and chromium-driver and sets them. ***\n"
        );
        return None;
    };
    Some(Browser::start(&chromium, &chromedriver).await)
}

/// Where screenshots go: `$CARGO_TARGET_DIR/screenshots/NAME` (else `target/screenshots`).
pub(crate) fn screenshot_path(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    target.join("screenshots").join(name)
}

/// The W3C key under which an element reference travels.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A WebDriver session on a chromedriver process this test started.
pub(crate) struct Browser {
    http: reqwest::Client,
    base: String,
    session: String,
    driver: Child,
}

impl Browser {
    pub(crate) async fn start(chromium: &str, chromedriver: &str) -> Self {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {chromedriver}: {e}"));
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        // Wait for the driver to listen (a hang guard, not a timing assertion).
        let mut ready = false;
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == json!(true)
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "chromedriver did not become ready on port {port}");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000"]
            }
        }}});
        let resp: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {resp}"))
            .to_owned();
        Self {
            http,
            base,
            session,
            driver,
        }
    }

    pub(crate) async fn cmd(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let req = self.http.request(method, url);
        let req = if body.is_null() { req } else { req.json(&body) };
        let resp: Value = req.send().await.unwrap().json().await.unwrap();
        if let Some(err) = resp["value"]["error"].as_str() {
            panic!("WebDriver {path}: {err}: {}", resp["value"]["message"]);
        }
        resp["value"].clone()
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", json!({"url": url}))
            .await;
    }

    pub(crate) async fn find(&self, css: &str) -> String {
        let v = self
            .cmd(
                reqwest::Method::POST,
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v[ELEMENT].as_str().unwrap().to_owned()
    }

    pub(crate) async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            json!({}),
        )
        .await;
    }

    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            json!({"text": text}),
        )
        .await;
    }

    pub(crate) async fn eval(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Evaluate `script` until `done` accepts its value (a hang guard of 30 s).
    pub(crate) async fn wait_for(&self, script: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..300 {
            let v = self.eval(script).await;
            if done(&v) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let v = self.eval(script).await;
        panic!("waited 30 s for `{script}`; last value {v}");
    }

    pub(crate) async fn screenshot(&self, path: &Path) {
        let v = self
            .cmd(reqwest::Method::GET, "/screenshot", Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    pub(crate) async fn quit(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
        let _ = self.driver.kill().await;
    }
}
