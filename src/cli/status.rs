//! `sparkwire status`: a running master's state (RequestMasterState) as tables, or as the JSON
//! its web UI's `/json` serves.

use std::process::ExitCode;

use clap::Args;
use sparkwire::messages::deploy::MasterStateResponse;
use sparkwire::messages::{ApplicationInfo, DriverInfo};
use sparkwire::node::url::MasterUrl;
use sparkwire::reference::clock::now_ms;
use sparkwire::reference::webui::{
    application_row, driver_row, master_json, APPLICATION_COLUMNS, DRIVER_COLUMNS,
};
use sparkwire::wire::handshake::Role;

use super::client::MasterClient;

/// Options of `sparkwire status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The master(s): sparkwire://HOST:PORT[,HOST:PORT…]; the first that answers is shown.
    master_url: String,
    /// Print the state as JSON (the web UI's /json, with Spark's field names).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    security: super::security::ClientSecurityArgs,
}

/// Runs the command: exit 0 when a master answered.
pub fn run(args: StatusArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    let url = MasterUrl::parse(&args.master_url).map_err(|e| e.to_string())?;
    let security = args.security.security()?;
    let runtime = super::runtime()?;
    let state = runtime.block_on(async {
        let client = MasterClient::connect_any(&url, Role::Ui, &security).await?;
        let state = client.master_state().await;
        client.conn.close().await;
        state
    })?;
    if args.json {
        let text = serde_json::to_string_pretty(&master_json(&state))
            .map_err(|e| format!("cannot write JSON: {e}"))?;
        println!("{text}");
    } else {
        print!("{}", render(&state, now_ms()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Columns padded to their widest cell, two spaces apart.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                let pad = widths[i].saturating_sub(c.chars().count());
                out.push_str(c);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn section(out: &mut String, title: &str, headers: &[&str], rows: &[Vec<String>]) {
    out.push_str(&format!("\n{title} ({})\n", rows.len()));
    if !rows.is_empty() {
        out.push_str(&table(headers, rows));
    }
}

/// The state as text: a summary line, then workers, applications and drivers as tables.
fn render(s: &MasterStateResponse, now: i64) -> String {
    let json = master_json(s);
    let n = |k: &str| json[k].as_i64().unwrap_or(0);
    let mut out = format!(
        "master {}  status {}\nworkers: {} alive; cores: {} total, {} used; memory: {} MiB total, {} MiB used\n",
        json["url"].as_str().unwrap_or(""),
        s.status,
        n("aliveworkers"),
        n("cores"),
        n("coresused"),
        n("memory"),
        n("memoryused"),
    );
    let workers: Vec<Vec<String>> = s
        .workers
        .iter()
        .map(|w| {
            vec![
                w.id.clone(),
                format!("{}:{}", w.host, w.port),
                w.state.to_string(),
                format!("{}/{}", w.cores_used, w.cores),
                format!("{}/{}", w.memory_used, w.memory),
                if w.web_ui_address.is_empty() {
                    "-".into()
                } else {
                    w.web_ui_address.clone()
                },
                w.spark_release.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    section(
        &mut out,
        "WORKERS",
        &[
            "ID",
            "ADDRESS",
            "STATE",
            "CORES USED/TOTAL",
            "MEMORY MiB USED/TOTAL",
            "WEB UI",
            "SPARK",
        ],
        &workers,
    );
    let app_headers = APPLICATION_COLUMNS.map(|c| c.to_uppercase());
    let mut app_headers: Vec<&str> = app_headers.iter().map(String::as_str).collect();
    app_headers.push("SPARK");
    let driver_headers = DRIVER_COLUMNS.map(|c| c.to_uppercase());
    let driver_headers: Vec<&str> = driver_headers.iter().map(String::as_str).collect();
    let apps = |list: &[ApplicationInfo]| -> Vec<Vec<String>> {
        list.iter()
            .map(|a| {
                let mut row = application_row(a, now);
                row.push(a.spark_release.clone().unwrap_or_else(|| "-".into()));
                row
            })
            .collect()
    };
    let drivers =
        |list: &[DriverInfo]| -> Vec<Vec<String>> { list.iter().map(driver_row).collect() };
    section(
        &mut out,
        "RUNNING APPLICATIONS",
        &app_headers,
        &apps(&s.active_apps),
    );
    section(
        &mut out,
        "RUNNING DRIVERS",
        &driver_headers,
        &drivers(&s.active_drivers),
    );
    // Why each waiting application and driver waits (SPEC §16), one line each: a reason is too
    // long for a table's column.
    let waiting: Vec<Vec<String>> = s
        .active_apps
        .iter()
        .map(|a| (&a.id, &a.waiting_reason))
        .chain(s.active_drivers.iter().map(|d| (&d.id, &d.waiting_reason)))
        .filter_map(|(id, why)| why.as_ref().map(|w| vec![id.clone(), w.clone()]))
        .collect();
    section(&mut out, "WAITING", &["ID", "REASON"], &waiting);
    section(
        &mut out,
        "COMPLETED APPLICATIONS",
        &app_headers,
        &apps(&s.completed_apps),
    );
    section(
        &mut out,
        "COMPLETED DRIVERS",
        &driver_headers,
        &drivers(&s.completed_drivers),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_columns_to_the_widest_cell() {
        let t = table(
            &["ID", "STATE"],
            &[
                vec!["worker-1".into(), "ALIVE".into()],
                vec!["w2".into(), "DEAD".into()],
            ],
        );
        assert_eq!(t, "ID        STATE\nworker-1  ALIVE\nw2        DEAD\n");
    }
}
