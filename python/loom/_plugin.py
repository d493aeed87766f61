"""Which PJRT plugin lazy:xla loads when loom runs from a virtual environment.

The C++ discovery (src/backends/xla/plugin_discovery.h) looks for the
xla-cpu-pjrt wheel in the source tree's .venv/, in $VIRTUAL_ENV and in the
site-packages of the `python3` on PATH. A venv's interpreter run without
activating the venv (`/path/venv/bin/python script.py`) sets no
$VIRTUAL_ENV, and the `python3` on PATH is another one: the plugin that
`pip install xla-cpu-pjrt` put beside loom was not found. So, before the
extension loads, name_cpu_plugin() names the CPU plugin of this interpreter's
site-packages in LOOM_PJRT_PLUGIN, unless LOOM_PJRT_PLUGIN is set or
PJRT_DEVICE asks for another device. Child processes (the `loom` CLI) inherit
it and load the same plugin.
"""

import os
import site

# The xla-cpu-pjrt wheel's file (plugin_discovery.h's table).
CPU_PLUGIN = os.path.join("xla_plugins", "xla_cpu_pjrt", "xla_cpu_pjrt.so")


def site_dirs():
    """This interpreter's site-packages folders, its user site last."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return dirs


def name_cpu_plugin():
    """Sets LOOM_PJRT_PLUGIN to this interpreter's CPU plugin; returns its
    path, or None when it left the environment alone."""
    if os.environ.get("LOOM_PJRT_PLUGIN"):
        return None
    if os.environ.get("PJRT_DEVICE", "").upper() not in ("", "CPU"):
        return None
    for d in site_dirs():
        path = os.path.join(d, CPU_PLUGIN)
        if os.path.isfile(path):
            os.environ["LOOM_PJRT_PLUGIN"] = path
            return path
    return None
