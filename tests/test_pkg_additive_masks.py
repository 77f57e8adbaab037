"""``from_additive_mask`` reads the additive masks other libraries write: ``0`` keeps a key, ``-inf``
or any large negative (``-1e9``, the dtype's most negative number) blocks it; anything else is a
bias, and is refused."""
import pytest
import torch

from stepbystep.models.attention.masks import from_additive_mask

KEEP = torch.tensor([[True, False, True], [False, True, True]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("blocked", ["-inf", "finfo.min", "-1e9", "-1e4"])
def test_large_negatives_block_like_minus_infinity(dtype, blocked):
    value = {"-inf": float("-inf"), "finfo.min": torch.finfo(dtype).min, "-1e9": -1e9, "-1e4": -1e4}[blocked]
    additive = torch.zeros(KEEP.shape).masked_fill(~KEEP, value).to(dtype)  # -1e9 is -inf in float16
    assert torch.equal(from_additive_mask(additive), KEEP)


@pytest.mark.parametrize("value", [0.5, -1.0, -100.0, float("nan"), float("inf")])
def test_values_neither_zero_nor_large_negative_are_refused_by_name(value):
    additive = torch.zeros(KEEP.shape).masked_fill(~KEEP, float("-inf"))
    additive[0, 0] = value
    with pytest.raises(ValueError, match="bias, not a mask") as caught:
        from_additive_mask(additive)
    assert "got values such as" in str(caught.value)
