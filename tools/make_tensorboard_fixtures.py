#!/usr/bin/env python3
"""Writes tests/fixtures/tensorboard/reference.tfevents with TensorBoard's own
protobuf classes and record writer, for tests/io/tensorboard_test.cpp: loom's
encoder must produce these bytes, and loom's test reader must read them.

Assumes PyPI tensorboard (pip install tensorboard); no torch needed. The
events are the kinds loom writes: the file_version event, scalar events (one
value each, as SummaryWriter.add_scalar writes them; step 0 and value 0 check
proto3's default rules, a large step the varint), and a text summary built as
torch.utils.tensorboard.summary.text builds it (plugin "text",
"<tag>/text_summary", a DT_STRING tensor of shape [1]).

  python3 tools/make_tensorboard_fixtures.py
"""
import pathlib

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.plugins.text import plugin_data_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "tensorboard" / "reference.tfevents"

# (wall_time, step, tag, value): mirrored in tests/io/tensorboard_test.cpp.
SCALARS = [
    (1700000001.5, 10, "train/loss", 2.5),
    (1700000001.5, 10, "train/learning_rate", 5e-05),
    (1700000002.25, 0, "eval/loss", 0.0),
    (1700000003.0, 123456789012, "lazy/CompileTime", -1.25),
]
TEXT = (1700000004.0, 3, "args", '{"learning_rate": 5e-05}')


def scalar_event(wall_time, step, tag, value):
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary)


def text_event(wall_time, step, tag, text):
    plugin = summary_pb2.SummaryMetadata.PluginData(
        plugin_name="text", content=plugin_data_pb2.TextPluginData(version=0).SerializeToString())
    tensor = tensor_pb2.TensorProto(
        dtype="DT_STRING", string_val=[text.encode("utf-8")],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]))
    value = summary_pb2.Summary.Value(tag=tag + "/text_summary", tensor=tensor,
                                      metadata=summary_pb2.SummaryMetadata(plugin_data=plugin))
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[value]))


def main():
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "wb") as f:
        writer = RecordWriter(f)
        writer.write(event_pb2.Event(wall_time=1700000000.25, file_version="brain.Event:2").SerializeToString())
        for s in SCALARS:
            writer.write(scalar_event(*s).SerializeToString())
        writer.write(text_event(*TEXT).SerializeToString())
        writer.flush()
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
