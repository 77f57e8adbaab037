"""Chapter 14: the GPU cell's claims hold for the recorded run and name a gap that closes; the profiler's
operation count grows with the tiles; the running max's block labels are readable."""
import pytest
import torch

from stepbystep import plots
from stepbystep.experiments.attention_kernels import op_count
from stepbystep.experiments.gpu_attention import gpu_claims
from stepbystep.models import online_softmax_steps, tiled_attention

MIB = 2 ** 20
RECORDED = ({"written out": 16416 * MIB, "SDPA, flash kernel": 32 * MIB, "SDPA, math backend": None,
             "tiles of 64": 35 * MIB},  # the chapter's table, one H200 run
            {"written out": 5.6, "SDPA, flash kernel": 0.64, "SDPA, math backend": 16.9, "tiles of 256": 95.0,
             "tiles of 64": 1374.0},
            {"written out": 12.3, "SDPA, flash kernel": 2.3, "tiles of 256": 192.0})


def failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


def test_gpu_claims_hold_for_the_recorded_run():
    assert failing(gpu_claims(*RECORDED)) == []


def test_gpu_claims_name_a_gap_that_closes_and_a_way_that_did_not_run():
    peaks, forward, both = (dict(part) for part in RECORDED)
    forward["written out"] = 1.5  # the kernel only about twice as fast
    both["SDPA, flash kernel"] = None  # the kernel could not run backward
    assert failing(gpu_claims(peaks, forward, both)) == [
        "forward: the kernel over 3 times as fast as the written-out attention",
        "forward and backward: the kernel over twice as fast"]


def test_op_count_grows_with_the_number_of_tiles():
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, 16, generator=generator) for _ in range(3))
    small = op_count(lambda: tiled_attention(q, k, v, block_q=16, block_k=16))  # 64 tiles
    large = op_count(lambda: tiled_attention(q, k, v, block_q=64, block_k=64))  # 4 tiles
    assert large > 0 and small > 10 * large
    assert op_count(lambda: torch.ones(3) + 1) >= 2  # ones, add
    with pytest.raises(TypeError, match="function of no arguments"):
        op_count("tiled")


def test_the_running_max_labels_each_block_readably():
    x = torch.tensor([1.0, 0.5, 2.0, 1.2, 3.5, 0.3, 1.0, 4.2, 2.2])
    m, l, _ = online_softmax_steps(x, 4)
    left = plots.online_softmax_blocks(x, 4, m, l).axes[0]
    labels = [text for text in left.texts if text.get_text().strip().isdigit()]
    assert [text.get_text().strip() for text in labels] == ["1", "2", "3"]
    assert all(text.get_fontsize() >= 10 for text in labels)
