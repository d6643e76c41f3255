"""Summary protos for TensorBoard: scalars, histograms, images (PNG), text and hyperparameters.

Each function returns a ``tensorboard.compat.proto.summary_pb2.Summary`` holding one value, laid out
as TensorBoard's own readers (the scalars, histograms, images, text and hparams plugins) expect.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
from google.protobuf.struct_pb2 import Value
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

from numdiff.tensor import Tensor

HPARAMS_TAGS = ("_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info")


def as_numpy(value: Any, what: str) -> np.ndarray:
    """`value` (a tensor, array or number) as a host NumPy array; bfloat16 widened to float32."""
    if isinstance(value, Tensor):
        return value.detach().cpu()._host_values()
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{what}: expected numbers, a tensor or an array, got {type(value).__name__} of dtype {array.dtype}")
    return array


def scalar(tag: str, value: Any) -> Summary:
    array = as_numpy(value, "add_scalar")
    if array.size != 1:
        raise ValueError(f"add_scalar: {tag!r} needs one number, got a value of shape {array.shape}")
    return Summary(value=[Summary.Value(tag=tag, simple_value=float(array.reshape(()) if array.ndim else array))])


def _tensorflow_bins() -> np.ndarray:
    # TensorFlow's default histogram edges: +-1e-12 growing by 10% to 1e20, and 0.
    positive = 1e-12 * 1.1 ** np.arange(int(np.ceil(np.log(1e20 / 1e-12) / np.log(1.1))))
    return np.concatenate([-positive[::-1], [0.0], positive])


def histogram(tag: str, values: Any, bins: Any = "tensorflow", max_bins: int | None = None) -> Summary:
    array = as_numpy(values, "add_histogram").astype(np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError(f"add_histogram: {tag!r} got no values; a histogram needs at least one")
    if not np.isfinite(array).all():
        raise ValueError(f"add_histogram: {tag!r} holds NaN or inf, which a histogram cannot bin")
    edges = _tensorflow_bins() if isinstance(bins, str) and bins == "tensorflow" else bins
    counts, limits = np.histogram(array, bins=edges)
    if max_bins is not None and len(counts) > max_bins:
        step = -(-len(counts) // max_bins)
        counts = np.add.reduceat(counts, np.arange(0, len(counts), step))
        limits = np.concatenate([limits[::step], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    first, last = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, len(counts))
    proto = HistogramProto(
        min=float(array.min()), max=float(array.max()), num=int(array.size), sum=float(array.sum()),
        sum_squares=float(np.dot(array, array)),
        bucket_limit=[float(x) for x in limits[first + 1 : last + 1]],
        bucket=[float(x) for x in counts[first:last]],
    )
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def png(image: np.ndarray) -> bytes:
    """PNG bytes of a uint8 HWC image with 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels."""
    height, width, channels = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = b"".join(b"\x00" + row.tobytes() for row in np.ascontiguousarray(image))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def to_hwc(values: Any, dataformats: str, what: str) -> np.ndarray:
    """An image in `dataformats` (CHW, HWC, HW, ...) as uint8 HWC: floats in [0, 1] scaled by 255."""
    array = as_numpy(values, what)
    dataformats = dataformats.upper()
    if sorted(dataformats) not in (sorted("CHW"), sorted("HW")) or array.ndim != len(dataformats):
        raise ValueError(
            f"{what}: dataformats {dataformats!r} does not describe a value of shape {array.shape} "
            "(use 'CHW', 'HWC' or 'HW')"
        )
    if "C" not in dataformats:
        array, dataformats = array[..., None], dataformats + "C"
    array = np.transpose(array, [dataformats.index(axis) for axis in "HWC"])
    if array.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"{what}: an image has 1, 2, 3 or 4 channels, got {array.shape[2]}")
    if array.dtype.kind == "f":
        array = np.clip(array * 255.0, 0, 255).round()
    elif array.dtype != np.uint8 and (array.min() < 0 or array.max() > 255):
        raise ValueError(f"{what}: integer pixels must lie in [0, 255], got [{array.min()}, {array.max()}]")
    return array.astype(np.uint8)


def image(tag: str, hwc: np.ndarray) -> Summary:
    height, width, channels = hwc.shape
    proto = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=png(hwc))
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def text(tag: str, text_string: str) -> Summary:
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)])


def _plugin_value(tag: str, data: plugin_data_pb2.HParamsPluginData) -> Summary:
    metadata = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name="hparams", content=data.SerializeToString())
    )
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def _hparam_value(name: str, value: Any) -> Any:
    if isinstance(value, bool):
        return Value(bool_value=value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return Value(number_value=float(value))
    if isinstance(value, str):
        return Value(string_value=value)
    if isinstance(value, Tensor) and value.numel() == 1:
        return Value(number_value=float(value.item()))
    raise TypeError(f"add_hparams: hyperparameter {name!r} must be a bool, number, str or one-element tensor, "
                    f"got {type(value).__name__}")


def hparams(hparam_dict: dict, metric_dict: dict, domain_discrete: dict | None = None) -> list[Summary]:
    """The experiment, session-start and session-end summaries of one hparams run."""
    values = {name: _hparam_value(name, value) for name, value in hparam_dict.items()}
    infos = []
    for name, value in values.items():
        info = api_pb2.HParamInfo(name=name)
        kind = value.WhichOneof("kind")
        info.type = {"bool_value": api_pb2.DATA_TYPE_BOOL, "number_value": api_pb2.DATA_TYPE_FLOAT64,
                     "string_value": api_pb2.DATA_TYPE_STRING}[kind]
        if domain_discrete and name in domain_discrete:
            info.domain_discrete.extend(_hparam_value(name, v) for v in domain_discrete[name])
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metric_dict]
    experiment = plugin_data_pb2.HParamsPluginData(
        version=0, experiment=api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    )
    start = plugin_data_pb2.HParamsPluginData(version=0, session_start_info=plugin_data_pb2.SessionStartInfo())
    for name, value in values.items():
        start.session_start_info.hparams[name].CopyFrom(value)
    end = plugin_data_pb2.HParamsPluginData(
        version=0, session_end_info=plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
    )
    return [_plugin_value(tag, data) for tag, data in zip(HPARAMS_TAGS, (experiment, start, end))]
