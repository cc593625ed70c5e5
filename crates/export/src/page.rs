//! The drift page at `/`: what `/drift` and `/locks` report, as one HTML page for the on-call
//! engineer who opens a browser before a terminal. Rendered here, on the server, from the
//! data the handlers already gather: no script, no external asset, no build step, and every
//! filter a query parameter, so a link shows what its sender saw. Everything printed that
//! came from the cluster or the store (names, values, managers, messages) is untrusted and
//! goes through [`escape_html`].

use driftd_core::diff::Change;
use driftd_core::report::{
    DriftClass, DriftEntry, DriftFilter, FilterError, StaleConfigNote, StaleKind, StaleLock,
};
use driftd_core::text::{escape_html, shell_quote};
use driftd_store::RevisionInfo;
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The values the filter form offers: every source, namespace and kind the index knows, not
/// only those of the objects shown, so a filter can be widened again from the page.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Choices {
    pub sources: BTreeSet<String>,
    pub namespaces: BTreeSet<String>,
    pub kinds: BTreeSet<String>,
}

impl Choices {
    pub fn gather<'a>(
        entries: impl IntoIterator<Item = &'a DriftEntry>,
        revisions: &[RevisionInfo],
    ) -> Choices {
        let mut choices = Choices::default();
        for entry in entries {
            if !entry.source.is_empty() {
                choices.sources.insert(entry.source.clone());
            }
            if let Some(ns) = &entry.namespace {
                choices.namespaces.insert(ns.clone());
            }
            choices.kinds.insert(entry.kind.clone());
        }
        choices
            .sources
            .extend(revisions.iter().map(|r| r.source.clone()));
        choices
    }
}

/// Everything one page shows, as the `/` handler reads it from the index.
#[derive(Debug)]
pub struct Page<'a> {
    /// What ages are counted to.
    pub now: Timestamp,
    /// False until every watcher finished its first list.
    pub ready: bool,
    /// Kinds whose watch is failing (`/drift`'s `stale`).
    pub stale: &'a [StaleKind],
    /// Why this replica publishes no Events (`/drift`'s `no_events`).
    pub no_events: Option<String>,
    pub filter: &'a DriftFilter,
    /// The page of objects `/drift` answers for `filter`.
    pub objects: &'a [DriftEntry],
    /// Where this page stands in the list, and the link to the next.
    pub paging: Paging,
    pub revisions: &'a [RevisionInfo],
    pub choices: &'a Choices,
    /// What `/locks` answers.
    pub locks: &'a [StaleLock],
    pub locks_ready: bool,
    /// Intents by (source, state): open ones and recently ended ones.
    pub intents: &'a BTreeMap<(String, &'static str), usize>,
}

/// Where a page stands in the drift list (`/drift`'s `limit` and `continue`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Paging {
    /// A page after the first.
    pub continued: bool,
    /// The list's snapshot was gone (expired, or taken by another replica): this page is
    /// the current state after the last entry shown before.
    pub inconsistent: bool,
    /// The next page's `continue` token; `None` on the last page.
    pub next: Option<String>,
    /// Entries after this page.
    pub remaining: Option<u64>,
    /// The `limit` the request gave, kept in the next link.
    pub limit: Option<usize>,
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.2em;margin-top:1.4em;border-bottom:1px solid #ccc}\
h3{font-size:1.05em;margin:1em 0 .3em}\
table{border-collapse:collapse;margin:.3em 0}td,th{border:1px solid #ddd;padding:2px 6px;\
text-align:left;vertical-align:top}th{background:#f4f4f4}\
code,pre{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}\
pre{background:#f7f7f7;padding:4px 6px;margin:.2em 0}\
.object{border:1px solid #ccc;border-radius:4px;padding:.4em .8em;margin:.6em 0}\
.object h4{margin:.1em 0 .3em;font-size:1em}\
.class{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;background:#777}\
.modified{background:#b35900}.missing{background:#b00020}.uncommitted{background:#6a1b9a}\
.stale_config{background:#00695c}.unmanaged{background:#455a64}.in_sync{background:#2e7d32}\
.status{padding:.4em .8em;border-radius:4px;font-weight:600}\
.ready{background:#e8f5e9}.not-ready{background:#fff3cd}.bad{background:#fde7e9}\
.stale{background:#fff3cd}\
.muted{color:#666}form label{margin-right:1em}";

/// The drift page.
pub fn render(page: &Page) -> String {
    let mut out = head("driftd: drift");
    out.push_str("<h1>driftd: drift</h1>\n");
    readiness(&mut out, page);
    filter_form(&mut out, page.filter, page.choices);
    class_links(&mut out, page);
    sources(&mut out, page);
    locks(&mut out, page);
    intents(&mut out, page);
    drift(&mut out, page);
    out.push_str(
        "<p class=\"muted\">Read-only. The same data as <a href=\"drift\">/drift</a> \
         (JSON) and <a href=\"locks\">/locks</a>; reload for the current state.</p>\n\
         </body>\n</html>\n",
    );
    out
}

/// The 400 page for a query the filters cannot answer: the error, and the valid filters
/// and values as links, instead of an empty list that would read as "no drift".
pub fn render_bad_filter(err: &FilterError, choices: &Choices) -> String {
    let mut out = head("driftd: bad filter");
    let _ = writeln!(
        out,
        "<h1>driftd: bad filter</h1>\n<p class=\"status bad\">{}</p>",
        escape_html(&err.to_string())
    );
    let _ = writeln!(
        out,
        "<p>Valid filters: {}.</p>",
        DriftFilter::PARAMS
            .map(|p| format!("<code>{p}</code>"))
            .join(", ")
    );
    let classes: Vec<String> = DriftClass::ALL
        .iter()
        .map(|c| {
            link(
                &filter_with(&DriftFilter::default(), "class", c.as_str()),
                c.as_str(),
            )
        })
        .collect();
    let _ = writeln!(out, "<p>Valid classes: {}.</p>", classes.join(", "));
    for (param, values) in [
        ("source", &choices.sources),
        ("namespace", &choices.namespaces),
        ("kind", &choices.kinds),
    ] {
        if values.is_empty() {
            continue;
        }
        let links: Vec<String> = values
            .iter()
            .map(|v| link(&filter_with(&DriftFilter::default(), param, v), v))
            .collect();
        let _ = writeln!(out, "<p>Known {param}s: {}.</p>", links.join(", "));
    }
    out.push_str("<p><a href=\".\">All drift</a></p>\n</body>\n</html>\n");
    out
}

/// The 400 page for a `limit` or `continue` no page answers.
pub fn render_bad_request(message: &str) -> String {
    let mut out = head("driftd: bad request");
    let _ = writeln!(
        out,
        "<h1>driftd: bad request</h1>\n<p class=\"status bad\">{}</p>",
        escape_html(message)
    );
    out.push_str("<p><a href=\".\">All drift</a></p>\n</body>\n</html>\n");
    out
}

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape_html(title)
    )
}

fn readiness(out: &mut String, page: &Page) {
    if page.ready {
        let _ = writeln!(
            out,
            "<p class=\"status ready\" id=\"readiness\">ready: every watched kind is listed; \
             as of {}</p>",
            page.now.strftime("%Y-%m-%d %H:%M:%S UTC")
        );
    } else {
        out.push_str(
            "<p class=\"status not-ready\" id=\"readiness\">not ready: still listing the \
             cluster (the desired state is loading or a watcher has not finished its first \
             list); what is shown below may be incomplete.</p>\n",
        );
    }
    // The same words as `driftd drift`, so on-call reads one message wherever they look.
    if let Some(why) = &page.no_events {
        let _ = writeln!(
            out,
            "<p class=\"status no-events\" id=\"no-events\">This replica publishes no \
             Kubernetes Events: {}.</p>",
            escape_html(why)
        );
    }
    if let Some(line) = StaleKind::summary(page.stale) {
        let _ = writeln!(
            out,
            "<p class=\"status stale\" id=\"stale\">{}. Objects of these kinds are \
             marked <em>stale</em> below.</p>",
            escape_html(&line)
        );
    }
}

fn filter_form(out: &mut String, filter: &DriftFilter, choices: &Choices) {
    out.push_str("<form method=\"get\" id=\"filters\">\n");
    let classes: BTreeSet<String> = DriftClass::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let class = filter.class.map(|c| c.as_str().to_string());
    for (param, values, chosen, any) in [
        ("source", &choices.sources, &filter.source, "any"),
        ("namespace", &choices.namespaces, &filter.namespace, "any"),
        ("kind", &choices.kinds, &filter.kind, "any"),
        ("class", &classes, &class, "any drifting"),
    ] {
        let _ = write!(
            out,
            "<label>{param} <select name=\"{param}\"><option value=\"\">{any}</option>"
        );
        let mut values: Vec<&String> = values.iter().collect();
        // A value the link names but the index does not know stays selected, so the page
        // says what it filters on.
        if let Some(chosen) = chosen.as_ref().filter(|c| !values.contains(c)) {
            values.push(chosen);
        }
        for value in values {
            let selected = if chosen.as_ref() == Some(value) {
                " selected"
            } else {
                ""
            };
            let v = escape_html(value);
            let _ = write!(out, "<option value=\"{v}\"{selected}>{v}</option>");
        }
        out.push_str("</select></label>\n");
    }
    out.push_str("<button type=\"submit\">Filter</button> <a href=\".\">clear</a>\n</form>\n");
}

/// One link per class with its count among the objects the other filters select: the quick
/// way to narrow the list (counts of the shown class only when a class is chosen; of the
/// page shown when the list has several).
fn class_links(out: &mut String, page: &Page) {
    let mut counts: BTreeMap<DriftClass, usize> = BTreeMap::new();
    for o in page.objects {
        *counts.entry(o.class).or_default() += 1;
    }
    if counts.is_empty() {
        return;
    }
    let links: Vec<String> = counts
        .iter()
        .map(|(class, n)| {
            link(
                &filter_with(page.filter, "class", class.as_str()),
                &format!("{class}: {n}"),
            )
        })
        .collect();
    // Counted on this page only when the list has others.
    let paged = page.paging.continued || page.paging.next.is_some();
    let scope = if paged { " (this page)" } else { "" };
    let _ = writeln!(out, "<p id=\"counts\">{}{scope}</p>", links.join(" · "));
}

fn sources(out: &mut String, page: &Page) {
    out.push_str("<h2>Sources</h2>\n");
    if page.revisions.is_empty() {
        out.push_str(
            "<p>No source committed yet (<code>driftd commit --source NAME -f DIR</code>).</p>\n",
        );
        return;
    }
    out.push_str(
        "<table id=\"sources\"><tr><th>source</th><th>revision</th><th>committed</th>\
         <th>by</th><th>message</th><th>objects</th></tr>\n",
    );
    for r in page.revisions {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} ({} ago)</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            link(&filter_with(page.filter, "source", &r.source), &r.source),
            r.id,
            r.committed_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            age(page.now, r.committed_at),
            escape_html(&r.author),
            escape_html(&r.message),
            r.object_count,
        );
    }
    out.push_str("</table>\n");
}

fn locks(out: &mut String, page: &Page) {
    if page.locks.is_empty() {
        if !page.locks_ready {
            out.push_str(
                "<p class=\"muted\">Stale locks: not known yet (holders or lock folders not \
                 read yet).</p>\n",
            );
        }
        return;
    }
    out.push_str(
        "<h2>Stale locks</h2>\n<p>The next deploy of these sources blocks until the lock is \
         released.</p>\n<table id=\"locks\"><tr><th>kind</th><th>source</th><th>id</th>\
         <th>holder</th><th>state</th><th>taken</th><th>stale since</th><th>why</th>\
         <th>release with</th></tr>\n",
    );
    for l in page.locks {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ago</td>\
             <td>{} ago</td><td>{}</td><td><code>{}</code></td></tr>",
            l.kind,
            escape_html(&l.source),
            escape_html(&l.id),
            escape_html(&l.holder),
            escape_html(l.state.as_deref().unwrap_or("")),
            age(page.now, l.created_at),
            age(page.now, l.since),
            escape_html(&l.reason),
            escape_html(&l.release),
        );
    }
    out.push_str("</table>\n");
}

fn intents(out: &mut String, page: &Page) {
    let rows: Vec<_> = page.intents.iter().filter(|(_, n)| **n > 0).collect();
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Deploy intents</h2>\n<p>Open intents (a deploy recorded before it applied) and \
         recently ended ones, by source and state.</p>\n<table id=\"intents\"><tr>\
         <th>source</th><th>state</th><th>intents</th></tr>\n",
    );
    for ((source, state), n) in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{n}</td></tr>",
            escape_html(source),
            escape_html(state)
        );
    }
    out.push_str("</table>\n");
}

fn drift(out: &mut String, page: &Page) {
    let filtered = *page.filter != DriftFilter::default();
    out.push_str("<h2>Drift</h2>\n");
    if page.objects.is_empty() {
        // Before the first list, no object is not "no drift".
        if !page.ready {
            out.push_str("<p id=\"verdict\">Drift is not known yet: still listing.</p>\n");
        } else if filtered {
            out.push_str(
                "<p id=\"verdict\">No object matches these filters. <a href=\".\">All \
                 drift</a></p>\n",
            );
        } else {
            out.push_str("<p id=\"verdict\">No drift: every desired object matches.</p>\n");
        }
        return;
    }
    let mut groups: BTreeMap<(&str, &str), Vec<&DriftEntry>> = BTreeMap::new();
    for o in page.objects {
        groups
            .entry((o.source.as_str(), o.namespace.as_deref().unwrap_or("")))
            .or_default()
            .push(o);
    }
    let mut current_source = None;
    for ((source, namespace), mut objects) in groups {
        if current_source != Some(source) {
            current_source = Some(source);
            if source.is_empty() {
                out.push_str("<h3>No source (unmanaged)</h3>\n");
            } else {
                let _ = writeln!(
                    out,
                    "<h3>source {}</h3>",
                    link(&filter_with(page.filter, "source", source), source)
                );
            }
        }
        if namespace.is_empty() {
            out.push_str("<h4 class=\"muted\">cluster-scoped</h4>\n");
        } else {
            let _ = writeln!(
                out,
                "<h4>namespace {}</h4>",
                link(&filter_with(page.filter, "namespace", namespace), namespace)
            );
        }
        objects.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
        for o in objects {
            object(out, o, page.now);
        }
    }
    next_link(out, page);
}

/// The link to the next page (a plain link: the page runs no script), and what this page is.
fn next_link(out: &mut String, page: &Page) {
    let paging = &page.paging;
    if paging.inconsistent {
        out.push_str(
            "<p id=\"inconsistent\" class=\"status stale\">The list this page continues \
             changed too long ago (or was read from another replica): these objects are the \
             current state after the last one shown before. <a href=\".\">Start again</a> \
             for one consistent list.</p>\n",
        );
    }
    let Some(token) = &paging.next else {
        if paging.continued {
            out.push_str("<p id=\"last-page\" class=\"muted\">Last page.</p>\n");
        }
        return;
    };
    let mut pairs = page.filter.to_pairs();
    if let Some(limit) = paging.limit {
        pairs.push(("limit", limit.to_string()));
    }
    pairs.push(("continue", token.clone()));
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    let more = paging
        .remaining
        .map(|n| format!(" ({n} more)"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<p id=\"next\">This page shows {} objects. {}{more}</p>",
        page.objects.len(),
        link_id("next-page", &format!("?{}", query.join("&")), "Next page")
    );
}

/// [`link`] with an id, for the one link a test or a person looks for.
fn link_id(id: &str, query: &str, text: &str) -> String {
    format!(
        "<a id=\"{id}\" href=\"{}\">{}</a>",
        escape_html(query),
        escape_html(text)
    )
}

/// Pods of a workload running on stale config: per config, when it changed and which pods
/// read it how; then the fix.
fn stale_config(out: &mut String, note: &StaleConfigNote, now: Timestamp) {
    let _ = writeln!(
        out,
        "<p>{} running pod(s) started before a Secret/ConfigMap they read changed, and still \
         run on its old content:</p>\n<table class=\"stale-config\"><tr><th>config</th>\
         <th>changed</th><th>pods (how they read it)</th></tr>",
        note.pod_count()
    );
    for c in &note.configs {
        let pods: Vec<String> = c
            .pods
            .iter()
            .map(|p| {
                format!(
                    "{} ({})",
                    escape_html(&p.name),
                    escape_html(&p.reads.join(", "))
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{} ago</td><td>{}</td></tr>",
            escape_html(&c.config),
            age(now, c.changed_at),
            pods.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "</table>\n<p>Fix: <code>{}</code></p>",
        escape_html(&note.fix)
    );
}

fn object(out: &mut String, o: &DriftEntry, now: Timestamp) {
    let name = match &o.namespace {
        Some(ns) => format!("{ns}/{}", o.name),
        None => o.name.clone(),
    };
    let _ = writeln!(
        out,
        "<div class=\"object\">\n<h4><span class=\"class {class}\">{class}</span> {} \
         <span class=\"name\">{}</span> <span class=\"muted\">{}</span></h4>",
        escape_html(&o.kind),
        escape_html(&name),
        escape_html(&o.api_version),
        class = o.class.as_str(),
    );
    let mut facts = Vec::new();
    if o.stale {
        facts.push("<strong>stale</strong>: its kind's watch is failing".to_string());
    }
    if let Some(since) = o.since {
        facts.push(format!(
            "drifting for {} (since {})",
            age(now, since),
            since.strftime("%Y-%m-%d %H:%M:%S UTC")
        ));
    }
    if o.revision > 0 {
        facts.push(format!("desired in revision {}", o.revision));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "<p>{}</p>", facts.join("; "));
    }
    if !o.changes.is_empty() {
        out.push_str(
            "<table class=\"changes\"><tr><th>field</th><th>desired</th><th>live</th>\
             <th>changed by</th><th>when</th></tr>\n",
        );
        for c in &o.changes.to_vec() {
            change(out, c);
        }
        out.push_str("</table>\n");
    }
    for w in o.who.iter().flat_map(|w| w.iter()) {
        who(out, w);
    }
    if let Some(intent) = &o.intent {
        let _ = writeln!(
            out,
            "<p>Applied by intent {} ({}, held by {}, begun by {} {} ago) without \
             committing.<br>Keep it: <code>{}</code><br>Undo it: <code>{}</code></p>",
            intent.id,
            escape_html(&intent.state),
            escape_html(&intent.holder),
            escape_html(&intent.author),
            age(now, intent.created_at),
            escape_html(&intent.keep),
            escape_html(&intent.revert),
        );
    }
    if let Some(note) = &o.stale_config {
        stale_config(out, note, now);
    }
    if let Some(dry) = &o.dry_run {
        match (dry.state.as_str(), &dry.message) {
            ("rejected", Some(m)) => {
                let _ = writeln!(
                    out,
                    "<p>The API server refused a dry run of the committed manifest: \
                     <code>{}</code></p>",
                    escape_html(m)
                );
            }
            (_, Some(m)) => {
                let _ = writeln!(
                    out,
                    "<p class=\"muted\">The last server-side dry run failed ({}); judged by the \
                     answer before it.</p>",
                    escape_html(m)
                );
            }
            _ => {}
        }
    }
    if !o.patch.is_empty() {
        let patch = serde_json::to_string_pretty(&o.patch.to_patch()).unwrap_or_default();
        let secret = if o.kind == "Secret" && o.api_version == "v1" {
            " (Secret values are hashes: not for applying)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<details><summary>restoring patch (RFC 6902, for the live object){secret}\
             </summary><pre class=\"patch\">{}</pre></details>",
            escape_html(&patch)
        );
    }
    if let (Some(undo), None) = (o.undo_command(), &o.intent) {
        let _ = writeln!(
            out,
            "<p>Undo it: <code class=\"undo\">{}</code></p>",
            escape_html(&undo)
        );
    }
    let _ = writeln!(
        out,
        "<p>Look at it: <code class=\"kubectl\">{}</code></p>",
        escape_html(&kubectl_get(o))
    );
    for ignored in &o.ignored {
        let _ = writeln!(
            out,
            "<p class=\"muted\">{} difference(s) hidden by {}</p>",
            ignored.count,
            escape_html(&ignored.rule)
        );
    }
    out.push_str("</div>\n");
}

fn change(out: &mut String, c: &Change) {
    let value = |v: &Option<serde_json::Value>| match v {
        None => "<span class=\"muted\">(absent)</span>".to_string(),
        Some(v) => format!("<code>{}</code>", escape_html(&v.to_string())),
    };
    let _ = writeln!(
        out,
        "<tr><td><code>{}</code><br><span class=\"muted\">{}</span></td><td>{}</td><td>{}</td>\
         <td>{}</td><td>{}</td></tr>",
        escape_html(&c.field),
        escape_html(&c.path),
        value(&c.desired),
        value(&c.live),
        escape_html(c.manager.as_deref().unwrap_or("")),
        escape_html(c.changed_at.as_deref().unwrap_or("")),
    );
}

/// The person the API server's audit events named for a change (or a deletion).
fn who(out: &mut String, w: &driftd_core::report::Who) {
    let tool = match (w.manager.as_str(), &w.changed_at) {
        ("", _) => String::new(),
        (m, Some(at)) => format!(" through {} at {}", escape_html(m), escape_html(at)),
        (m, None) => format!(" through {}", escape_html(m)),
    };
    let _ = writeln!(
        out,
        "<p class=\"who\">{} by <b>{}</b>{tool}: {} from {} ({}); groups {}; matched by {}</p>",
        if w.manager.is_empty() {
            "Deleted"
        } else {
            "Changed"
        },
        escape_html(&w.person()),
        escape_html(&w.verb),
        escape_html(&w.source_ips.join(", ")),
        escape_html(&w.user_agent),
        escape_html(&w.user.groups.join(", ")),
        w.matched.as_str(),
    );
}

/// The command that shows the live object: `KIND.VERSION.GROUP/NAME`, which kubectl resolves
/// without guessing between two kinds of the same name.
pub fn kubectl_get(o: &DriftEntry) -> String {
    let (group, version) = match o.api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", o.api_version.as_str()),
    };
    let resource = if group.is_empty() {
        format!("{}/{}", o.kind.to_lowercase(), o.name)
    } else {
        format!("{}.{version}.{group}/{}", o.kind.to_lowercase(), o.name)
    };
    let mut cmd = String::from("kubectl get -o yaml");
    if let Some(ns) = &o.namespace {
        let _ = write!(cmd, " -n {}", shell_quote(ns));
    }
    let _ = write!(cmd, " {}", shell_quote(&resource));
    cmd
}

/// `<a href="?...">text</a>` with the link and the text escaped. Links, like the form, are
/// relative, so the page also works behind a proxy that serves it under a path prefix.
fn link(query: &str, text: &str) -> String {
    format!(
        "<a href=\"{}\">{}</a>",
        escape_html(query),
        escape_html(text)
    )
}

/// The query of `filter` with `param` set to `value`: a shareable link that narrows further.
fn filter_with(filter: &DriftFilter, param: &str, value: &str) -> String {
    let mut pairs: Vec<(&str, String)> = filter
        .to_pairs()
        .into_iter()
        .filter(|(k, _)| *k != param)
        .collect();
    pairs.push((param, value.to_string()));
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    format!("?{}", query.join("&"))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// How long ago `then` was, kubectl AGE style ("45s", "3m20s", "5h", "2d4h").
fn age(now: Timestamp, then: Timestamp) -> String {
    let s = (now.as_second() - then.as_second()).max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 && s % 60 != 0 {
        format!("{m}m{}s", s % 60)
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 && m % 60 != 0 {
        format!("{h}h{}m", m % 60)
    } else if d < 2 {
        format!("{h}h")
    } else if d < 8 && h % 24 != 0 {
        format!("{d}d{}h", h % 24)
    } else {
        format!("{d}d")
    }
}

#[cfg(test)]
mod tests;
