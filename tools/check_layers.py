#!/usr/bin/env python3
"""Checks loom's layer direction: a file in src/<layer>/ may include headers
only from its own layer or from layers before it (docs/layout.md,
DESIGN.md "Layers"). Public headers include/loom/<name>.h are placed in a layer
too, and checked by the same rule.

Usage:
  tools/check_layers.py [REPO_ROOT]      check the tree; exit 1 on a violation
  tools/check_layers.py --self-test      check the checker on a synthetic tree

A public header's layer is, in order: its entry in PUBLIC_HEADER_LAYER; else
the lowest layer holding a .cpp/.cc/.cu file with the same stem
(include/loom/safetensors.h -> src/io/safetensors.cpp -> io); else the
highest layer among the headers it includes itself (core if none).
Assumes includes are written from src/ or include/ ("ops/attrs.h",
"loom/dtype.h") or relative to the including file ("attrs.h").
"""
import os
import re
import sys
import tempfile

# Pipeline order: a layer may use only itself and the layers before it.
# distributed (ProcessGroup, collectives) sits just above core: the backends' all_reduce
# kernels call it, and it needs nothing but core.
LAYERS = ["core", "distributed", "io", "ops", "ir", "compiler", "backends", "lazy",
          "autograd", "nn", "optim", "data", "train"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# Public headers whose layer the stem rule would get wrong: "name.h": "layer".
# tensor.h declares the handle the lazy layer stores (its methods are
# implemented above, in autograd, which is allowed: a layer may use lower ones).
# config.h (PretrainedConfig) is implemented in io/config_json.cpp; xla_plugin.h in
# backends/xla/plugin_discovery.cpp; device_traits.h in lazy/dispatch.cpp.
PUBLIC_HEADER_LAYER = {"tensor.h": "lazy", "lazy.h": "lazy", "metrics.h": "core", "nn.h": "nn",
                      "dist.h": "distributed", "config.h": "io", "xla_plugin.h": "backends",
                      "device_traits.h": "lazy"}

SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".def", ".inc", ".cu", ".cuh")
IMPL_EXTS = (".cpp", ".cc", ".cu")  # files that can implement a public header
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def source_files(top):
    """All source files under top, as sorted absolute paths."""
    found = []
    for dirpath, _, names in os.walk(top):
        found += [os.path.join(dirpath, n) for n in names if n.endswith(SOURCE_EXTS)]
    return sorted(found)


def includes(path):
    """(line number, delimiter, target) for each #include in path."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                out.append((number, m.group(1), m.group(2)))
    return out


class Checker:
    def __init__(self, root):
        self.root = root
        self.src = os.path.join(root, "src")
        self.public = os.path.join(root, "include", "loom")
        self.errors = []
        self.public_layer = {}
        self._resolving = set()

    def layer_of_src(self, path):
        """Layer name of a path inside src/, or None when not in a layer folder."""
        rel = os.path.relpath(path, self.src).split(os.sep)
        return rel[0] if len(rel) > 1 else None

    def layer_of_public(self, name):
        """Layer of include/loom/<name> (see the module docstring)."""
        if name in self.public_layer:
            return self.public_layer[name]
        layer = PUBLIC_HEADER_LAYER.get(name)
        if layer is None:
            stem = os.path.splitext(name)[0]
            ranks = [RANK[self.layer_of_src(p)] for p in source_files(self.src)
                     if p.endswith(IMPL_EXTS)
                     and os.path.splitext(os.path.basename(p))[0] == stem
                     and self.layer_of_src(p) in RANK]
            if ranks:
                layer = LAYERS[min(ranks)]
        if layer is None:
            layer = "core"
            path = os.path.join(self.public, name)
            if name not in self._resolving and os.path.isfile(path):
                self._resolving.add(name)
                for _, delim, target in includes(path):
                    dep = self.layer_of_target(target, path)
                    if dep is not None and RANK[dep] > RANK[layer]:
                        layer = dep
                self._resolving.discard(name)
        self.public_layer[name] = layer
        return layer

    def layer_of_target(self, target, includer):
        """Layer an include target belongs to, or None for outside headers."""
        parts = target.split("/")
        if parts[0] == "loom" and len(parts) == 2:
            return self.layer_of_public(parts[1])
        if parts[0] in RANK and len(parts) > 1:
            return parts[0]
        local = os.path.normpath(os.path.join(os.path.dirname(includer), target))
        if os.path.isfile(local):
            if local.startswith(self.src + os.sep):
                return self.layer_of_src(local)
            if local.startswith(self.public + os.sep):
                return self.layer_of_public(os.path.relpath(local, self.public))
        return None

    def check_file(self, path, layer):
        rel = os.path.relpath(path, self.root)
        for number, _, target in includes(path):
            dep = self.layer_of_target(target, path)
            if dep in RANK and RANK[dep] > RANK[layer]:
                self.errors.append(f"{rel}:{number}: layer '{layer}' includes \"{target}\" "
                                   f"from later layer '{dep}'")

    def run(self):
        if not os.path.isdir(self.src):
            self.errors.append(f"{self.src}: no src/ folder")
            return self.errors
        for path in source_files(self.src):
            layer = self.layer_of_src(path)
            if layer not in RANK:
                rel = os.path.relpath(path, self.root)
                self.errors.append(f"{rel}: not inside a layer folder src/<{'|'.join(LAYERS)}>/")
                continue
            self.check_file(path, layer)
        if os.path.isdir(self.public):
            for path in source_files(self.public):
                name = os.path.relpath(path, self.public)
                self.check_file(path, self.layer_of_public(name))
        return self.errors


def self_test():
    """Builds a small tree with known violations and checks exactly those are found."""
    files = {
        "src/core/buffer.h": '#include <vector>\n#include "loom/error.h"\n',
        "src/core/bad.cpp": '#include "loom/tensor.h"\n',               # core -> lazy
        "src/ops/attrs.h": '#include "core/buffer.h"\n#include "attrs_impl.h"\n',
        "src/ops/attrs_impl.h": "\n",
        "src/ops/uses_lazy.cpp": '#include "ops/attrs.h"\n#include "lazy/graph.h"\n',
        "src/lazy/graph.h": "\n",
        "src/lazy/tensor.cpp": '#include "loom/tensor.h"\n#include "backends/cpu/k.h"\n',
        "src/backends/cpu/k.h": '#include "../reference/r.h"\n',
        "src/backends/reference/r.h": '#include "../../lazy/graph.h"\n',  # backends -> lazy
        "src/stray.cpp": "\n",                                           # not in a layer
        "src/widgets/w.cpp": "\n",                                       # unknown layer
        "include/loom/error.h": "#include <string>\n",
        "include/loom/tensor.h": '#include "loom/error.h"\n',
        "include/loom/alias.h": '#include "loom/tensor.h"\n',  # header-only: takes lazy
        "include/loom/shape.h": '#include "loom/alias.h"\n',   # src/core/shape.cpp: core
        "src/core/shape.cpp": '#include "loom/shape.h"\n',
        "src/ops/ops.def": "\n",                  # a .def does not implement loom/ops.h
        "src/lazy/ops.cpp": '#include "loom/ops.h"\n',
        "include/loom/ops.h": '#include "loom/tensor.h"\n',  # lazy -> lazy: fine
        "src/ir/node.cpp": '#include "loom/ops.h"\n',       # ir -> lazy
    }
    expected = [
        "include/loom/shape.h:1: layer 'core' includes \"loom/alias.h\" from later layer 'lazy'",
        "src/backends/reference/r.h:1: layer 'backends' includes \"../../lazy/graph.h\" "
        "from later layer 'lazy'",
        "src/core/bad.cpp:1: layer 'core' includes \"loom/tensor.h\" from later layer 'lazy'",
        "src/ir/node.cpp:1: layer 'ir' includes \"loom/ops.h\" from later layer 'lazy'",
        "src/ops/uses_lazy.cpp:2: layer 'ops' includes \"lazy/graph.h\" from later layer 'lazy'",
        "src/stray.cpp: not inside a layer folder",
        "src/widgets/w.cpp: not inside a layer folder",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        found = sorted(Checker(root).run())
    ok = len(found) == len(expected) and all(
        f.startswith(e) for f, e in zip(found, expected))
    if not ok:
        print("check_layers self-test FAILED")
        print("expected:\n  " + "\n  ".join(expected))
        print("found:\n  " + "\n  ".join(found))
        return 1
    print(f"check_layers self-test: {len(expected)} planted violations found, nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else
                           os.path.join(os.path.dirname(__file__), ".."))
    errors = Checker(root).run()
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s); the order is {' -> '.join(LAYERS)}")
        print("(a public header placed in the wrong layer: add it to PUBLIC_HEADER_LAYER)")
        return 1
    print(f"check_layers: ok ({len(source_files(os.path.join(root, 'src')))} files in src/)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
