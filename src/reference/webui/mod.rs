//! The web UIs of the reference master and worker, as Spark's: an HTML page that refreshes
//! itself, `/json` with the state under the field names of Spark's `JsonProtocol`, and
//! `/metrics` in the Prometheus text format.
//!
//! The pages are rendered here from snapshots ([`MasterSnapshot`], [`WorkerSnapshot`]) built from
//! the same state the master and worker answer `RequestMasterState` and `RequestWorkerState`
//! with, so what the protocol hides (secrets) the pages hide too. The HTTP server (the `webui`
//! feature, hyper) serves them: set `MasterConfig::web_ui_port` or `WorkerConfig::web_ui_port`.
//!
//! ```
//! use sparkwire::messages::deploy::MasterStateResponse;
//! use sparkwire::messages::RecoveryState;
//! use sparkwire::reference::webui::master_json;
//!
//! let state = MasterStateResponse::new(
//!     "127.0.0.1".into(),
//!     7077,
//!     vec![],
//!     vec![],
//!     vec![],
//!     vec![],
//!     vec![],
//!     RecoveryState::Alive,
//! );
//! let json = master_json(&state);
//! assert_eq!(json["url"], "sparkwire://127.0.0.1:7077");
//! assert_eq!(json["aliveworkers"], 0);
//! assert_eq!(json["status"], "ALIVE");
//! ```

mod html;
mod master;
mod metrics;
#[cfg(feature = "webui")]
pub(crate) mod server;

#[cfg(feature = "webui")]
pub use server::fetch;
mod worker;

pub use master::{
    application_row, driver_row, master_html, master_json, master_metrics, MasterSnapshot,
    APPLICATION_COLUMNS, DRIVER_COLUMNS,
};
pub use worker::{worker_html, worker_json, worker_metrics, WorkerSnapshot};

/// A page to send: status code, content type, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Page {
    /// 200 with an HTML body.
    pub fn html(body: String) -> Page {
        Page {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body,
        }
    }

    /// 200 with a JSON body (pretty-printed, as Spark's).
    pub fn json(value: &serde_json::Value) -> Page {
        Page {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into()) + "\n",
        }
    }

    /// 200 in the Prometheus text format.
    pub fn metrics(body: String) -> Page {
        Page {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body,
        }
    }

    /// 200 with plain text.
    pub fn text(body: String) -> Page {
        Page {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body,
        }
    }

    /// An error status with a one-line explanation.
    pub fn error(status: u16, message: impl Into<String>) -> Page {
        Page {
            status,
            content_type: "text/plain; charset=utf-8",
            body: message.into() + "\n",
        }
    }
}

/// The URL of a web UI at `host:port`.
pub fn web_ui_url(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}
