"""The lazy device from Python: mark_step compiles once then hits the cache
(PyTorch/XLA's counters), autograd through a traced graph, the metrics
report's names, and the GIL released while a graph compiles and runs."""

import sys
import threading
import time

import numpy as np

import loom


def step(x, w):
    return ((x @ w).relu() * 0.5).sum()


def test_mark_step_compiles_once_then_hits_the_cache():
    loom.lazy.clear_all()
    loom.lazy.clear_compile_cache()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    expected = float(np.maximum(x @ w, 0).sum() * 0.5)
    values = []
    for _ in range(3):
        loss = step(loom.tensor(x, device="lazy"), loom.tensor(w, device="lazy"))
        assert loom.lazy.pending_nodes() > 0
        loom.lazy.mark_step()
        values.append(loss.item())
    np.testing.assert_allclose(values, [expected] * 3, rtol=1e-5)
    assert loom.lazy.counter_value("MarkStep") == 3
    assert loom.lazy.counter_value("UncachedCompile") == 1
    assert loom.lazy.counter_value("CachedCompile") == 2
    assert loom.lazy.counter_value("EarlySync") == 0  # item() after mark_step reads data
    count, total_ns, samples = loom.lazy.metric_data("CompileTime")
    assert count == 1 and total_ns > 0 and len(samples) == 1
    assert "MarkStep" in loom.lazy.counter_names()
    assert "ExecuteTime" in loom.lazy.metric_names()


def test_metrics_report_uses_pytorch_xla_names():
    loom.lazy.clear_all()
    loom.lazy.clear_compile_cache()
    y = (loom.tensor([1.0, 2.0], device="lazy") * 2.0).sum()  # live: mark_step computes it
    loom.lazy.mark_step()
    assert y.item() == 6.0
    report = loom.lazy.metrics_report()
    for line in ("Metric: CompileTime", "Metric: ExecuteTime", "Counter: MarkStep",
                 "Value: 1", "TotalSamples:", "Percentiles:"):
        assert line in report, report


def test_backward_through_the_lazy_device():
    wv = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    w = loom.tensor(wv, device="lazy").requires_grad_()
    loss = (w * w).sum()
    loss.backward()
    loom.lazy.mark_step()
    assert w.grad is not None and w.grad.device == "lazy:cpu"
    np.testing.assert_allclose(w.grad.numpy(), 2 * wv)
    assert loss.item() == float((wv * wv).sum())


def test_gil_is_released_while_a_graph_compiles_and_runs():
    # A fresh graph (an uncached compile) of 40 256x256 matmuls runs in
    # mark_step on another thread, which notes when the call began and
    # ended; this thread notes the time of each of its Python iterations.
    # With a 1 s switch interval a thread holding the GIL keeps it for up to
    # 1 s, so had mark_step held it, no iteration of this thread could fall
    # in the middle half of the call; released, this thread spins throughout.
    loom.lazy.clear_compile_cache()
    n = 256
    x = loom.tensor(np.full((n, n), 1.0 / n, np.float32), device="lazy")
    y = x
    for _ in range(40):
        y = (y @ x) + 0.001
    span = []
    done = threading.Event()

    def run():
        span.append(time.perf_counter())
        loom.lazy.mark_step()
        loom.lazy.wait_device_ops()
        span.append(time.perf_counter())
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        thread = threading.Thread(target=run)
        ticks = []
        thread.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    t0, t1 = span
    w = t1 - t0
    middle = [t for t in ticks if t0 + w / 4 < t < t1 - w / 4]
    assert len(middle) > 10, f"{len(middle)} Python iterations in the middle of a {w:.3f} s call"
    np.testing.assert_allclose(y.numpy(), np.full((n, n), 1.0 / n + 0.001 * 40, np.float32),
                               rtol=0.05)
