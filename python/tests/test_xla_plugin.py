"""lazy:xla from a virtual environment that is not activated: loom names the
xla-cpu-pjrt plugin of its own interpreter's site-packages in LOOM_PJRT_PLUGIN
(loom/_plugin.py), and leaves an explicit LOOM_PJRT_PLUGIN or a non-CPU
PJRT_DEVICE alone. Each case imports loom in a child process with a clean
environment (no VIRTUAL_ENV: `/path/venv/bin/python` run directly)."""

import os
import subprocess
import sys

import pytest

from loom._plugin import CPU_PLUGIN, site_dirs

PRINT_PLUGIN = "import os, loom; print(os.environ.get('LOOM_PJRT_PLUGIN'))"


def run_child(code, tmp_path, **env_set):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOOM_PJRT_PLUGIN", "VIRTUAL_ENV", "PJRT_DEVICE")}
    env.update(env_set)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def installed_plugin():
    for d in site_dirs():
        if os.path.isfile(os.path.join(d, CPU_PLUGIN)):
            return os.path.join(d, CPU_PLUGIN)
    pytest.skip("xla-cpu-pjrt is not installed beside loom (pip install xla-cpu-pjrt)")


def test_the_interpreters_plugin_runs_lazy_xla(tmp_path):
    plugin = installed_plugin()
    code = ("import os, numpy as np, loom\n"
            "t = loom.tensor(np.arange(4, dtype=np.float32), device='lazy:xla')\n"
            "print((t * 2.0).sum().item(), os.environ['LOOM_PJRT_PLUGIN'])")
    total, named = run_child(code, tmp_path).split()
    assert (float(total), named) == (12.0, plugin)


def test_an_explicit_plugin_or_another_device_is_left_alone(tmp_path):
    assert run_child(PRINT_PLUGIN, tmp_path, LOOM_PJRT_PLUGIN="/nowhere/p.so") == "/nowhere/p.so"
    assert run_child(PRINT_PLUGIN, tmp_path, PJRT_DEVICE="CUDA") == "None"
