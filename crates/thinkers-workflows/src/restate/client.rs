//! Talking to a Restate server: submitting workflows and resolving approvals through its
//! ingress, registering a deployment through its admin API, and the listener several service
//! processes share.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::net::TcpListener;

use super::SERVICE;
use super::service::{DecisionMessage, Submission};
use crate::{WorkflowId, WorkflowRegistry, Workflows};
use thinkers::durable::{Approval, ApprovalStatus};
use thinkers::{Error, Result};

/// A Restate server's ingress (`http://host:8080`).
#[derive(Debug, Clone)]
pub struct RestateIngress {
    base: String,
    http: reqwest::Client,
}

fn http_error(step: &str, url: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::external("restate", step, format!("{url}: {e}")).with_source(e)
}

async fn post(http: &reqwest::Client, step: &str, url: &str, body: &Value) -> Result<String> {
    let response = http
        .post(url)
        .json(body)
        .send()
        .await
        .map_err(|e| http_error(step, url, e))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| http_error(step, url, e))?;
    if !status.is_success() {
        let text: String = text.chars().take(500).collect();
        return Err(Error::external(
            "restate",
            step,
            format!("{url} answered {status}: {text}"),
        ));
    }
    Ok(text)
}

impl RestateIngress {
    /// The ingress at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            base: url.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Check `name` and `input` against `registry`, note the workflow in `workflows` and start
    /// it on Restate; its id is the Restate workflow key.
    pub async fn submit(
        &self,
        workflows: &Workflows,
        registry: &WorkflowRegistry,
        name: &str,
        input: Value,
    ) -> Result<WorkflowId> {
        registry.check(name, &input)?;
        self.submit_unchecked(workflows, name, input).await
    }

    /// [`RestateIngress::submit`] without checking the name and input against a registry (the
    /// service process fails a workflow it does not know with an error naming it).
    pub async fn submit_unchecked(
        &self,
        workflows: &Workflows,
        name: &str,
        input: Value,
    ) -> Result<WorkflowId> {
        let id = WorkflowId::new();
        let store = workflows.store();
        store.note_workflow(id, name, &input.to_string()).await?;
        let url = format!("{}/{SERVICE}/{id}/run/send", self.base);
        let body = serde_json::to_value(Submission {
            name: name.to_owned(),
            input,
        })
        .map_err(|e| {
            Error::system("restate submit", "the submission did not serialize").with_source(e)
        })?;
        if let Err(e) = post(&self.http, "submit", &url, &body).await {
            store.engine_fail(id, &e.to_string()).await.ok();
            return Err(e);
        }
        Ok(id)
    }

    /// Resolve the durable promise `approval`'s workflow waits on (after the decision was
    /// stored with [`thinkers::durable::StepStore::decide`]). A promise already resolved stays as
    /// it was.
    pub async fn decide(&self, approval: &Approval) -> Result<()> {
        let status = match approval.status {
            ApprovalStatus::Pending => {
                return Err(Error::invalid_input(
                    "approval",
                    Some(approval.id.clone()),
                    "is still pending: decide it in the store first",
                ));
            }
            s => s.as_str().to_owned(),
        };
        let url = format!("{}/{SERVICE}/{}/decide", self.base, approval.run);
        let body = serde_json::to_value(DecisionMessage {
            approval: approval.id.clone(),
            status,
        })
        .map_err(|e| {
            Error::system("restate decide", "the decision did not serialize").with_source(e)
        })?;
        post(&self.http, "decide", &url, &body).await.map(drop)
    }
}

/// Register the service deployment at `deployment` (`http://host:port`) with the Restate
/// server whose admin API is at `admin` (`http://host:9070`); registering the same deployment
/// again replaces it.
pub async fn register_deployment(admin: &str, deployment: &str) -> Result<()> {
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let body = serde_json::json!({"uri": deployment, "force": true});
    post(&reqwest::Client::new(), "register deployment", &url, &body)
        .await
        .map(drop)
}

/// A listener on `addr` with `SO_REUSEPORT`, so several service processes on one host serve the
/// same deployment URL: the kernel spreads connections among them, and a connection the server
/// opens after one of them died reaches a live one.
pub fn reuse_port_listener(addr: SocketAddr) -> Result<TcpListener> {
    let bind = |e: std::io::Error| {
        Error::external("restate service", "listen", format!("{addr}: {e}")).with_source(e)
    };
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(bind)?;
    socket.set_reuseaddr(true).map_err(bind)?;
    #[cfg(unix)]
    socket.set_reuseport(true).map_err(bind)?;
    socket.bind(addr).map_err(bind)?;
    socket.listen(1024).map_err(bind)
}
