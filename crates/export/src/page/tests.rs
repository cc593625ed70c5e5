use super::*;
use driftd_core::report::LockKind;
use serde_json::json;

fn now() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn web() -> DriftEntry {
    serde_json::from_value(json!({
        "source": "shop", "revision": 3, "apiVersion": "apps/v1", "kind": "Deployment",
        "namespace": "shop", "name": "web", "class": "modified",
        "since": "2026-11-30T11:56:40Z",
        "changes": [{"path": "/spec/replicas", "op": "replace", "desired": 2, "live": 5,
                     "field": "spec.replicas", "manager": "kubectl-scale",
                     "changed_at": "2026-11-30T11:56:39Z"}],
        "patch": [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    }))
    .unwrap()
}

fn secret() -> DriftEntry {
    serde_json::from_value(json!({
        "source": "shop", "revision": 3, "apiVersion": "v1", "kind": "Secret",
        "namespace": "shop", "name": "db", "class": "modified",
        "since": "2026-11-30T09:00:00Z",
        "changes": [{"path": "/stringData/password", "op": "replace",
                     "desired": "sha256:aaaa", "live": "sha256:bbbb",
                     "field": "stringData.password", "manager": "kubectl-edit"}],
        "patch": [{"op": "replace", "path": "/data/password", "value": "sha256:aaaa"}]
    }))
    .unwrap()
}

/// A ConfigMap whose name, label value, manager and message are markup.
fn hostile() -> (DriftEntry, RevisionInfo) {
    let entry = serde_json::from_value(json!({
        "source": "evil", "revision": 4, "apiVersion": "v1", "kind": "ConfigMap",
        "namespace": "ns\"><b>x", "name": "<script>document.title='pwned'</script>",
        "class": "missing", "since": "2026-11-30T11:00:00Z",
        "changes": [{"path": "/data/k", "op": "add", "desired": "<img src=x onerror=alert(1)>",
                     "field": "data.k", "manager": "<i>m</i>\u{1b}[2J"}]
    }))
    .unwrap();
    let revision = RevisionInfo {
        id: 4,
        source: "evil".into(),
        author: "<u>eve</u>".into(),
        message: "</td><script>alert(1)</script>".into(),
        committed_at: "2026-11-30T10:00:00Z".parse().unwrap(),
        content_hash: "h".into(),
        object_count: 1,
        skipped_count: 0,
    };
    (entry, revision)
}

fn revision(source: &str, id: i64) -> RevisionInfo {
    RevisionInfo {
        id,
        source: source.into(),
        author: "alice".into(),
        message: "release 1.4".into(),
        committed_at: "2026-11-30T09:00:00Z".parse().unwrap(),
        content_hash: "h".into(),
        object_count: 5,
        skipped_count: 0,
    }
}

fn render_with(ready: bool, filter: &DriftFilter, objects: &[DriftEntry]) -> String {
    render_paged(ready, filter, objects, Paging::default())
}

fn render_paged(
    ready: bool,
    filter: &DriftFilter,
    objects: &[DriftEntry],
    paging: Paging,
) -> String {
    let revisions = vec![revision("shop", 3)];
    let choices = Choices::gather(objects, &revisions);
    render(&Page {
        now: now(),
        ready,
        stale: &[],
        no_events: None,
        filter,
        objects,
        paging,
        revisions: &revisions,
        choices: &choices,
        locks: &[],
        locks_ready: true,
        intents: &BTreeMap::new(),
    })
}

#[test]
fn shows_each_change_with_manager_age_patch_and_command() {
    let html = render_with(true, &DriftFilter::default(), &[web(), secret()]);
    for expected in [
        "ready: every watched kind is listed",
        // Sources with revision, commit time and who committed what.
        "<td>3</td><td>2026-11-30 09:00:00 UTC (3h ago)</td><td>alice</td><td>release 1.4</td>",
        "<h3>source <a href=\"?source=shop\">shop</a></h3>",
        "<h4>namespace <a href=\"?namespace=shop\">shop</a></h4>",
        "<span class=\"class modified\">modified</span> Deployment <span class=\"name\">shop/web</span>",
        "drifting for 3m20s (since 2026-11-30 11:56:40 UTC); desired in revision 3",
        "<td><code>spec.replicas</code><br><span class=\"muted\">/spec/replicas</span></td>\
         <td><code>2</code></td><td><code>5</code></td><td>kubectl-scale</td>\
         <td>2026-11-30T11:56:39Z</td>",
        "&quot;path&quot;: &quot;/spec/replicas&quot;",
        "<code class=\"kubectl\">kubectl get -o yaml -n shop deployment.v1.apps/web</code>",
        "<code class=\"kubectl\">kubectl get -o yaml -n shop secret/db</code>",
        // Secret values as the hashes /drift reports, and a warning on the patch.
        "<code>&quot;sha256:bbbb&quot;</code>",
        "(Secret values are hashes: not for applying)",
        "<a href=\"?class=modified\">modified: 2</a>",
    ] {
        assert!(html.contains(expected), "missing {expected:?} in\n{html}");
    }
    assert!(!html.contains("No drift"), "{html}");
}

#[test]
fn everything_untrusted_is_escaped() {
    let (entry, revision) = hostile();
    let revisions = vec![revision];
    let objects = vec![entry];
    let choices = Choices::gather(&objects, &revisions);
    let lock = StaleLock {
        kind: LockKind::Pulumi,
        source: "<s>stack</s>".into(),
        id: "x".into(),
        holder: "<b>bob</b>".into(),
        state: None,
        created_at: "2026-11-30T10:00:00Z".parse().unwrap(),
        age_seconds: 0,
        since: "2026-11-30T11:00:00Z".parse().unwrap(),
        reason: "<script>r</script>".into(),
        release: "pulumi cancel '<x>'".into(),
        path: None,
    };
    let filter = DriftFilter {
        kind: Some("<k>".into()),
        ..Default::default()
    };
    let html = render(&Page {
        now: now(),
        ready: true,
        stale: &[],
        no_events: None,
        filter: &filter,
        objects: &objects,
        paging: Paging::default(),
        revisions: &revisions,
        choices: &choices,
        locks: &[lock],
        locks_ready: true,
        intents: &BTreeMap::new(),
    });
    // The only tags are the page's own: none of the injected ones survives.
    for tag in [
        "<script", "<img", "<b>", "<i>", "<u>", "<s>", "<k>", "\"><b", "\u{1b}",
    ] {
        assert!(!html.contains(tag), "{tag:?} unescaped in\n{html}");
    }
    for shown in [
        "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;",
        "&lt;img src=x onerror=alert(1)&gt;",
        "&lt;i&gt;m&lt;/i&gt;\\x1b[2J",
        "&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
        "&lt;u&gt;eve&lt;/u&gt;",
        "<option value=\"&lt;k&gt;\" selected>&lt;k&gt;</option>",
        // Links carry the value percent-encoded.
        "href=\"?kind=%3Ck%3E&amp;namespace=ns%22%3E%3Cb%3Ex\"",
        // The shell command quotes the name, and the page escapes the quoting.
        "kubectl get -o yaml -n &#39;ns&quot;&gt;&lt;b&gt;x&#39; &#39;configmap/&lt;script&gt;",
    ] {
        assert!(html.contains(shown), "missing {shown:?} in\n{html}");
    }
}

#[test]
fn before_the_first_list_it_says_not_ready_instead_of_no_drift() {
    let html = render_with(false, &DriftFilter::default(), &[]);
    assert!(html.contains("not ready: still listing"), "{html}");
    assert!(html.contains("Drift is not known yet"), "{html}");
    assert!(!html.contains("No drift"), "{html}");

    let html = render_with(true, &DriftFilter::default(), &[]);
    assert!(
        html.contains("No drift: every desired object matches."),
        "{html}"
    );
    assert!(!html.contains("not ready"), "{html}");

    let filter = DriftFilter::from_pairs([("namespace", "other")]).unwrap();
    let html = render_with(true, &filter, &[]);
    assert!(html.contains("No object matches these filters."), "{html}");
    assert!(!html.contains("No drift"), "{html}");
}

#[test]
fn groups_by_source_then_namespace_and_links_keep_other_filters() {
    let mut other = web();
    other.namespace = Some("billing".into());
    other.name = "api".into();
    let mut unmanaged = web();
    unmanaged.source = String::new();
    unmanaged.class = DriftClass::Unmanaged;
    unmanaged.name = "stray".into();
    unmanaged.namespace = Some("tools".into());
    let filter = DriftFilter::from_pairs([("kind", "Deployment")]).unwrap();
    let html = render_with(true, &filter, &[web(), unmanaged, other]);
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("missing {needle:?} in\n{html}"))
    };
    // Unmanaged first (no source sorts first), then shop's namespaces in order.
    assert!(at("<h3>No source (unmanaged)</h3>") < at("<h3>source "));
    assert!(
        at("<a href=\"?kind=Deployment&amp;namespace=billing\">billing</a>")
            < at("<a href=\"?kind=Deployment&amp;namespace=shop\">shop</a></h4>")
    );
    assert!(at("shop/web") > at("billing/api"));
    assert!(html.contains("<option value=\"Deployment\" selected>Deployment</option>"));
    assert!(html.contains("<a href=\"?kind=Deployment&amp;class=unmanaged\">unmanaged: 1</a>"));
}

#[test]
fn stale_locks_and_intents_are_listed_when_there_are_any() {
    let lock = StaleLock {
        kind: LockKind::Intent,
        source: "shop".into(),
        id: "7".into(),
        holder: "pod:ci/deploy-x".into(),
        state: Some("pending".into()),
        created_at: "2026-11-30T11:00:00Z".parse().unwrap(),
        age_seconds: 0,
        since: "2026-11-30T11:30:00Z".parse().unwrap(),
        reason: "holder pod ci/deploy-x no longer exists".into(),
        release: "driftd intent release 7".into(),
        path: None,
    };
    let intents = BTreeMap::from([(("shop".to_string(), "pending"), 1)]);
    let choices = Choices::default();
    let page = |locks: &[StaleLock],
                locks_ready: bool,
                intents: &BTreeMap<(String, &'static str), usize>| {
        render(&Page {
            now: now(),
            ready: true,
            stale: &[],
            no_events: None,
            filter: &DriftFilter::default(),
            objects: &[],
            paging: Paging::default(),
            revisions: &[],
            choices: &choices,
            locks,
            locks_ready,
            intents,
        })
    };
    let html = page(std::slice::from_ref(&lock), true, &intents);
    assert!(html.contains("<h2>Stale locks</h2>"), "{html}");
    assert!(
        html.contains(
            "<td>intent</td><td>shop</td><td>7</td><td>pod:ci/deploy-x</td><td>pending</td>\
             <td>60m ago</td><td>30m ago</td><td>holder pod ci/deploy-x no longer exists</td>\
             <td><code>driftd intent release 7</code></td>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<tr><td>shop</td><td>pending</td><td>1</td></tr>"),
        "{html}"
    );
    assert!(html.contains("No source committed yet"), "{html}");

    let html = page(&[], true, &BTreeMap::new());
    assert!(!html.contains("Stale locks"), "{html}");
    assert!(!html.contains("Deploy intents"), "{html}");
    let html = page(&[], false, &BTreeMap::new());
    assert!(html.contains("Stale locks: not known yet"), "{html}");
}

#[test]
fn bad_filter_page_names_the_valid_values() {
    let err = DriftFilter::from_pairs([("class", "modifed")]).unwrap_err();
    let choices = Choices::gather(&[web()], &[revision("shop", 3), revision("<x>", 1)]);
    let html = render_bad_filter(&err, &choices);
    for expected in [
        "unknown class `modifed`; valid classes: in_sync, modified,",
        "Valid filters: <code>source</code>, <code>namespace</code>, <code>kind</code>, <code>class</code>.",
        "<a href=\"?class=modified\">modified</a>",
        "Known sources: <a href=\"?source=%3Cx%3E\">&lt;x&gt;</a>, <a href=\"?source=shop\">shop</a>.",
        "Known namespaces: <a href=\"?namespace=shop\">shop</a>.",
        "Known kinds: <a href=\"?kind=Deployment\">Deployment</a>.",
    ] {
        assert!(html.contains(expected), "missing {expected:?} in\n{html}");
    }
}

#[test]
fn kubectl_command_names_the_exact_type() {
    let mut crd: DriftEntry = web();
    crd.api_version = "example.com/v1beta1".into();
    crd.kind = "Widget".into();
    assert_eq!(
        kubectl_get(&crd),
        "kubectl get -o yaml -n shop widget.v1beta1.example.com/web"
    );
    crd.namespace = None;
    crd.api_version = "v1".into();
    crd.kind = "Namespace".into();
    assert_eq!(kubectl_get(&crd), "kubectl get -o yaml namespace/web");
}

#[test]
fn ages_read_like_kubectl() {
    let at = |secs: i64| age(now(), now() - jiff::SignedDuration::from_secs(secs));
    assert_eq!(at(-5), "0s");
    assert_eq!(at(59), "59s");
    assert_eq!(at(200), "3m20s");
    assert_eq!(at(600), "10m");
    assert_eq!(at(3 * 3600 + 120), "3h2m");
    assert_eq!(at(9 * 3600), "9h");
    assert_eq!(at(3 * 86400 + 3600), "3d1h");
    assert_eq!(at(30 * 86400), "30d");
}

#[test]
fn a_refused_dry_run_shows_the_servers_message_escaped() {
    let entry: DriftEntry = serde_json::from_value(json!({
        "source": "shop", "revision": 3, "apiVersion": "v1", "kind": "ConfigMap",
        "namespace": "shop", "name": "orphan", "class": "rejected",
        "since": "2026-11-30T11:56:40Z", "changes": [],
        "dry_run": {"state": "rejected", "message": "namespaces \"<b>nowhere</b>\" not found",
                    "at": "2026-11-30T11:56:40Z"}
    }))
    .unwrap();
    let html = render_with(true, &DriftFilter::default(), &[entry]);
    assert!(
        html.contains("refused a dry run of the committed manifest: <code>namespaces &quot;&lt;b&gt;nowhere&lt;/b&gt;&quot; not found</code>"),
        "{html}"
    );
}

#[test]
fn stale_kinds_are_said_in_plain_words_and_escaped() {
    let mut stale_web = web();
    stale_web.stale = true;
    let objects = [stale_web];
    let revisions = vec![revision("shop", 3)];
    let choices = Choices::gather(&objects, &revisions);
    let stale = [
        StaleKind {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            since: "2026-11-30T11:58:00Z".parse().unwrap(),
        },
        StaleKind {
            api_version: "example.com/v1".into(),
            kind: "<b>Widget".into(),
            since: "2026-11-30T11:59:00Z".parse().unwrap(),
        },
    ];
    let html = render(&Page {
        now: now(),
        ready: true,
        stale: &stale,
        no_events: None,
        filter: &DriftFilter::default(),
        objects: &objects,
        paging: Paging::default(),
        revisions: &revisions,
        choices: &choices,
        locks: &[],
        locks_ready: true,
        intents: &BTreeMap::new(),
    });
    assert!(
        html.contains(
            "data stale since 2026-11-30 11:58:00 UTC for kinds: Deployment, &lt;b&gt;Widget;"
        ),
        "{html}"
    );
    assert!(!html.contains("<b>Widget"));
    assert!(html.contains("<strong>stale</strong>: its kind's watch is failing"));
    // Nothing stale: no such line.
    assert!(!render_with(true, &DriftFilter::default(), &[web()]).contains("data stale"));
}

#[test]
fn a_stale_config_workload_shows_its_pods_configs_and_fix_escaped() {
    let mut entry = web();
    entry.class = DriftClass::StaleConfig;
    entry.changes = Default::default();
    entry.patch = Default::default();
    entry.stale_config = serde_json::from_value(json!({
        "fix": "kubectl rollout restart deployment/web -n shop",
        "configs": [{"config": "Secret/<b>db</b>", "changed_at": "2026-11-30T11:50:00Z",
                     "pods": [{"name": "web-1", "started_at": "2026-11-30T09:00:00Z",
                               "reads": ["env", "subPath"]}]}]
    }))
    .unwrap();
    let html = render_with(true, &DriftFilter::default(), &[entry]);
    for expected in [
        "<span class=\"class stale_config\">stale_config</span> Deployment",
        "1 running pod(s) started before a Secret/ConfigMap they read changed",
        "<tr><td>Secret/&lt;b&gt;db&lt;/b&gt;</td><td>10m ago</td><td>web-1 (env, subPath)</td></tr>",
        "Fix: <code>kubectl rollout restart deployment/web -n shop</code>",
    ] {
        assert!(html.contains(expected), "missing {expected:?} in\n{html}");
    }
}

#[test]
fn a_page_links_to_the_next_with_its_filters_limit_and_token() {
    let filter = DriftFilter {
        namespace: Some("shop & co".into()),
        ..DriftFilter::default()
    };
    let paging = Paging {
        next: Some("eyJ2IjoxfQ".into()),
        remaining: Some(7),
        limit: Some(2),
        ..Paging::default()
    };
    let html = render_paged(true, &filter, &[web(), secret()], paging);
    assert!(
        html.contains(
            "<a id=\"next-page\" href=\"?namespace=shop%20%26%20co&amp;limit=2&amp;\
             continue=eyJ2IjoxfQ\">Next page</a> (7 more)"
        ),
        "{html}"
    );
    assert!(!html.contains("id=\"inconsistent\""));
    assert!(
        html.contains("(this page)</p>"),
        "class counts say their scope"
    );

    // The last page of a list says so; one continued from the current state says that.
    let last = Paging {
        continued: true,
        inconsistent: true,
        ..Paging::default()
    };
    let html = render_paged(true, &DriftFilter::default(), &[web()], last);
    assert!(!html.contains("next-page"), "{html}");
    assert!(html.contains("id=\"last-page\""), "{html}");
    assert!(html.contains("id=\"inconsistent\""), "{html}");

    // A single page has neither.
    let html = render_with(true, &DriftFilter::default(), &[web()]);
    assert!(!html.contains("next-page") && !html.contains("last-page"));
}

#[test]
fn a_bad_request_page_escapes_its_message() {
    let html = render_bad_request("limit must be a count, not `<b>`");
    assert!(html.contains("not `&lt;b&gt;`"), "{html}");
}

#[test]
fn names_the_person_audit_events_named_escaped() {
    let mut entry = web();
    entry.who = Some(Box::new(vec![driftd_core::report::Who {
        manager: "kubectl-scale".into(),
        changed_at: Some("2026-11-30T11:56:39Z".into()),
        user: driftd_core::audit::AuditUser {
            username: "<b>alice</b>".into(),
            groups: vec!["dev".into()],
        },
        impersonated_user: None,
        source_ips: vec!["10.0.0.7".into()],
        user_agent: "kubectl/v1.32.0".into(),
        verb: "patch".into(),
        audit_id: "a1".into(),
        matched: driftd_core::report::Matched::Metadata,
    }]));
    let html = render_with(true, &DriftFilter::default(), &[entry]);
    let expected = "<p class=\"who\">Changed by <b>&lt;b&gt;alice&lt;/b&gt;</b> through \
                    kubectl-scale at 2026-11-30T11:56:39Z: patch from 10.0.0.7 (kubectl/v1.32.0); \
                    groups dev; matched by metadata</p>";
    assert!(html.contains(expected), "missing {expected:?} in\n{html}");
}
