#!/usr/bin/env python3
"""Regenerates ../src/api_types.tsv: which fields of the built-in API types kube-apiserver
never prints when they hold their zero value.

kube-apiserver encodes objects with Go's encoding/json. A field is left out of the output
when its json tag says `omitempty` and its Go type is a non-pointer bool, number, string,
slice or map holding the zero value (false, 0, "", empty), or when the tag says `omitzero`
(Go 1.24) whatever the type. A struct with `omitempty` is printed anyway (`{}`, or `null`
for metav1.Time), and a pointer is printed whenever it is set, even to a zero value: so
`replicas: 0` (a *int32) comes back, `initialDelaySeconds: 0` (an int32 with omitempty)
does not.

This reads the json tags and Go types of every struct of the published API packages
(k8s.io/api: every group/version; k8s.io/apimachinery: meta/v1 and the scalar and struct
types the API refers to; k8s.io/apiextensions-apiserver: apiextensions/v1), the same
sources and commits as extract_patch_merge_keys.py, and writes:

    K <TAB> group <TAB> version <TAB> kind <TAB> root type
    F <TAB> type <TAB> json name <TAB> zero <TAB> maps <TAB> child type

one K row per kind (a struct embedding metav1.TypeMeta with an ObjectMeta, List types left
out) and one F row per field of every struct reachable from a kind. `zero` is the JSON shape
of a value left out when zero (bool, number, string, list, map; `any` for omitzero), or `-`
when the field is always printed. `maps` counts the map levels between the field and
`child` (map keys are path steps, list positions are not), `child` is the struct type the
field leads to, `[]byte` for bytes (a base64 string in JSON, compared by what it decodes
to), or `-`.

Usage (bare git directories, e.g. from `fetch github:kubernetes/api`):
    extract_omitempty_fields.py API_GIT API_REV MACHINERY_GIT MACHINERY_REV \
        APIEXT_GIT APIEXT_REV > ../src/api_types.tsv
"""

import re
import subprocess
import sys

API, MACHINERY, APIEXT = 0, 1, 2

# The child type written for a `[]byte` field (base64 in JSON), which has no fields.
BYTES = ("", "[]byte")

# Packages besides k8s.io/api's group/versions: (import path, repository, directory).
EXTRA = [
    ("k8s.io/apimachinery/pkg/apis/meta/v1", MACHINERY, "pkg/apis/meta/v1"),
    ("k8s.io/apimachinery/pkg/types", MACHINERY, "pkg/types"),
    ("k8s.io/apimachinery/pkg/api/resource", MACHINERY, "pkg/api/resource"),
    ("k8s.io/apimachinery/pkg/util/intstr", MACHINERY, "pkg/util/intstr"),
    ("k8s.io/apimachinery/pkg/runtime", MACHINERY, "pkg/runtime"),
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", APIEXT,
     "pkg/apis/apiextensions/v1"),
]

SCALARS = {
    "bool": "bool", "string": "string", "byte": "number", "rune": "number",
    "int": "number", "int8": "number", "int16": "number", "int32": "number",
    "int64": "number", "uint": "number", "uint8": "number", "uint16": "number",
    "uint32": "number", "uint64": "number", "float32": "number", "float64": "number",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


FIELD = re.compile(r'^\s+(?:(\w+)\s+)?([\w.\[\]*]+(?:\[[\w.]+\][\w.\[\]*]+)?)\s+`([^`]*)`')
TAG = re.compile(r'(\w+):"([^"]*)"')
TYPEDECL = re.compile(r'^type (\w+) (.+)$', re.M)


def go_files(repo, rev, directory):
    for name in git(repo, "ls-tree", "--name-only", rev, directory + "/").split():
        base = name.split("/")[-1]
        if name.endswith(".go") and not name.endswith("_test.go") and \
                not base.startswith(("zz_generated", "generated")):
            yield git(repo, "show", f"{rev}:{name}")


def load(packages):
    """{import path: {type: ("struct", fields) | ("alias", go type expression)}}, and the
    group name of each package that declares one."""
    types, groups = {}, {}
    for path, (repo, rev, directory) in packages.items():
        decls = {}
        for text in go_files(repo, rev, directory):
            imports = {}
            for alias, imp in re.findall(r'^\s*(\w+)?\s*"(k8s\.io/[^"]+)"\s*$', text, re.M):
                imports[alias or imp.rsplit("/", 1)[-1]] = imp
            group = re.search(r'^const GroupName = "([^"]*)"', text, re.M)
            if group:
                groups[path] = group.group(1)
            for m in re.finditer(r'^type (\w+) struct \{\n(.*?)^\}', text, re.M | re.S):
                fields = []
                for line in m.group(2).splitlines():
                    f = FIELD.match(line)
                    if not f or line.strip().startswith("//"):
                        continue
                    fields.append((f.group(1), f.group(2), dict(TAG.findall(f.group(3))),
                                   imports))
                decls[m.group(1)] = ("struct", fields)
            for m in TYPEDECL.finditer(text):
                name, expr = m.group(1), m.group(2).strip()
                if name in decls or expr.startswith(("struct", "interface", "func", "=")):
                    continue
                decls[name] = ("alias", (expr.split("//")[0].strip(), imports))
        types[path] = decls
    return types, groups


def resolve(base, package, imports):
    """(import path, type name) a type name refers to."""
    if "." in base:
        alias, name = base.split(".", 1)
        return imports.get(alias), name
    return package, base


def shape(go_type, package, imports, types, seen=()):
    """(JSON shape of the zero value, map levels, (package, struct) the type leads to)."""
    maps, pointer, outer = 0, False, None
    t = go_type
    while True:
        if t.startswith("*"):
            pointer = pointer or outer is None
            t = t[1:]
        elif t == "[]byte":
            # Bytes are a base64 string in JSON: marked so readers compare decoded bytes.
            return ("pointer" if pointer else outer or "string"), maps, BYTES
        elif t.startswith("[]"):
            outer = outer or "list"
            t = t[2:]
        elif t.startswith("map["):
            outer = outer or "map"
            maps += 1
            t = t[t.index("]") + 1:]
        else:
            break
    if t in SCALARS:
        return ("pointer" if pointer else outer or SCALARS[t]), maps, None
    target = resolve(t, package, imports)
    decl = types.get(target[0], {}).get(target[1])
    if decl is None:
        return ("pointer" if pointer else outer or "unknown"), maps, None
    if decl[0] == "struct":
        return ("pointer" if pointer else outer or "struct"), maps, target
    if target in seen:
        return "unknown", maps, None
    inner, more_maps, child = shape(decl[1][0], target[0], decl[1][1], types, seen + (target,))
    if pointer:
        inner = "pointer"
    elif outer:
        inner = outer
    return inner, maps + more_maps, child


def fields_of(types, package, name, stack):
    """(json name, go type, tags, imports, package) of a struct, inlined structs expanded."""
    out = []
    for field, go_type, tags, imports in types[package][name][1]:
        json_opts = tags.get("json", "").split(",")
        if "inline" in json_opts[1:] or (field is None and not json_opts[0]):
            target = resolve(go_type.lstrip("*"), package, imports)
            decl = types.get(target[0], {}).get(target[1])
            if decl and decl[0] == "struct" and target not in stack:
                out.extend(fields_of(types, target[0], target[1], stack + [target]))
            continue
        if json_opts[0] and json_opts[0] != "-":
            out.append((json_opts[0], go_type, json_opts[1:], imports, package))
    return out


def short(types, target):
    package, name = target
    return f"{package.split('k8s.io/', 1)[-1]}.{name}"


def main():
    args = sys.argv[1:]
    if len(args) != 6:
        sys.exit(__doc__)
    repos = [(args[0], args[1]), (args[2], args[3]), (args[4], args[5])]
    api_repo, api_rev = repos[API]
    packages = {}
    for d in git(api_repo, "ls-tree", "-d", "-r", "--name-only", api_rev).split():
        if re.fullmatch(r"[a-z]+/v\d+(?:(?:alpha|beta)\d+)?", d):
            packages[f"k8s.io/api/{d}"] = (api_repo, api_rev, d)
    for path, idx, directory in EXTRA:
        packages[path] = (repos[idx][0], repos[idx][1], directory)
    types, groups = load(packages)

    kinds = []
    for path in sorted(packages):
        if not path.startswith("k8s.io/api/") and "apiextensions" not in path:
            continue
        version = path.rsplit("/", 1)[1]
        for name, decl in sorted(types[path].items()):
            if decl[0] != "struct" or name.endswith("List"):
                continue
            embeds = [(f, t) for f, t, _, _ in decl[1]]
            if (None, "metav1.TypeMeta") in embeds and any(
                    t == "metav1.ObjectMeta" for _, t in embeds):
                kinds.append((groups.get(path, ""), version, name, (path, name)))

    rows, done, todo = [], set(), [k[3] for k in kinds]
    while todo:
        target = todo.pop()
        if target in done:
            continue
        done.add(target)
        for json_name, go_type, opts, imports, package in fields_of(
                types, target[0], target[1], [target]):
            zero, maps, child = shape(go_type, package, imports, types)
            if "omitzero" in opts:
                omitted = "any"
            elif "omitempty" in opts and zero in ("bool", "number", "string", "list", "map"):
                omitted = zero
            else:
                omitted = "-"
            if child and child != BYTES:
                todo.append(child)
            rows.append((short(types, target), json_name, omitted, str(maps),
                         "[]byte" if child == BYTES else short(types, child) if child else "-"))

    commits = [git(r, "rev-parse", f"{rev}^{{commit}}").strip() for r, rev in repos]
    upstream = re.findall(r"Kubernetes-commit: (\w+)",
                          git(api_repo, "log", "-1", "--format=%B", api_rev))
    print("# Fields kube-apiserver's JSON encoder leaves out when they hold their zero value")
    print("# (non-pointer omitempty bool/number/string/list/map; omitzero), for every kind of")
    print("# the published API types. Generated by testdata/extract_omitempty_fields.py from:")
    print(f"#   k8s.io/api {commits[0]} (every group/version), published from")
    print(f"#   kubernetes/kubernetes {upstream[0] if upstream else '?'} (staging/src/k8s.io/api)")
    print(f"#   k8s.io/apimachinery {commits[1]} (meta/v1, types, resource, intstr, runtime)")
    print(f"#   k8s.io/apiextensions-apiserver {commits[2]} (pkg/apis/apiextensions/v1)")
    print("# K\tgroup\tversion\tkind\troot type")
    print("# F\ttype\tjson name\tzero shape or -\tmap levels\tchild type, []byte or -")
    for group, version, name, target in sorted(kinds):
        print("\t".join(["K", group, version, name, short(types, target)]))
    for row in sorted(rows):
        print("\t".join(["F", *row]))


if __name__ == "__main__":
    main()
