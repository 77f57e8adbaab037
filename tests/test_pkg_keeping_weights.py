"""``keeping_weights``: one ``with`` for "keep the attention weights while this runs, then put the
setting back", used by ``attention_weights`` (model and interpret) and the replayed runs."""
import pytest
import torch

from stepbystep.models import NarrowMultiHeadAttention, keeping_weights


def test_the_weights_are_kept_inside_and_each_setting_restored_even_after_an_error():
    kept, fused = NarrowMultiHeadAttention(2, 8, store_alphas=True), NarrowMultiHeadAttention(2, 8, store_alphas=False)
    x = torch.randn(1, 3, 8)
    with keeping_weights(kept, fused):
        assert kept.store_alphas is True and fused.store_alphas is True
        fused(x)
    assert fused.alphas.shape == (1, 2, 3, 3) and (kept.store_alphas, fused.store_alphas) == (True, False)
    with pytest.raises(RuntimeError, match="inside"):
        with keeping_weights(fused):
            raise RuntimeError("inside")
    assert fused.store_alphas is False
