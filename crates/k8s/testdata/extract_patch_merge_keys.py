#!/usr/bin/env python3
"""Regenerates patch_merge_keys.tsv: every strategic-merge list of the kinds driftd knows.

kube-openapi writes `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` into
api/openapi-spec/swagger.json from the `patchStrategy`/`patchMergeKey` tags of the Go API
types, so this reads those tags from the published type packages (k8s.io/api,
k8s.io/apimachinery, k8s.io/apiextensions-apiserver) and walks each kind's type tree, as a
schema walk over the swagger definitions would.

Why the Go types and not swagger.json itself: the snapshot of kubernetes/kubernetes is
too large to fetch here, while the published staging repositories are small. k8s-openapi
0.29's `v1_37` module was generated from a 1.37 spec that already has the newest fields
of k8s.io/api master as of 2026-07-24 (PodSpec.evictionResponders, skipNodeOperations of
DRA), so the fixture is taken from that master commit (kubernetes/kubernetes ae5d4d35).

Usage (bare git directories, e.g. from `fetch github:kubernetes/api`):
    extract_patch_merge_keys.py API_GIT API_REV MACHINERY_GIT MACHINERY_REV \
        APIEXT_GIT APIEXT_REV > patch_merge_keys.tsv
"""

import re
import subprocess
import sys

# Kinds to walk: (kind, package, Go type). The built-in kinds of driftd_k8s::kinds::BUILTIN
# plus the pod-template holders merge_keys.rs knows (ReplicationController, PodTemplate).
KINDS = [
    ("Namespace", "core/v1", "Namespace"),
    ("ConfigMap", "core/v1", "ConfigMap"),
    ("Secret", "core/v1", "Secret"),
    ("Service", "core/v1", "Service"),
    ("ServiceAccount", "core/v1", "ServiceAccount"),
    ("Pod", "core/v1", "Pod"),
    ("PodTemplate", "core/v1", "PodTemplate"),
    ("ReplicationController", "core/v1", "ReplicationController"),
    ("PersistentVolumeClaim", "core/v1", "PersistentVolumeClaim"),
    ("Event", "core/v1", "Event"),
    ("Deployment", "apps/v1", "Deployment"),
    ("ReplicaSet", "apps/v1", "ReplicaSet"),
    ("StatefulSet", "apps/v1", "StatefulSet"),
    ("DaemonSet", "apps/v1", "DaemonSet"),
    ("Job", "batch/v1", "Job"),
    ("CronJob", "batch/v1", "CronJob"),
    ("Ingress", "networking/v1", "Ingress"),
    ("Role", "rbac/v1", "Role"),
    ("RoleBinding", "rbac/v1", "RoleBinding"),
    ("ClusterRole", "rbac/v1", "ClusterRole"),
    ("ClusterRoleBinding", "rbac/v1", "ClusterRoleBinding"),
    ("HorizontalPodAutoscaler", "autoscaling/v2", "HorizontalPodAutoscaler"),
    ("CustomResourceDefinition", "apiextensions/v1", "CustomResourceDefinition"),
    ("Lease", "coordination/v1", "Lease"),
    ("Event.events.k8s.io", "events/v1", "Event"),
]

# Go import path -> (repository index, directory, swagger definition prefix).
PACKAGES = {
    "k8s.io/api/core/v1": (0, "core/v1", "io.k8s.api.core.v1"),
    "k8s.io/api/apps/v1": (0, "apps/v1", "io.k8s.api.apps.v1"),
    "k8s.io/api/batch/v1": (0, "batch/v1", "io.k8s.api.batch.v1"),
    "k8s.io/api/networking/v1": (0, "networking/v1", "io.k8s.api.networking.v1"),
    "k8s.io/api/rbac/v1": (0, "rbac/v1", "io.k8s.api.rbac.v1"),
    "k8s.io/api/autoscaling/v2": (0, "autoscaling/v2", "io.k8s.api.autoscaling.v2"),
    "k8s.io/api/coordination/v1": (0, "coordination/v1", "io.k8s.api.coordination.v1"),
    "k8s.io/api/events/v1": (0, "events/v1", "io.k8s.api.events.v1"),
    "k8s.io/apimachinery/pkg/apis/meta/v1": (
        1, "pkg/apis/meta/v1", "io.k8s.apimachinery.pkg.apis.meta.v1"),
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1": (
        2, "pkg/apis/apiextensions/v1", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"),
}
SHORT = {
    "core/v1": "k8s.io/api/core/v1",
    "apps/v1": "k8s.io/api/apps/v1",
    "batch/v1": "k8s.io/api/batch/v1",
    "networking/v1": "k8s.io/api/networking/v1",
    "rbac/v1": "k8s.io/api/rbac/v1",
    "autoscaling/v2": "k8s.io/api/autoscaling/v2",
    "coordination/v1": "k8s.io/api/coordination/v1",
    "events/v1": "k8s.io/api/events/v1",
    "apiextensions/v1": "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


FIELD = re.compile(r'^\s+(?:(\w+)\s+)?([\w.\[\]*]+)\s+`([^`]*)`')
TAG = re.compile(r'(\w+):"([^"]*)"')


def load(repos):
    """{import path: {type name: [(field name, go type, tags)]}} and per-file imports."""
    types = {}
    for path, (idx, directory, _) in PACKAGES.items():
        repo, rev = repos[idx]
        names = git(repo, "ls-tree", "--name-only", rev, directory + "/").split()
        structs = {}
        for name in names:
            if not name.endswith(".go") or name.endswith("_test.go") or \
                    name.split("/")[-1].startswith(("zz_generated", "generated")):
                continue
            text = git(repo, "show", f"{rev}:{name}")
            imports = {}
            for alias, imp in re.findall(r'^\s*(\w+)?\s*"(k8s\.io/[^"]+)"\s*$', text, re.M):
                imports[alias or imp.rsplit("/", 1)[-1]] = imp
            for m in re.finditer(r'^type (\w+) struct \{\n(.*?)^\}', text, re.M | re.S):
                fields = []
                for line in m.group(2).splitlines():
                    f = FIELD.match(line)
                    if not f or line.strip().startswith("//"):
                        continue
                    tags = dict(TAG.findall(f.group(3)))
                    fields.append((f.group(1), f.group(2), tags, imports))
                structs[m.group(1)] = fields
        types[path] = structs
    return types


def resolve(go_type, package, imports):
    """(import path, type name) of the struct a field's type refers to, if one we read."""
    base = re.sub(r'^(\[\]|\*|map\[[^\]]*\])+', "", go_type)
    if "." in base:
        alias, name = base.split(".", 1)
        return imports.get(alias), name
    return package, base


def walk(types, package, name, path, stack, out, kind):
    for field, go_type, tags, imports in types.get(package, {}).get(name, []):
        json_name = tags.get("json", "").split(",")[0]
        # An embedded struct without a json name (`json:",inline"`) lends its fields.
        inline = "inline" in tags.get("json", "").split(",")[1:] or (field is None and not json_name)
        target = resolve(go_type, package, imports)
        if inline:
            if target[0] in types and target not in stack:
                walk(types, target[0], target[1], path, stack + [target], out, kind)
            continue
        if not json_name or json_name == "-":
            continue
        here = path + [json_name]
        strategy = tags.get("patchStrategy")
        if strategy:
            definition = f"{PACKAGES[package][2]}.{name}.{json_name}"
            out.append((kind, ".".join(here), definition, strategy,
                        tags.get("patchMergeKey", "")))
        if target[0] in types and target[1] in types[target[0]] and target not in stack:
            walk(types, target[0], target[1], here, stack + [target], out, kind)


def main():
    args = sys.argv[1:]
    if len(args) != 6:
        sys.exit(__doc__)
    repos = [(args[0], args[1]), (args[2], args[3]), (args[4], args[5])]
    types = load(repos)
    commits = [git(r, "rev-parse", f"{rev}^{{commit}}").strip() for r, rev in repos]
    upstream = re.findall(r"Kubernetes-commit: (\w+)", git(repos[0][0], "log", "-1", "--format=%B", repos[0][1]))
    out = []
    for kind, short, name in KINDS:
        package = SHORT[short]
        walk(types, package, name, [], [(package, name)], out, kind)
    print("# Strategic-merge lists (patchStrategy, patchMergeKey) of the kinds driftd knows, one")
    print("# per object path (field names, list positions left out), with the swagger definition")
    print("# that carries x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key for it.")
    print("# Generated by extract_patch_merge_keys.py from the Go API types kube-openapi")
    print("# generates api/openapi-spec/swagger.json from:")
    print(f"#   k8s.io/api {commits[0]} (types.go of each package), published from")
    print(f"#   kubernetes/kubernetes {upstream[0] if upstream else '?'} (staging/src/k8s.io/api)")
    print(f"#   k8s.io/apimachinery {commits[1]} (pkg/apis/meta/v1/types.go)")
    print(f"#   k8s.io/apiextensions-apiserver {commits[2]} (pkg/apis/apiextensions/v1)")
    print("# kind\tpath\tdefinition\tstrategy\tmerge key")
    for row in out:
        print("\t".join(row))


if __name__ == "__main__":
    main()
