//! Custom resources compared by their CRD: committed CRDs first, else the cluster's, watched
//! while custom resources are tracked; a CRD that changes compares its objects again.

use super::*;

/// The Widget CRD with `spec.size` defaulting to `default` and `spec.ports` a map-list
/// keyed by `name`.
fn widget_crd(default: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: string, default: {default}}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {{type: string}}
                    port: {{type: integer}}
---
"#
    )
}

const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\nspec:\n  ports: [{name: a, port: 1}, {name: b, port: 2}]\n---\n";

fn widgets() -> TypeKey {
    kind("example.com/v1", "Widget")
}

fn crds() -> TypeKey {
    crate::crds::crd_kind()
}

/// The Widget as live: `size` as given, ports reordered.
fn live_widget(size: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "w", "namespace": "shop", "uid": "u1", "resourceVersion": "5"},
           "spec": {"size": size, "ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}})
}

fn widget_class(h: &Harness) -> Option<DriftClass> {
    h.entry("Widget", "w").map(|e| e.class)
}

fn schema_of(h: &Harness) -> Option<driftd_core::diff::SchemaUse> {
    h.entry("Widget", "w").and_then(|e| e.schema)
}

#[test]
fn a_custom_resource_waits_for_the_clusters_crds_and_follows_their_changes() {
    use driftd_core::diff::SchemaUse;
    let mut h = Harness::start_with(&config(), WIDGET);
    assert!(
        h.engine.watching.watches.running.contains_key(&crds()),
        "CRDs are watched while a custom resource is tracked"
    );
    h.list(&widgets(), vec![live_widget("large")]);
    assert!(
        h.entry("Widget", "w").is_none(),
        "not compared before the cluster's CRDs are listed"
    );

    // The cluster's CRD defaults size to small: the live `large` is a hand edit; the
    // reordered map-list is not drift.
    h.list(&crds(), vec![one(&widget_crd("small"))]);
    let entry = h.entry("Widget", "w").unwrap();
    assert_eq!(entry.class, DriftClass::Modified, "{entry:?}");
    assert_eq!(entry.paths(), ["/spec/size"]);
    assert_eq!(entry.schema, Some(SchemaUse::Crd));

    // The CRD gains a new default equal to what is live: in sync.
    h.apply(one(&widget_crd("large")));
    assert_eq!(widget_class(&h), Some(DriftClass::InSync));

    // The CRD is deleted: compared schema-less, and /drift says so (the map-list is
    // compared by position now).
    h.delete(one(&widget_crd("large")));
    let entry = h.entry("Widget", "w").unwrap();
    assert_eq!(entry.schema, Some(SchemaUse::None));
    assert_eq!(entry.class, DriftClass::Modified, "{entry:?}");
    assert!(
        entry.paths().iter().all(|p| p.starts_with("/spec/ports")),
        "{entry:?}"
    );
    let json = serde_json::to_value(&entry).unwrap();
    assert_eq!(json["schema"], "none");
}

#[test]
fn a_committed_crd_wins_over_the_clusters() {
    let yaml = widget_crd("large") + WIDGET;
    let mut h = Harness::start_with(&config(), &yaml);
    h.list(&widgets(), vec![live_widget("large")]);
    assert_eq!(
        widget_class(&h),
        Some(DriftClass::InSync),
        "compared by the committed CRD without waiting for the cluster's"
    );
    assert_eq!(schema_of(&h), Some(driftd_core::diff::SchemaUse::Crd));
    // The cluster serves an older CRD (default small): the committed one still decides.
    h.list(&crds(), vec![one(&widget_crd("small"))]);
    assert_eq!(widget_class(&h), Some(DriftClass::InSync));
    let crd = h
        .entry("CustomResourceDefinition", "widgets.example.com")
        .unwrap();
    assert_eq!(crd.class, DriftClass::Modified, "the CRD itself drifted");
    // Its custom resource follows a new committed default at once.
    h.commit("shop", &(widget_crd("small") + WIDGET));
    assert_eq!(widget_class(&h), Some(DriftClass::Modified));
}

#[test]
fn built_in_kinds_alone_watch_no_crds() {
    let h = Harness::start_with(&config(), &cm("a", "1"));
    assert!(!h.engine.watching.watches.running.contains_key(&crds()));
    assert_eq!(h.entry("ConfigMap", "a").and_then(|e| e.schema), None);
}
