"""The narrow and the latent attentions share one front end (``HeadsInput``): the same input checks
and messages, the same rotation after a cache (refused clearly past the rotary table, standalone
too), and one place that gives a mask the heads' dimension (``attend``)."""
import pytest
import torch

from stepbystep.models import KVCache, LatentAttention, NarrowMultiHeadAttention, RotaryEmbedding, attend
from stepbystep.models.attention.heads_input import HeadsInput


def _latent(max_len=8):
    torch.manual_seed(0)
    return LatentAttention(2, 8, kv_latent_dim=4, rope_head_dim=2, nope_head_dim=4, v_head_dim=4, dropout=0.0,
                           rotary=RotaryEmbedding(2, max_len=max_len)).eval()


def _narrow(max_len=8):
    torch.manual_seed(0)
    return NarrowMultiHeadAttention(2, 8, dropout=0.0, rotary=RotaryEmbedding(4, max_len=max_len)).eval()


def test_both_attentions_check_their_input_with_one_method_and_one_message():
    for attention in (_latent(), _narrow()):
        assert type(attention).check_input is HeadsInput.check_input
        with pytest.raises(ValueError, match=r"x must have shape \(N, L, 8\) with L >= 1, got \(2, 3, 5\)"):
            attention(torch.randn(2, 3, 5))
        with pytest.raises(TypeError, match="x must be a tensor"):
            attention([[0.0] * 8])
        with pytest.raises(TypeError, match="float64"):
            attention(torch.randn(1, 2, 8, dtype=torch.float64))


@pytest.mark.parametrize("make", [_latent, _narrow], ids=["latent", "narrow"])
def test_a_standalone_attention_with_a_cache_refuses_to_run_past_its_rotary_table(make):
    attention, cache = make(max_len=6), KVCache(1).layers[0]
    with torch.no_grad():
        attention(torch.randn(1, 4, 8), cache=cache)
        attention(torch.randn(1, 2, 8), cache=cache)  # positions 4 and 5: the table's last
        with pytest.raises(ValueError, match="the cache holds 6 tokens and 1 more would pass the rotary table's "
                                             "max_len=6 positions"):
            attention(torch.randn(1, 1, 8), cache=cache)


@pytest.mark.parametrize("make", [_latent, _narrow], ids=["latent", "narrow"])
def test_cached_steps_without_a_rotation_go_on_after_the_cached_tokens(make):
    attention, x = make(), torch.randn(1, 5, 8)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool)).unsqueeze(0)  # (1, L, L)
    cache = KVCache(1).layers[0]
    with torch.no_grad():
        full = attention(x, mask=causal)
        steps = [attention(x[:, :3], mask=causal[:, :3, :3], cache=cache)]
        steps += [attention(x[:, s:s + 1], cache=cache) for s in (3, 4)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-6)


def test_attend_gives_a_batch_mask_the_heads_dimensions_in_one_step():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 2, 4, 5), torch.randn(2, 3, 2, 6, 5), torch.randn(2, 3, 2, 6, 5)  # (N, g, h, L, d)
    mask = torch.rand(2, 4, 6) > 0.3  # (N, L_q, L_k)
    mask[:, :, 0] = True
    context, weights = attend(q, k, v, mask)
    explicit, _ = attend(q, k, v, mask[:, None, None])  # (N, 1, 1, L_q, L_k)
    torch.testing.assert_close(context, explicit, rtol=0, atol=0)
    assert weights[~mask[:, None, None].expand_as(weights)].abs().max() == 0
