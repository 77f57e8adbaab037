"""Mixed precision on the CPU (chapter 16): what bfloat16 autocast computes in bfloat16 and what stays
float32, the loss curves against float32 on the same seed and batches, and the three formats' ranges."""
import math

import pytest
import torch

from stepbystep.experiments.mixed_precision import (PRECISION_RUN, autocast_dtypes, float_formats, loss_floor,
                                                      precision_losses, precision_study)


def test_autocast_runs_the_linear_layers_in_bfloat16_and_keeps_the_rest_float32():
    dtypes = autocast_dtypes()
    linear = {name: dtype for name, dtype in dtypes["modules"].items() if "linear" in name or "ffn.0" in name
              or "ffn.3" in name or name == "head"}
    assert len(linear) == 7 and set(linear.values()) == {torch.bfloat16}  # q, k, v, out, two feed-forward, head
    norms = {name: dtype for name, dtype in dtypes["modules"].items() if name.endswith("norm")}
    assert len(norms) == 3 and set(norms.values()) == {torch.float32}  # their input is the float32 residual stream
    assert dtypes["modules"]["embed"] == torch.float32
    assert dtypes["logits"] == torch.bfloat16 and dtypes["loss"] == torch.float32
    assert dtypes["parameters"] == {torch.float32} == dtypes["gradients"]


def test_bfloat16_changes_the_losses_a_little_and_float32_reproduces():
    run = PRECISION_RUN.replace(steps=12)
    plain, again, low = precision_losses(run, False), precision_losses(run, False), precision_losses(run, True)
    assert torch.equal(plain, again) and plain.shape == (12,)
    assert not torch.equal(plain, low)  # autocast took effect
    assert (plain - low).abs().max() < 0.02  # rounding, not another model: the first steps agree closely
    assert plain[0] == pytest.approx(math.log(8), abs=0.05)  # small initial logits: uniform predictions


def test_the_study_stacks_seeds_and_knows_the_floor():
    study = precision_study(seeds=(0, 1), run=PRECISION_RUN.replace(steps=3))
    assert study["float32"].shape == study["bfloat16"].shape == (2, 3)
    assert torch.equal(study["float32"][1], precision_losses(PRECISION_RUN.replace(steps=3, seed=1), False))
    assert study["floor"] == pytest.approx(3 / 7 * math.log(8))
    assert loss_floor(PRECISION_RUN.replace(length=6, vocab_size=4)) == pytest.approx(5 / 11 * math.log(4))


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="bf16 must be True or False"):
        precision_losses(PRECISION_RUN, "yes")
    with pytest.raises(TypeError, match="run must be"):
        precision_losses({"steps": 3}, True)
    with pytest.raises(ValueError, match="seeds must hold at least one seed"):
        precision_study(seeds=())
    with pytest.raises(ValueError, match="batch"):
        autocast_dtypes(batch=0)


def test_bfloat16_has_float32s_range_and_float16_does_not():
    formats = float_formats()
    assert [formats[name]["mantissa_bits"] for name in ("float32", "bfloat16", "float16")] == [23, 7, 10]
    assert formats["bfloat16"]["smallest_normal"] == formats["float32"]["smallest_normal"] == 2.0 ** -126
    assert formats["float16"]["smallest_normal"] == 2.0 ** -14 and formats["float16"]["max"] == 65504
    assert formats["float16"]["smallest"] == 2.0 ** -24 and formats["bfloat16"]["smallest"] == 2.0 ** -133
    assert formats["bfloat16"]["eps"] == 2.0 ** -7
    gradient = torch.tensor([1e-8])  # a small gradient: zero in float16, kept in bfloat16
    assert gradient.half().item() == 0 and gradient.bfloat16().float().item() == pytest.approx(1e-8, rel=1e-2)
