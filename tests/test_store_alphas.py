"""One name for the weights switch, ``store_alphas``: ``attend`` takes it as the modules do (its former
``need_weights`` is gone, a TypeError naming it), the wide heads
always keep their weights (read-only ``True``), and ``keeping_weights`` switches on only what was
off, then switches it back."""
import warnings

import pytest
import torch

from stepbystep.models import (Attention, NarrowMultiHeadAttention, WideMultiHeadAttention, attend,
                               keeping_weights)


def _qkv():
    torch.manual_seed(0)
    return torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)


def test_attend_takes_store_alphas_as_the_modules_do():
    q, k, v = _qkv()
    kept, weights = attend(q, k, v, store_alphas=True)
    fused, none = attend(q, k, v, store_alphas=False)
    assert weights.shape == (2, 3, 4, 5) and none is None
    torch.testing.assert_close(fused, kept, rtol=1e-5, atol=1e-6)


def test_attend_has_one_name_for_the_switch():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="need_weights"):
        attend(q, k, v, need_weights=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context, weights = attend(q, k, v, store_alphas=False)  # warns nothing
    assert weights is None and context.shape == q.shape


def test_the_wide_heads_always_keep_their_weights():
    head, wide = Attention(4), WideMultiHeadAttention(2, 4)
    assert head.store_alphas is True and wide.store_alphas is True
    with pytest.raises(AttributeError):
        head.store_alphas = False
    x = torch.randn(1, 3, 4)
    with keeping_weights(head, wide):
        head.init_keys(x)
        head(x)
    assert head.alphas.shape == (1, 3, 3) and head.store_alphas is True


def test_keeping_weights_switches_back_only_what_it_switched_on():
    fused, kept = NarrowMultiHeadAttention(2, 8, store_alphas=False), NarrowMultiHeadAttention(2, 8)
    with pytest.raises(RuntimeError, match="inside"):
        with keeping_weights(fused, kept):
            assert fused.store_alphas and kept.store_alphas
            raise RuntimeError("inside")
    assert fused.store_alphas is False and kept.store_alphas is True


def test_every_switch_defaults_to_keeping_the_weights():
    import inspect

    from stepbystep.models import LatentAttention

    for function in (attend, NarrowMultiHeadAttention.__init__, LatentAttention.__init__):
        assert inspect.signature(function).parameters["store_alphas"].default is True, function.__qualname__
