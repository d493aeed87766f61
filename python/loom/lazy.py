"""loom.lazy: the lazy device's controls and metrics, with PyTorch/XLA's names.

    loss.backward(); optimizer.step()
    loom.lazy.mark_step()                  # xm.mark_step()
    print(loom.lazy.metrics_report())      # torch_xla.debug.metrics.metrics_report()

``mark_step``, ``wait_device_ops``, ``sync`` and ``metrics_report`` release
the GIL while loom compiles and runs. Metric names (docs/lazy.md): counters
``MarkStep``, ``UncachedCompile``, ``CachedCompile``, ``EarlySync``,
``ExecuteCount``, ...; timed metrics ``CompileTime``, ``ExecuteTime``,
``TransferToDeviceTime``, ``TransferFromDeviceTime`` (nanoseconds) and
``TensorsGraphSize`` (instructions per synced graph).
"""

import json

from loom._core import lazy as _lazy  # a submodule object, not an importable package

check_device = _lazy.check_device
clear_all = _lazy.clear_all
clear_compile_cache = _lazy.clear_compile_cache
counter_value = _lazy.counter_value
mark_step = _lazy.mark_step
metric_data = _lazy.metric_data
metrics_json = _lazy.metrics_json
metrics_report = _lazy.metrics_report
pending_nodes = _lazy.pending_nodes
recompile_causes = _lazy.recompile_causes
sync = _lazy.sync
wait_device_ops = _lazy.wait_device_ops


def counter_names():
    """The names of every counter counted so far (torch_xla.debug.metrics.counter_names)."""
    return sorted(json.loads(metrics_json()).get("counters", {}))


def metric_names():
    """The names of every timed or sampled metric so far (metric_names)."""
    return sorted(json.loads(metrics_json()).get("timers", {}))


__all__ = [
    "check_device",
    "clear_all",
    "clear_compile_cache",
    "counter_names",
    "counter_value",
    "mark_step",
    "metric_data",
    "metric_names",
    "metrics_json",
    "metrics_report",
    "pending_nodes",
    "recompile_causes",
    "sync",
    "wait_device_ops",
]
