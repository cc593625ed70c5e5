#!/usr/bin/env python3
"""List kube-apiserver's defaulting functions from a kubernetes/kubernetes checkout, and
check `upstream.tsv` (beside this script) against them.

Why: `upstream.tsv` names every `SetDefaults_*` function (and every `+default=` marker
that defaulter-gen turns into code) with the driftd function that implements it and the
oracle tests that check it. A new Kubernetes release adds, moves or removes such
functions; running this on its checkout tells which rows to add or drop, and the Rust test
`defaults::oracle::upstream_table` then fails until each new row is implemented and tested.

Usage:
    extract_set_defaults.py KUBERNETES_CHECKOUT            # print the list as TSV
    extract_set_defaults.py KUBERNETES_CHECKOUT --check     # compare with upstream.tsv

The list covers `pkg/apis/<group>/<version>/defaults.go`, the apiextensions-apiserver and
kube-aggregator `defaults.go` files under `staging/`, and the `+default=` markers of
`staging/src/k8s.io/api/<group>/<version>/types.go`. `--check` compares only the group
versions the table has rows for, and lists the others apart: most are versions kube no
longer serves (apps/v1beta1, batch/v1beta1, ...), which driftd need not default.
Markers are compared per type (a row names one field and covers its type's others), and a
`*PersistentVolumeSource` type is covered by its `*VolumeSource` twin's row.
"""

import os
import re
import sys

# pkg/apis directory -> API group, for the group/version column of the table.
GROUPS = {
    "core": "core",
    "admissionregistration": "admissionregistration.k8s.io",
    "apiserverinternal": "internal.apiserver.k8s.io",
    "apps": "apps",
    "authentication": "authentication.k8s.io",
    "authorization": "authorization.k8s.io",
    "autoscaling": "autoscaling",
    "batch": "batch",
    "certificates": "certificates.k8s.io",
    "coordination": "coordination.k8s.io",
    "discovery": "discovery.k8s.io",
    "events": "events.k8s.io",
    "extensions": "extensions",
    "flowcontrol": "flowcontrol.apiserver.k8s.io",
    "imagepolicy": "imagepolicy.k8s.io",
    "networking": "networking.k8s.io",
    "node": "node.k8s.io",
    "policy": "policy",
    "rbac": "rbac.authorization.k8s.io",
    "resource": "resource.k8s.io",
    "scheduling": "scheduling.k8s.io",
    "storage": "storage.k8s.io",
    "storagemigration": "storagemigration.k8s.io",
}

STAGING_DEFAULTS = {
    "staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go":
        "apiextensions.k8s.io/v1",
    "staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/defaults.go":
        "apiregistration.k8s.io/v1",
}

FUNC = re.compile(r"^func (SetDefaults_\w+)\(", re.M)
TYPE = re.compile(r"^type (\w+) struct \{")
FIELD_JSON = re.compile(r'`json:"([^,"]*)')


def group_version(group_dir, version):
    return f"{GROUPS.get(group_dir, group_dir)}/{version}"


def version_files(base, name):
    """(group dir, version, path) of every `<group>/<version>/<name>` below `base`."""
    if not os.path.isdir(base):
        return
    for group_dir in sorted(os.listdir(base)):
        gdir = os.path.join(base, group_dir)
        if not os.path.isdir(gdir):
            continue
        for version in sorted(os.listdir(gdir)):
            path = os.path.join(gdir, version, name)
            if re.fullmatch(r"v\d+((alpha|beta)\d+)?", version) and os.path.isfile(path):
                yield group_dir, version, path


def functions(root):
    """(group/version, file, function) of every SetDefaults_ function."""
    out = []
    for group_dir, version, path in version_files(os.path.join(root, "pkg", "apis"), "defaults.go"):
        rel = os.path.relpath(path, root)
        for name in FUNC.findall(open(path, encoding="utf-8").read()):
            out.append((group_version(group_dir, version), rel, name))
    for rel, gv in STAGING_DEFAULTS.items():
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            for name in FUNC.findall(open(path, encoding="utf-8").read()):
                out.append((gv, rel, name))
    return out


def markers(root):
    """(group/version, file, '+default Type.field') of every +default= marker."""
    out = []
    api = os.path.join(root, "staging", "src", "k8s.io", "api")
    for group_dir, version, path in version_files(api, "types.go"):
        rel = os.path.relpath(path, root)
        current, pending = None, False
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            t = TYPE.match(line)
            if t:
                current, pending = t.group(1), False
            elif line.startswith("// +default="):
                pending = True
            elif pending and not line.startswith("//"):
                j = FIELD_JSON.search(line)
                if j and current:
                    gv = group_version(group_dir, version)
                    out.append((gv, rel, f"+default {current}.{j.group(1)}"))
                pending = False
    return out


def table_rows(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        f = line.rstrip("\n").split("\t")
        rows.append((f[0], f[1], f[2]))
    return rows


def marker_type(function):
    """The type a marker row covers, a PersistentVolumeSource twin folded onto its
    VolumeSource."""
    t = function.split(" ", 1)[1].split(".", 1)[0]
    return t.replace("PersistentVolumeSource", "VolumeSource")


def key(gv, function):
    if function.startswith("+default "):
        return (gv, "+default " + marker_type(function))
    return (gv, function)


def check(root, table):
    upstream = functions(root) + markers(root)
    rows = table_rows(table)
    in_table = {key(gv, f) for gv, _, f in rows}
    table_versions = {gv for gv, _, _ in rows}
    upstream_keys = {key(gv, f) for gv, _, f in upstream}
    status = 0
    for gv, rel, f in upstream:
        if gv in table_versions and key(gv, f) not in in_table:
            print(f"missing from the table\t{gv}\t{rel}\t{f}")
            status = 1
    for gv, rel, f in rows:
        if key(gv, f) not in upstream_keys:
            print(f"not upstream (removed or moved?)\t{gv}\t{rel}\t{f}")
            status = 1
    others = sorted({gv for gv, _, _ in upstream} - table_versions)
    for gv in others:
        names = sorted({f for g, _, f in upstream if g == gv})
        print(f"version without rows (served by this release?)\t{gv}\t{', '.join(names)}")
    return status


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    if "--check" in argv[2:]:
        table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "upstream.tsv")
        return check(root, table)
    for gv, rel, f in functions(root) + markers(root):
        print(f"{gv}\t{rel}\t{f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
