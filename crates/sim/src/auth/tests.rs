//! Cases ported from kube's own tests where they exist (named per test); the rest derived
//! by hand from the source lines the module docs cite.

use super::rbac::{
    authorize, non_resource_url_matches, rule_allows, Policy, PolicyRule, Request, User,
};
use super::*;
use crate::store::Store;
use serde_json::{json, Value};

fn rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        non_resource_urls: urls.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    }
}

fn path(verb: &str, path: &str) -> Request {
    Request::NonResource {
        verb: verb.into(),
        path: path.into(),
    }
}

fn user(name: &str, groups: &[&str]) -> User {
    User {
        name: name.into(),
        groups: groups.iter().map(|s| s.to_string()).collect(),
    }
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

/// `subjects` as upstream's test helper writes them: "User:foo", "Group:bar".
fn cluster_role_binding(role: &str, subjects: &[&str]) -> Value {
    let subjects: Vec<Value> = subjects
        .iter()
        .map(|s| {
            let (kind, name) = s.split_once(':').unwrap();
            json!({"kind": kind, "name": name})
        })
        .collect();
    json!({"kind": "ClusterRoleBinding", "metadata": {"name": format!("{role}-binding")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects})
}

/// A request (verb, non-resource URL) and whether the rule allows it.
type Case = (&'static str, &'static str, bool);

/// plugin/pkg/auth/authorizer/rbac/rbac_test.go, `TestRuleMatches`, the cases
/// "star nonresource, exact match other", "star nonresource subpath" and
/// "star verb, exact nonresource", every request with its expected answer.
#[test]
fn non_resource_rules_match_as_rule_matches_upstream() {
    let cases: &[(PolicyRule, &[Case])] = &[
        (
            rule(&["verb1"], &["*"]),
            &[
                ("verb1", "/foo", true),
                ("verb1", "/foo/bar", true),
                ("verb1", "/foo/baz", true),
                ("verb1", "/foo/bar/one", true),
                ("verb1", "/foo/baz/one", true),
                ("verb2", "/foo", false),
                ("verb2", "/foo/bar", false),
                ("verb2", "/foo/baz", false),
                ("verb2", "/foo/bar/one", false),
                ("verb2", "/foo/baz/one", false),
            ],
        ),
        (
            rule(&["verb1"], &["/foo/*"]),
            &[
                ("verb1", "/foo", false),
                ("verb1", "/foo/bar", true),
                ("verb1", "/foo/baz", true),
                ("verb1", "/foo/bar/one", true),
                ("verb1", "/foo/baz/one", true),
                ("verb1", "/notfoo", false),
                ("verb1", "/notfoo/bar", false),
                ("verb1", "/notfoo/baz", false),
                ("verb1", "/notfoo/bar/one", false),
                ("verb1", "/notfoo/baz/one", false),
            ],
        ),
        (
            rule(&["*"], &["/foo", "/foo/bar/one"]),
            &[
                ("verb1", "/foo", true),
                ("verb1", "/foo/bar", false),
                ("verb1", "/foo/baz", false),
                ("verb1", "/foo/bar/one", true),
                ("verb1", "/foo/baz/one", false),
                ("verb2", "/foo", true),
                ("verb2", "/foo/bar", false),
                ("verb2", "/foo/baz", false),
                ("verb2", "/foo/bar/one", true),
                ("verb2", "/foo/baz/one", false),
            ],
        ),
    ];
    for (rule, requests) in cases {
        for &(verb, p, expected) in *requests {
            assert_eq!(
                rule_allows(&path(verb, p), rule),
                expected,
                "{rule:?} {verb} {p}"
            );
        }
    }
}

/// `NonResourceURLMatches` trims every trailing `*` (`strings.TrimRight`) and compares
/// prefixes, not path segments: derived by hand from pkg/apis/rbac/v1/evaluation_helpers.go.
#[test]
fn a_star_suffix_is_a_plain_string_prefix() {
    let metrics = rule(&["get"], &["/metrics*"]);
    assert!(non_resource_url_matches(&metrics, "/metrics"));
    assert!(non_resource_url_matches(&metrics, "/metrics/cadvisor"));
    assert!(non_resource_url_matches(&metrics, "/metricsfoo"));
    assert!(!non_resource_url_matches(&metrics, "/metric"));
    let stars = rule(&["get"], &["/drift**"]);
    assert!(non_resource_url_matches(&stars, "/drift"));
    // A star inside the URL is a literal character.
    let inner = rule(&["get"], &["/*/x"]);
    assert!(!non_resource_url_matches(&inner, "/a/x"));
    assert!(non_resource_url_matches(&inner, "/*/x"));
}

/// plugin/pkg/auth/authorizer/rbac/rbac_test.go, `TestAuthorizer`, the case
/// "Non-resource-url tests": its shouldPass and shouldFail requests.
#[test]
fn cluster_role_bindings_grant_paths_as_test_authorizer_upstream() {
    let policy = Policy::from_objects([
        cluster_role(
            "non-resource-url-getter",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/apis"]}]),
        ),
        cluster_role(
            "non-resource-url",
            json!([{"verbs": ["*"], "nonResourceURLs": ["/apis"]}]),
        ),
        cluster_role(
            "non-resource-url-prefix",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}]),
        ),
        cluster_role_binding("non-resource-url-getter", &["User:foo", "Group:bar"]),
        cluster_role_binding("non-resource-url", &["User:admin", "Group:admin"]),
        cluster_role_binding(
            "non-resource-url-prefix",
            &["User:prefixed", "Group:prefixed"],
        ),
    ]);
    let should_pass = [
        (user("foo", &[]), "get", "/apis"),
        (user("", &["bar"]), "get", "/apis"),
        (user("admin", &[]), "get", "/apis"),
        (user("", &["admin"]), "get", "/apis"),
        (user("admin", &[]), "watch", "/apis"),
        (user("", &["admin"]), "watch", "/apis"),
        (user("prefixed", &[]), "get", "/apis/v1"),
        (user("", &["prefixed"]), "get", "/apis/v1"),
        (user("prefixed", &[]), "get", "/apis/v1/foobar"),
        (user("", &["prefixed"]), "get", "/apis/v1/foorbar"),
    ];
    let should_fail = [
        (user("foo", &[]), "watch", "/apis"),
        (user("", &["bar"]), "watch", "/apis"),
        (user("foo", &[]), "get", "/api/v1"),
        (user("", &["bar"]), "get", "/api/v1"),
        (user("admin", &[]), "get", "/api/v1"),
        (user("", &["admin"]), "get", "/api/v1"),
        (user("prefixed", &[]), "get", "/api/v1"),
        (user("", &["prefixed"]), "get", "/api/v1"),
    ];
    for (who, verb, p) in should_pass {
        assert!(
            authorize(&policy, &who, &path(verb, p)).allowed,
            "{who:?} {verb} {p}"
        );
    }
    for (who, verb, p) in should_fail {
        assert!(
            !authorize(&policy, &who, &path(verb, p)).allowed,
            "{who:?} {verb} {p}"
        );
    }
}

/// The reason strings of rbac.go's `authorizingVisitor` with rule.go's describers, and
/// `appliesToUser` matching a ServiceAccount subject by its user name; the privileged group
/// (authorizerfactory/builtin.go `privilegedGroupAuthorizer`) allows with no reason.
#[test]
fn reasons_name_the_binding_or_the_missing_role() {
    let policy = Policy::from_objects([
        cluster_role(
            "metrics",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]),
        ),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "prom"},
            "roleRef": {"kind": "ClusterRole", "name": "metrics"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]}),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "dangling"},
            "roleRef": {"kind": "ClusterRole", "name": "gone"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]}),
    ]);
    let prometheus = user(
        "system:serviceaccount:monitoring:prometheus",
        &["system:serviceaccounts", "system:authenticated"],
    );
    let allowed = authorize(&policy, &prometheus, &path("get", "/metrics"));
    assert!(allowed.allowed);
    assert_eq!(
        allowed.reason,
        r#"RBAC: allowed by ClusterRoleBinding "prom" of ClusterRole "metrics" to ServiceAccount "prometheus/monitoring""#
    );
    let denied = authorize(&policy, &prometheus, &path("get", "/drift"));
    assert!(!denied.allowed);
    assert_eq!(
        denied.reason,
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
    // A ServiceAccount subject of a ClusterRoleBinding needs its namespace.
    let no_ns = Policy::from_objects([
        cluster_role("all", json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}])),
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "all"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus"}]}),
    ]);
    assert!(!authorize(&no_ns, &prometheus, &path("get", "/metrics")).allowed);
    let admin = authorize(
        &no_ns,
        &user("x", &["system:masters"]),
        &path("delete", "/x"),
    );
    assert!(admin.allowed && admin.reason.is_empty());
}

/// A RoleBinding applies only to resource requests in its namespace (rule.go
/// `VisitRulesFor` visits RoleBindings only for a non-empty namespace), its
/// ServiceAccount subject defaulting to the binding's namespace.
#[test]
fn role_bindings_apply_in_their_namespace_only() {
    let policy = Policy::from_objects([
        json!({"kind": "Role", "metadata": {"name": "cm", "namespace": "a"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]}),
        json!({"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "a"},
            "roleRef": {"kind": "Role", "name": "cm"},
            "subjects": [{"kind": "ServiceAccount", "name": "app"}]}),
    ]);
    let app = user("system:serviceaccount:a:app", &[]);
    let get = |ns: &str| Request::Resource {
        verb: "get".into(),
        namespace: ns.into(),
        group: String::new(),
        resource: "configmaps".into(),
        subresource: String::new(),
        name: "x".into(),
    };
    let decision = authorize(&policy, &app, &get("a"));
    assert!(decision.allowed);
    assert_eq!(
        decision.reason,
        r#"RBAC: allowed by RoleBinding "rb/a" of Role "cm" to ServiceAccount "app/a""#
    );
    assert!(!authorize(&policy, &app, &get("b")).allowed);
}

fn sa_store() -> (Store, String) {
    let store = Store::new(100);
    let ctx = crate::store::WriteCtx::new("test");
    let namespaces = store.resolve("", "v1", "namespaces").unwrap();
    store
        .create(
            &namespaces,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}}),
            &ctx,
        )
        .unwrap();
    let info = store.resolve("", "v1", "serviceaccounts").unwrap();
    let created = store
        .create(
            &info,
            Some("monitoring"),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "prometheus", "namespace": "monitoring"}}),
            &ctx,
        )
        .unwrap();
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    (store, uid)
}

/// A ServiceAccount token's user, groups and audiences as a TokenReview of a real cluster
/// names them (k8s.io/apiserver/pkg/authentication/serviceaccount/util.go MakeUsername and
/// MakeGroupNames, plus `system:authenticated`); it stops authenticating when the account
/// is deleted; a token asked for another audience does not pass a review for the API's.
#[test]
fn service_account_tokens_review_as_their_account() {
    let (store, uid) = sa_store();
    let tokens = Tokens::new();
    let issued = tokens
        .request(&store, "monitoring", "prometheus", &json!({"spec": {}}))
        .unwrap();
    assert_eq!(issued["spec"]["audiences"], json!([API_AUDIENCE]));
    assert_eq!(issued["spec"]["expirationSeconds"], 3600);
    let token = issued["status"]["token"].as_str().unwrap();
    let review = tokens
        .review(&store, &json!({"spec": {"token": token}}))
        .unwrap();
    let status = &review["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:monitoring:prometheus"
    );
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated"
        ])
    );
    assert_eq!(status["audiences"], json!([API_AUDIENCE]));

    let unknown = tokens
        .review(&store, &json!({"spec": {"token": "nope"}}))
        .unwrap();
    assert_eq!(unknown["status"].get("authenticated"), None);
    assert_eq!(unknown["status"]["error"], "invalid bearer token");

    let other = tokens
        .request(
            &store,
            "monitoring",
            "prometheus",
            &json!({"spec": {"audiences": ["driftd"]}}),
        )
        .unwrap();
    let other = other["status"]["token"].as_str().unwrap();
    let wrong = tokens
        .review(&store, &json!({"spec": {"token": other}}))
        .unwrap();
    assert_eq!(wrong["status"].get("authenticated"), None);
    let right = tokens
        .review(
            &store,
            &json!({"spec": {"token": other, "audiences": ["driftd"]}}),
        )
        .unwrap();
    assert_eq!(right["status"]["authenticated"], true);
    assert_eq!(right["status"]["audiences"], json!(["driftd"]));

    let info = store.resolve("", "v1", "serviceaccounts").unwrap();
    store
        .delete(&info, Some("monitoring"), "prometheus", None, false)
        .unwrap();
    let gone = tokens
        .review(&store, &json!({"spec": {"token": token}}))
        .unwrap();
    assert_eq!(gone["status"].get("authenticated"), None);
}

/// pkg/registry/authentication/tokenreview/storage.go: "token is required for TokenReview
/// in authentication"; pkg/apis/authentication/validation: durations under ten minutes.
#[test]
fn empty_tokens_and_short_durations_are_refused() {
    let (store, _) = sa_store();
    let tokens = Tokens::new();
    let err = tokens.review(&store, &json!({"spec": {}})).unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "token is required for TokenReview in authentication"
    );
    let err = tokens
        .request(
            &store,
            "monitoring",
            "prometheus",
            &json!({"spec": {"expirationSeconds": 60}}),
        )
        .unwrap_err();
    assert_eq!(err.code, 422);
    let err = tokens
        .request(&store, "monitoring", "absent", &json!({"spec": {}}))
        .unwrap_err();
    assert_eq!(err.code, 404);
    // The kubeconfig user's token is an administrator's.
    let admin = tokens
        .review(&store, &json!({"spec": {"token": tokens.admin_token()}}))
        .unwrap();
    assert_eq!(admin["status"]["user"]["username"], ADMIN_USER);
    assert_eq!(
        admin["status"]["user"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
}

/// pkg/apis/authorization/validation/validation.go `ValidateSubjectAccessReviewSpec`.
#[test]
fn subject_access_reviews_are_validated_as_upstream() {
    let store = Store::new(100);
    let no_user = access::review(
        &store,
        &json!({"spec": {"nonResourceAttributes": {"path": "/drift", "verb": "get"}}}),
    )
    .unwrap_err();
    assert_eq!(no_user.code, 422);
    assert_eq!(
        no_user.message,
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#
    );
    let neither = access::review(&store, &json!({"spec": {"user": "u"}})).unwrap_err();
    assert!(neither
        .message
        .contains("exactly one of nonResourceAttributes or resourceAttributes must be specified"));
    let named = access::review(
        &store,
        &json!({"metadata": {"name": "x"}, "spec": {"user": "u",
            "nonResourceAttributes": {"path": "/", "verb": "get"}}}),
    )
    .unwrap_err();
    assert!(
        named.message.contains("metadata: Invalid value"),
        "{}",
        named.message
    );
    // What client-go sends for an empty ObjectMeta is empty.
    let ok = access::review(
        &store,
        &json!({"metadata": {"creationTimestamp": null}, "spec": {"user": "u",
            "nonResourceAttributes": {"path": "/", "verb": "get"}}}),
    )
    .unwrap();
    assert_eq!(ok["status"], json!({"allowed": false}));
}
