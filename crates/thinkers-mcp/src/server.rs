//! Reaching an MCP server and listing its tools.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::call::McpTool;
use super::snake_case;
use thinkers::tool::ToolProvider;
use thinkers::{Error, Result};

/// How to reach one MCP server.
#[derive(Debug, Clone)]
pub struct McpServer {
    name: String,
    transport: Transport,
    call_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
    },
}

impl McpServer {
    /// A server started as a child process speaking MCP over its stdin and stdout. Its stderr is
    /// forwarded to the log (`tracing`, debug level). Named after the command's file name.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let command = command.into();
        let name = std::path::Path::new(&command)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("mcp")
            .to_owned();
        Self {
            name,
            transport: Transport::Stdio {
                command,
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
            call_timeout: Duration::from_secs(60),
        }
    }

    /// A server reached over streamable HTTP at `url` (for example `http://127.0.0.1:3001/mcp`).
    /// Named after the URL's host and port.
    pub fn http(url: impl Into<String>) -> Self {
        let url = url.into();
        let name = url::Url::parse(&url)
            .ok()
            .and_then(|u| {
                let host = u.host_str()?.to_owned();
                Some(match u.port() {
                    Some(p) => format!("{host}:{p}"),
                    None => host,
                })
            })
            .unwrap_or_else(|| url.clone());
        Self {
            name,
            transport: Transport::Http { url },
            call_timeout: Duration::from_secs(60),
        }
    }

    /// Name the server; errors name it as the service that failed.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Set an environment variable of a stdio server's process. No effect on an HTTP server.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Bound each `tools/call` (default 60 s). A call without an answer by then fails as an
    /// external-service failure.
    #[must_use]
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = limit;
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn start(&self) -> Result<RunningService<RoleClient, ()>> {
        let initialize = |detail: String| Error::external(&self.name, "initialize", detail);
        match &self.transport {
            Transport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        initialize(format!("could not start {command:?}: {e}")).with_source(e)
                    })?;
                if let Some(stderr) = stderr {
                    let name = self.name.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(server = %name, "{line}");
                        }
                    });
                }
                ().serve(transport)
                    .await
                    .map_err(|e| initialize(e.to_string()).with_source(e))
            }
            Transport::Http { url } => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                ().serve(transport)
                    .await
                    .map_err(|e| initialize(e.to_string()).with_source(e))
            }
        }
    }
}

/// The live connection every tool of a toolset shares.
pub(crate) struct Connection {
    pub(crate) server: String,
    pub(crate) call_timeout: Duration,
    pub(crate) service: RunningService<RoleClient, ()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The tools of one connected MCP server.
#[derive(Debug, Clone)]
pub struct McpToolset {
    connection: Arc<Connection>,
    tools: Vec<Arc<McpTool>>,
}

impl McpToolset {
    /// Reach the server, perform the MCP handshake and list its tools (every page).
    ///
    /// Fails with [`Error::ExternalService`] naming the server and the step (`initialize` or
    /// `tools/list`) when the server cannot be started or reached or answers wrongly.
    pub async fn connect(server: McpServer) -> Result<Self> {
        let service = server.start().await?;
        let listed = service.list_all_tools().await.map_err(|e| {
            Error::external(&server.name, "tools/list", e.to_string()).with_source(e)
        })?;
        let connection = Arc::new(Connection {
            server: server.name.clone(),
            call_timeout: server.call_timeout,
            service,
        });
        let mut taken = HashSet::new();
        let mut tools = Vec::with_capacity(listed.len());
        for tool in listed {
            let base = snake_case(&tool.name);
            let mut name = base.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            tools.push(Arc::new(McpTool::new(connection.clone(), name, tool)));
        }
        tracing::debug!(server = %server.name, tools = tools.len(), "connected to MCP server");
        Ok(Self { connection, tools })
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.connection.server
    }

    /// The tools, in the order the server listed them.
    pub fn tools(&self) -> &[Arc<McpTool>] {
        &self.tools
    }

    /// A tool by its (snake_case) name.
    pub fn get(&self, name: &str) -> Option<Arc<McpTool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// The tools as providers, for a registry or a thinker's palette.
    pub fn providers(&self) -> Vec<Arc<dyn ToolProvider>> {
        self.tools
            .iter()
            .map(|t| t.clone() as Arc<dyn ToolProvider>)
            .collect()
    }
}
