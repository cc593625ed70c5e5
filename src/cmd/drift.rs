//! `driftd drift`: the current drift from a running daemon, as a table or JSON. Objects an
//! uncommitted apply changed are followed by the intent that applied them and the two ways
//! out.

use driftd_core::report::{
    DriftClass, DriftEntry, DriftFilter, DriftResponse, IntentRef, StaleKind,
};
use driftd_core::text::escape_control;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::process::ExitCode;

pub use super::Format;

/// Which daemon to ask and how to print its answer: shared by `drift` and `locks`.
#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// Base URL of the daemon.
    #[arg(long, env = "DRIFTD_SERVER", default_value = "http://127.0.0.1:9477")]
    pub server: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// A file holding the bearer token to send, for a daemon with `[http] auth =
    /// "kubernetes"` (e.g. `<(kubectl create token NAME -n NS)`); a file, so the token is in
    /// no process list.
    #[arg(long, env = "DRIFTD_TOKEN_FILE")]
    pub token_file: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub daemon: ServerArgs,
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
    /// Entries per request, as kubectl's `--chunk-size`: every page is fetched and printed
    /// as one list. Default: the daemon's page size (500); it answers at most 5000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_size: Option<u64>,
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
    let body = follow_pages(
        |limit, token| {
            let limit = limit.or(args.chunk_size.map(|n| n as usize));
            fetch_page(&args.daemon, &filter, limit, token)
        },
        |warning| eprintln!("driftd drift: {warning}"),
    )?;
    match args.daemon.format {
        Format::Json => println!("{}", render_json(&body)?),
        Format::Table => print!("{}", render_table(&body)),
    }
    Ok(ExitCode::SUCCESS)
}

/// GETs `path` of the daemon `daemon` names with `query` (and its token, if any) and reads
/// the JSON body as `T`.
pub fn fetch<T: DeserializeOwned>(
    daemon: &ServerArgs,
    path: &str,
    query: &[(&str, String)],
) -> anyhow::Result<T> {
    let (url, status, body) = get(daemon, path, query)?;
    if !status.is_success() {
        anyhow::bail!(
            "{}",
            failure(&url, status, &body, daemon.token_file.is_some())
        );
    }
    serde_json::from_str::<T>(&body)
        .map_err(|e| anyhow::anyhow!("{url} did not answer with a {path} body: {e}"))
}

/// The URL asked, and the status and body of the answer, whatever the status.
fn get(
    daemon: &ServerArgs,
    path: &str,
    query: &[(&str, String)],
) -> anyhow::Result<(String, reqwest::StatusCode, String)> {
    let url = format!("{}{path}", daemon.server.trim_end_matches('/'));
    let token = match &daemon.token_file {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("cannot read --token-file {}: {e}", file.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    super::runtime()?.block_on(async {
        let mut request = reqwest::Client::new().get(&url).query(query);
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot reach driftd at {url}: {e}; is `driftd serve` running there? (--server)"
            )
        })?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| anyhow::anyhow!("{url} answered {status} but its body broke off: {e}"))?;
        Ok((url, status, body))
    })
}

/// The error for a failed answer, with what to do next.
fn failure(url: &str, status: reqwest::StatusCode, body: &str, has_token: bool) -> String {
    let hint = match status.as_u16() {
        401 if !has_token => "; this daemon needs a token (--token-file)",
        401 => "; the API server does not accept the token in --token-file",
        403 => "; RBAC does not let the token's user get this path (docs/security.md)",
        _ => "",
    };
    format!(
        "{url} answered {status}: {}{hint}",
        escape_control(body.trim())
    )
}

/// One request for a page of `/drift`.
#[derive(Debug)]
enum PageAnswer {
    Page(DriftResponse),
    /// 410 `Expired`: the list's snapshot is gone (expired, or another replica answered);
    /// with the token that continues it from the current state, when given.
    Expired(Option<String>),
}

fn fetch_page(
    daemon: &ServerArgs,
    filter: &DriftFilter,
    limit: Option<usize>,
    continue_token: Option<&str>,
) -> anyhow::Result<PageAnswer> {
    let mut query = filter.to_pairs();
    if let Some(limit) = limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(token) = continue_token {
        query.push(("continue", token.to_string()));
    }
    let (url, status, body) = get(daemon, "/drift", &query)?;
    if status == reqwest::StatusCode::GONE {
        let status: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let token = status["metadata"]["continue"].as_str().map(str::to_string);
        return Ok(PageAnswer::Expired(token));
    }
    if !status.is_success() {
        anyhow::bail!(
            "{}",
            failure(&url, status, &body, daemon.token_file.is_some())
        );
    }
    let page = serde_json::from_str(&body)
        .map_err(|e| anyhow::anyhow!("{url} did not answer with a /drift body: {e}"))?;
    Ok(PageAnswer::Page(page))
}

/// What a restarted list asks for: the largest page the daemon answers, to need as few
/// pages (and as little time for the list to change) as it can.
const LARGEST_PAGE: usize = driftd_engine::MAX_PAGE_SIZE;

/// Every page of the list, as client-go's pager reads one
/// (`staging/src/k8s.io/client-go/tools/pager/pager.go`): follow `continue` until a page has
/// none. On 410 `Expired` the list starts again, as the pager falls back to a full list; here
/// in the largest pages, since the daemon bounds a page. Expired again (several replicas
/// behind a Service answer in turn, each without the other's snapshot), it continues with
/// the 410's token from the current state, as kube-apiserver offers, and says so on stderr.
fn follow_pages(
    mut fetch: impl FnMut(Option<usize>, Option<&str>) -> anyhow::Result<PageAnswer>,
    mut warn: impl FnMut(&str),
) -> anyhow::Result<DriftResponse> {
    let mut limit = None;
    let mut restarted = false;
    let mut warned = false;
    'list: loop {
        let mut list: Option<DriftResponse> = None;
        let mut token: Option<String> = None;
        loop {
            match fetch(limit, token.as_deref())? {
                PageAnswer::Page(mut page) => {
                    let next = page.continue_token.take();
                    page.remaining_item_count = None;
                    list = Some(match list {
                        None => page,
                        Some(mut list) => {
                            list.ready &= page.ready;
                            list.stale = page.stale;
                            list.no_events = page.no_events;
                            list.objects.append(&mut page.objects);
                            list
                        }
                    });
                    match next {
                        Some(next) => token = Some(next),
                        None => return Ok(list.expect("a page was read")),
                    }
                }
                PageAnswer::Expired(_) if !restarted => {
                    restarted = true;
                    limit = Some(LARGEST_PAGE);
                    continue 'list;
                }
                PageAnswer::Expired(Some(next)) => {
                    if !std::mem::replace(&mut warned, true) {
                        warn(
                            "the list expired while paging twice (another replica answered, or \
                         it took over 5 minutes); the rest is the current state, so objects \
                         that changed meanwhile may be missing or repeated",
                        );
                    }
                    token = Some(next);
                }
                PageAnswer::Expired(None) => {
                    anyhow::bail!("the daemon answered 410 Expired without a continue token")
                }
            }
        }
    }
}

/// Renders `/drift` as kubectl-style columns, one row per change.
/// The response, pretty-printed through a `Value`: an entry's changes and patch are held as
/// compact JSON text, which a pretty printer would otherwise copy as it is.
fn render_json(body: &DriftResponse) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&serde_json::to_value(body)?)
}

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
            match (o.stale, o.scope.is_some()) {
                (true, _) => format!("{} (stale)", o.class),
                (false, true) => format!("{} (scope unresolved)", o.class),
                (false, false) => o.class.to_string(),
            },
            o.since.map(drifting_for).unwrap_or_default(),
        ];
        if o.changes.is_empty() {
            let mut row = base.clone();
            // Who deleted a missing object, when audit events said.
            let deleted_by = o
                .who
                .iter()
                .flat_map(|w| w.iter())
                .find(|w| w.manager.is_empty())
                .map(|w| format!("{} ({})", w.person(), w.verb))
                .unwrap_or_default();
            row.extend(["".into(), "".into(), "".into(), deleted_by]);
            rows.push(row);
        }
        for c in &o.changes.to_vec() {
            let mut row = base.clone();
            row.push(c.field.clone());
            row.push(short(c.desired.as_ref()));
            row.push(short(c.live.as_ref()));
            row.push(by(o, c));
            rows.push(row);
        }
    }
    let mut out = String::new();
    // First, in plain words: what follows may be out of date, or go unannounced.
    if let Some(why) = &body.no_events {
        out.push_str(&escape_control(&format!(
            "this replica publishes no Kubernetes Events: {why}"
        )));
        out.push('\n');
    }
    if let Some(line) = StaleKind::summary(&body.stale) {
        out.push_str(&escape_control(&line));
        out.push('\n');
    }
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
    let now = jiff::Timestamp::now();
    for paragraph in [
        render_undo(&body.objects),
        render_intents(&body.objects, now),
        render_stale_config(&body.objects, now),
    ] {
        // Line by line: the line breaks are the paragraph's own, anything else is escaped.
        for line in paragraph.lines() {
            out.push_str(&escape_control(line));
            out.push('\n');
        }
    }
    out
}

/// Who wrote change `c` last: the person audit events named with their tool
/// (`alice (kubectl-patch)`), else the field manager alone.
fn by(o: &DriftEntry, c: &driftd_core::diff::Change) -> String {
    let manager = c.manager.clone().unwrap_or_default();
    let person = o.who.iter().flat_map(|w| w.iter()).find(|w| {
        Some(w.manager.as_str()) == c.manager.as_deref()
            && w.changed_at.as_deref() == c.changed_at.as_deref()
    });
    match person {
        Some(w) => format!("{} ({manager})", w.person()),
        None => manager,
    }
}

/// For workloads with pods on stale config: per config, when it changed and which pods read
/// it how, then the command that replaces the pods.
fn render_stale_config(objects: &[DriftEntry], now: jiff::Timestamp) -> String {
    let mut out = String::new();
    for o in objects {
        let Some(note) = &o.stale_config else {
            continue;
        };
        out.push_str(&format!(
            "
{} {}/{} runs {} pod(s) on config older than the live one:
",
            o.kind,
            o.namespace.as_deref().unwrap_or_default(),
            o.name,
            note.pod_count()
        ));
        for c in &note.configs {
            let pods: Vec<String> = c
                .pods
                .iter()
                .map(|p| format!("{} ({})", p.name, p.reads.join(", ")))
                .collect();
            out.push_str(&format!(
                "  {} changed {} ago; read by {}\n",
                c.config,
                super::common::table::human_age(now, c.changed_at),
                pods.join(", ")
            ));
        }
        out.push_str(&format!("  fix:  {}\n", note.fix));
    }
    out
}

/// For objects a command puts back as committed (not those of an unfinished deploy, which
/// `render_intents` explains): that command, object by object.
fn render_undo(objects: &[DriftEntry]) -> String {
    let mut out = String::new();
    for o in objects.iter().filter(|o| o.intent.is_none()) {
        if let Some(undo) = o.undo_command() {
            if out.is_empty() {
                out.push_str(
                    "\nundo (puts the object back as its source's newest revision has it):\n",
                );
            }
            let name = match &o.namespace {
                Some(ns) => format!("{ns}/{}", o.name),
                None => o.name.clone(),
            };
            out.push_str(&format!("  {} {name}:  {undo}\n", o.kind));
        }
    }
    out
}

/// For `uncommitted` objects: each intent that applied them, with how to keep the change and
/// how to undo it, object by object.
fn render_intents(objects: &[DriftEntry], now: jiff::Timestamp) -> String {
    let mut by_intent: BTreeMap<i64, (&IntentRef, Vec<&DriftEntry>)> = BTreeMap::new();
    for o in objects {
        if let Some(intent) = &o.intent {
            by_intent
                .entry(intent.id)
                .or_insert((intent, vec![]))
                .1
                .push(o);
        }
    }
    let mut out = String::new();
    for (intent, entries) in by_intent.values() {
        out.push_str(&format!(
            "\nintent {} ({}, held by {}, begun {} ago by {}) applied {} without committing:\n",
            intent.id,
            intent.state,
            intent.holder,
            super::common::table::human_age(now, intent.created_at),
            intent.author,
            match entries.len() {
                1 => "1 object".to_string(),
                n => format!("{n} objects"),
            }
        ));
        out.push_str(&format!("  keep it:  {}\n", intent.keep));
        for o in entries {
            let name = match &o.namespace {
                Some(ns) => format!("{ns}/{}", o.name),
                None => o.name.clone(),
            };
            out.push_str(&format!(
                "  undo {} {name}:  {}\n",
                o.kind,
                o.intent.as_ref().map_or("", |i| &i.revert)
            ));
        }
    }
    if !out.is_empty() {
        out.push_str("(patches: driftd drift --class uncommitted --format json)\n");
    }
    out
}

/// How long an object has drifted, kubectl AGE style ("45s", "3m", "2d4h").
fn drifting_for(since: jiff::Timestamp) -> String {
    super::common::table::human_age(jiff::Timestamp::now(), since)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_config_workloads_are_followed_by_their_pods_and_the_fix() {
        let body: DriftResponse = serde_json::from_value(serde_json::json!({
            "ready": true,
            "objects": [{
                "source": "shop", "revision": 3, "apiVersion": "apps/v1", "kind": "Deployment",
                "namespace": "shop", "name": "web", "class": "stale_config",
                "since": "2026-01-01T10:05:00Z", "changes": [],
                "stale_config": {
                    "fix": "kubectl rollout restart deployment/web -n shop",
                    "configs": [{"config": "Secret/web-db", "changed_at": "2026-01-01T10:05:00Z",
                                 "pods": [{"name": "web-1", "started_at": "2026-01-01T09:00:00Z", "reads": ["env"]},
                                          {"name": "web-2", "started_at": "2026-01-01T09:00:00Z", "reads": ["envFrom", "subPath"]}]}]
                }
            }]
        }))
        .unwrap();
        let text = render_stale_config(&body.objects, "2026-01-01T10:12:00Z".parse().unwrap());
        assert_eq!(
            text,
            "\nDeployment shop/web runs 2 pod(s) on config older than the live one:\n  \
             Secret/web-db changed 7m ago; read by web-1 (env), web-2 (envFrom, subPath)\n  \
             fix:  kubectl rollout restart deployment/web -n shop\n"
        );
        // In the table too: real line breaks (never an escaped `\n`), a final one included.
        let table = render_table(&body);
        assert!(table.contains("stale_config"));
        assert!(!table.contains("\\n"), "{table}");
        assert!(
            table.ends_with("\n  fix:  kubectl rollout restart deployment/web -n shop\n"),
            "{table}"
        );
    }

    #[test]
    fn uncommitted_rows_are_followed_by_their_intent_and_the_ways_out() {
        let body: DriftResponse = serde_json::from_value(serde_json::json!({
            "ready": true,
            "objects": [{
                "source": "shop", "revision": 3, "apiVersion": "apps/v1", "kind": "Deployment",
                "namespace": "shop", "name": "web", "class": "uncommitted",
                "since": "2026-01-01T10:05:00Z",
                "changes": [{"path": "/spec/template/spec/containers/0/image", "op": "replace",
                             "desired": "nginx:1.27", "live": "nginx:1.28",
                             "field": "spec.template.spec.containers[name=app].image"}],
                "intent": {"id": 7, "state": "interrupted", "holder": "pod:ci/deploy-x",
                           "author": "alice", "created_at": "2026-01-01T10:00:00Z",
                           "keep": "driftd intent commit 7",
                           "revert": "apply this entry's `patch` to the live object, then `driftd intent release 7`"}
            }]
        }))
        .unwrap();
        let text = render_intents(&body.objects, "2026-01-01T10:12:00Z".parse().unwrap());
        assert_eq!(
            text,
            "\nintent 7 (interrupted, held by pod:ci/deploy-x, begun 12m ago by alice) applied 1 object without committing:\n  \
             keep it:  driftd intent commit 7\n  \
             undo Deployment shop/web:  apply this entry's `patch` to the live object, then `driftd intent release 7`\n\
             (patches: driftd drift --class uncommitted --format json)\n"
        );
        assert!(render_table(&body).contains("keep it:  driftd intent commit 7"));
    }

    /// A page of `/drift` holding ConfigMaps `names`, continued by `next`.
    fn page(names: &[&str], next: Option<&str>) -> PageAnswer {
        let objects: Vec<serde_json::Value> = names
            .iter()
            .map(|name| {
                serde_json::json!({
                    "source": "shop", "revision": 1, "apiVersion": "v1", "kind": "ConfigMap",
                    "namespace": "shop", "name": name, "class": "missing", "changes": []
                })
            })
            .collect();
        let mut body = serde_json::json!({"ready": true, "objects": objects});
        if let Some(next) = next {
            body["continue"] = next.into();
            body["remainingItemCount"] = 1.into();
        }
        PageAnswer::Page(serde_json::from_value(body).unwrap())
    }

    fn names(body: &DriftResponse) -> Vec<&str> {
        body.objects.iter().map(|o| o.name.as_str()).collect()
    }

    #[test]
    fn every_page_is_followed_and_an_expired_list_starts_again_in_the_largest_pages() {
        // (limit, token) asked, and what the daemon answers.
        let mut asked = Vec::new();
        let mut warnings = Vec::new();
        let body = follow_pages(
            |limit, token| {
                asked.push((limit, token.map(str::to_string)));
                Ok(match (limit, token) {
                    (None, None) => page(&["a"], Some("t1")),
                    (None, Some("t1")) => PageAnswer::Expired(Some("after-a".into())),
                    (Some(LARGEST_PAGE), None) => page(&["a", "b"], Some("t2")),
                    (Some(LARGEST_PAGE), Some("t2")) => page(&["c"], None),
                    other => panic!("unexpected request {other:?}"),
                })
            },
            |w| warnings.push(w.to_string()),
        )
        .unwrap();
        assert_eq!(names(&body), ["a", "b", "c"], "the restarted list only");
        assert_eq!(body.continue_token, None);
        assert_eq!(body.remaining_item_count, None);
        assert_eq!(asked.len(), 4);
        assert!(warnings.is_empty());
    }

    #[test]
    fn expired_again_it_continues_from_the_current_state_and_says_so_once() {
        let mut warnings = Vec::new();
        let body = follow_pages(
            |limit, token| {
                Ok(match (limit, token) {
                    (_, None) => page(&["a"], Some("snap")),
                    (_, Some("snap")) => PageAnswer::Expired(Some("after-a".into())),
                    (Some(LARGEST_PAGE), Some("after-a")) => page(&["b"], Some("snap2")),
                    (Some(LARGEST_PAGE), Some("snap2")) => {
                        PageAnswer::Expired(Some("after-b".into()))
                    }
                    (Some(LARGEST_PAGE), Some("after-b")) => page(&["c"], None),
                    other => panic!("unexpected request {other:?}"),
                })
            },
            |w| warnings.push(w.to_string()),
        )
        .unwrap();
        assert_eq!(names(&body), ["a", "b", "c"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("current state"));
    }

    #[test]
    fn the_by_column_names_the_person_audit_events_named_else_the_manager() {
        let body: DriftResponse = serde_json::from_value(serde_json::json!({
            "ready": true,
            "objects": [{
                "source": "shop", "revision": 1, "apiVersion": "v1", "kind": "ConfigMap",
                "namespace": "shop", "name": "web-config", "class": "modified",
                "since": "2026-01-01T10:00:00Z",
                "changes": [
                    {"path": "/data/A", "op": "replace", "desired": "1", "live": "2",
                     "field": "data.A", "manager": "kubectl-patch",
                     "changed_at": "2026-01-01T09:59:58Z"},
                    {"path": "/data/B", "op": "replace", "desired": "1", "live": "2",
                     "field": "data.B", "manager": "kubectl-edit",
                     "changed_at": "2026-01-01T09:59:59Z"}
                ],
                "who": [{"manager": "kubectl-patch", "changed_at": "2026-01-01T09:59:58Z",
                         "user": {"username": "alice"}, "verb": "patch", "auditID": "a1",
                         "matched": "metadata"}]
            }]
        }))
        .unwrap();
        let table = render_table(&body);
        let a = table.lines().find(|l| l.contains("data.A")).unwrap();
        assert!(a.trim_end().ends_with("alice (kubectl-patch)"), "{table}");
        let b = table.lines().find(|l| l.contains("data.B")).unwrap();
        assert!(b.trim_end().ends_with("kubectl-edit"), "{table}");
        assert!(!b.contains("alice"), "{table}");
    }

    #[test]
    fn json_output_is_pretty_inside_changes_and_patches_too() {
        let object = serde_json::json!({
            "source": "shop", "revision": 3, "apiVersion": "v1", "kind": "ConfigMap",
            "namespace": "shop", "name": "web", "class": "modified",
            "since": "2026-01-01T10:05:00Z",
            "changes": [{"path": "/data/color", "op": "replace", "desired": "blue",
                         "live": "red", "field": "data.color"}],
            "patch": [{"op": "replace", "path": "/data/color", "value": "blue"}]
        });
        let body: DriftResponse =
            serde_json::from_value(serde_json::json!({"ready": true, "objects": [object]}))
                .unwrap();
        let text = render_json(&body).unwrap();
        assert!(
            text.contains("\n          \"path\": \"/data/color\",\n"),
            "{text}"
        );
        assert!(text.contains("\"value\": \"blue\"\n"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["objects"][0]["changes"], object["changes"]);
        assert_eq!(back["objects"][0]["patch"], object["patch"]);
    }
}
