//! `driftd drift`: the current drift from a running daemon, as a table or JSON.

use driftd_core::report::{DriftClass, DriftFilter, DriftResponse};
use driftd_core::text::escape_control;
use std::process::ExitCode;

pub use super::Format;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Base URL of the daemon.
    #[arg(long, env = "DRIFTD_SERVER", default_value = "http://127.0.0.1:9477")]
    pub server: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Only this source.
    #[arg(long)]
    pub source: Option<String>,
    /// Only this namespace.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Only this kind (e.g. Deployment).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only this class (in_sync, modified, missing, ...); default: every drifting class.
    #[arg(long)]
    pub class: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Checked here too, so a typo is named before any request is made.
    let class = args
        .class
        .as_deref()
        .map(str::parse::<DriftClass>)
        .transpose()?;
    let filter = DriftFilter {
        source: args.source,
        namespace: args.namespace,
        kind: args.kind,
        class,
    };
    let url = format!("{}/drift", args.server.trim_end_matches('/'));
    let body: DriftResponse = super::runtime()?.block_on(async {
        let response = reqwest::Client::new()
            .get(&url)
            .query(&filter.to_pairs())
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach driftd at {url}: {e}; is `driftd serve` running there? (--server)"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            anyhow::bail!("{url} answered {status}: {}", escape_control(text.trim()));
        }
        response
            .json::<DriftResponse>()
            .await
            .map_err(|e| anyhow::anyhow!("{url} did not answer with a /drift body: {e}"))
    })?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&body)?),
        Format::Table => print!("{}", render_table(&body)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders `/drift` as kubectl-style columns, one row per change.
pub fn render_table(body: &DriftResponse) -> String {
    let mut rows = vec![[
        "SOURCE",
        "NAMESPACE",
        "KIND",
        "NAME",
        "CLASS",
        "DRIFTING",
        "FIELD",
        "DESIRED",
        "LIVE",
        "BY",
    ]
    .map(String::from)
    .to_vec()];
    for o in &body.objects {
        let base = vec![
            o.source.clone(),
            o.namespace.clone().unwrap_or_default(),
            o.kind.clone(),
            o.name.clone(),
            o.class.to_string(),
            o.since.map(drifting_for).unwrap_or_default(),
        ];
        if o.changes.is_empty() {
            let mut row = base.clone();
            row.extend(["".into(), "".into(), "".into(), "".into()]);
            rows.push(row);
        }
        for c in &o.changes {
            let mut row = base.clone();
            row.push(c.field.clone());
            row.push(short(c.desired.as_ref()));
            row.push(short(c.live.as_ref()));
            row.push(c.manager.clone().unwrap_or_default());
            rows.push(row);
        }
    }
    let mut out = String::new();
    if body.objects.is_empty() {
        out.push_str("No drift.\n");
        if !body.ready {
            out.push_str("(driftd is not ready yet: watchers are still listing)\n");
        }
        return out;
    }
    // Names and values come from whoever can write to the cluster: control characters are
    // shown escaped, never sent to the terminal.
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| escape_control(c).into_owned()).collect())
        .collect();
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// How long an object has drifted, kubectl AGE style ("45s", "3m", "2d4h").
fn drifting_for(since: jiff::Timestamp) -> String {
    super::sources::human_age(jiff::Timestamp::now(), since)
}

/// A value as one short cell: strings bare, others as compact JSON, cut at 40 characters.
fn short(value: Option<&serde_json::Value>) -> String {
    let s = match value {
        None => "<none>".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s
    }
}
