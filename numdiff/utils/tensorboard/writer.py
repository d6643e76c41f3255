"""SummaryWriter: ``torch.utils.tensorboard.SummaryWriter`` for numdiff, writing TensorBoard event files.

Events go through the tensorboard package's own ``EventFileWriter`` (a queue, a background thread
and CRC-checked records), so ``tensorboard --logdir runs`` and its readers see them as they see
PyTorch's. Values may be numdiff tensors, NumPy arrays or Python numbers.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from numdiff.utils.tensorboard import _graph, _summary


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters and graphs for TensorBoard.

    >>> writer = SummaryWriter("runs/digits")
    >>> for step in range(3):
    ...     writer.add_scalar("loss/train", 1.0 / (step + 1), step)
    >>> writer.close()
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._writer: EventFileWriter | None = None
        self._children: dict[str, SummaryWriter] = {}
        self._open()

    def _open(self) -> None:
        self._writer = EventFileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
        if self.purge_step is not None:
            # TensorBoard drops the events at and after this step from earlier runs in the folder.
            self._writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
            self._writer.add_event(Event(step=self.purge_step, session_log=SessionLog(status=SessionLog.START)))
            self.purge_step = None

    def get_logdir(self) -> str:
        return self.log_dir

    def _event(self, summary: Any = None, step: int | None = None, walltime: float | None = None, **fields: Any) -> None:
        if self._writer is None:
            raise RuntimeError(f"SummaryWriter: the writer for {self.log_dir!r} is closed")
        event = Event(wall_time=time.time() if walltime is None else float(walltime), **fields)
        if summary is not None:
            event.summary.CopyFrom(summary)
        if step is not None:
            event.step = int(step)
        self._writer.add_event(event)

    # ----------------------------------------------------------------- values
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number under `tag` at `global_step`."""
        self._event(_summary.scalar(tag, scalar_value), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers on one chart: each to its own run folder ``<log_dir>/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, f"{main_tag}_{tag}".replace("/", "_"))
            child = self._children.get(folder)
            if child is None:
                child = self._children[folder] = SummaryWriter(folder, max_queue=self.max_queue,
                                                               flush_secs=self.flush_secs)
            child.add_scalar(main_tag, value, global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Log the distribution of `values` (TensorFlow's exponential bins by default, or NumPy's `bins`)."""
        self._event(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Log one image: floats in [0, 1] or uint8, laid out as `dataformats` (CHW, HWC or HW)."""
        self._event(_summary.image(tag, _summary.to_hwc(img_tensor, dataformats, "add_image")), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid image (laid out as make_grid does, up to 8 a row)."""
        batch = _summary.as_numpy(img_tensor, "add_images")
        dataformats = dataformats.upper()
        if "N" not in dataformats or batch.ndim != len(dataformats):
            raise ValueError(f"add_images: dataformats {dataformats!r} does not describe a batch of shape {batch.shape}")
        batch = batch.transpose([dataformats.index(a) for a in "N" + dataformats.replace("N", "")])
        images = [_summary.to_hwc(b, dataformats.replace("N", ""), "add_images") for b in batch]
        columns = min(8, len(images))
        rows = -(-len(images) // columns)
        h, w, c = images[0].shape
        grid = np.zeros((rows * h, columns * w, c), np.uint8)
        for i, picture in enumerate(images):
            grid[(i // columns) * h : (i // columns + 1) * h, (i % columns) * w : (i % columns + 1) * w] = picture
        self._event(_summary.image(tag, grid), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None, walltime: float | None = None) -> None:
        self._event(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """Log one hyperparameter run and its metrics, in its own run folder (``run_name``, default the time)."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
        folder = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(folder) as run:
            for summary in _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete):
                run._event(summary, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the traced forward graph of ``model(*input_to_model)`` (traced in eval mode)."""
        if input_to_model is None:
            raise ValueError("add_graph: numdiff traces the model to draw it, so it needs input_to_model")
        inputs = tuple(input_to_model) if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
        graph = _graph.graph_def(model, inputs)
        if verbose:
            print(graph)
        self._event(graph_def=graph.SerializeToString())

    # ----------------------------------------------------------------- lifetime
    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()
        for child in self._children.values():
            child.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for child in self._children.values():
            child.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
