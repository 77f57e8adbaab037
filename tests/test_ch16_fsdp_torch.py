"""``fsdp_train`` refuses, at its entry, a PyTorch whose CPU stream cannot record events (before 2.7):
fully_shard would otherwise fail deep inside its first all-gather."""
import re

import pytest
import torch

from stepbystep.training.data_parallel import DataParallelRun
from stepbystep.training.sharded import check_fsdp_on_cpu, fsdp_train


def test_fsdp_train_names_the_release_it_needs_and_the_one_installed(monkeypatch):
    monkeypatch.delattr(torch.cpu.Stream, "record_event")  # what PyTorch 2.6's CPU stream looks like
    message = rf"PyTorch 2\.7 on .*this is PyTorch {re.escape(torch.__version__)}.*torch>=2\.7"
    with pytest.raises(RuntimeError, match=message):
        fsdp_train(0, 1, DataParallelRun())


def test_the_check_passes_on_this_torch_and_reads_the_stream_fully_shard_uses():
    assert torch.get_device_module("cpu").Stream is torch.cpu.Stream
    assert check_fsdp_on_cpu() is None
