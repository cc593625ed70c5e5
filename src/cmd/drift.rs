//! `driftd drift`: the current drift from a running daemon, as a table or JSON.

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
    let mut query = Vec::new();
    for (k, v) in [
        ("source", &args.source),
        ("namespace", &args.namespace),
        ("kind", &args.kind),
        ("class", &args.class),
    ] {
        if let Some(v) = v {
            query.push((k, v.clone()));
        }
    }
    let url = format!("{}/drift", args.server.trim_end_matches('/'));
    let body: serde_json::Value = super::runtime()?.block_on(async {
        let response = reqwest::Client::new()
            .get(&url)
            .query(&query)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach driftd at {url}: {e}; is `driftd serve` running there? (--server)"))?;
        let status = response.status();
        if !status.is_success() {
            anyhow::bail!("{url} answered {status}");
        }
        Ok::<_, anyhow::Error>(response.json().await?)
    })?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&body)?),
        Format::Table => print!("{}", render_table(&body)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders `/drift` as kubectl-style columns, one row per change.
pub fn render_table(body: &serde_json::Value) -> String {
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string()
    };
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
    let objects = body
        .get("objects")
        .and_then(|o| o.as_array())
        .cloned()
        .unwrap_or_default();
    for o in &objects {
        let base = vec![
            text(o, "source"),
            text(o, "namespace"),
            text(o, "kind"),
            text(o, "name"),
            text(o, "class"),
            drifting_for(&text(o, "since")),
        ];
        let changes = o
            .get("changes")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        if changes.is_empty() {
            let mut row = base.clone();
            row.extend(["".into(), "".into(), "".into(), "".into()]);
            rows.push(row);
        }
        for c in &changes {
            let mut row = base.clone();
            row.push(text(c, "field"));
            row.push(short(c.get("desired")));
            row.push(short(c.get("live")));
            row.push(text(c, "manager"));
            rows.push(row);
        }
    }
    let mut out = String::new();
    if objects.is_empty() {
        out.push_str("No drift.\n");
        if body.get("ready") == Some(&serde_json::Value::Bool(false)) {
            out.push_str("(driftd is not ready yet: watchers are still listing)\n");
        }
        return out;
    }
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
fn drifting_for(since: &str) -> String {
    match since.parse::<jiff::Timestamp>() {
        Ok(t) => super::sources::human_age(jiff::Timestamp::now(), t),
        Err(_) => String::new(),
    }
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
