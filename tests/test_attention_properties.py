"""Properties of attention that hold for every size and mask: drawn at random with hypothesis.

Weights are distributions over the keys a query may see; causal masks hide the future;
self-attention without positional encoding ignores order; the fused kernel computes what the
teaching path computes.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.models import DecoderLayer, EncoderLayer, NarrowMultiHeadAttention, scaled_dot_product, subsequent_mask

PROPERTY = settings(max_examples=20, deadline=None)
seeds = st.integers(0, 2**16)


@st.composite
def attention_inputs(draw):
    """q, k, v (possibly with a head dimension) and a keep-mask drawn bit by bit."""
    n, l_q, l_k = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    heads = draw(st.sampled_from([(), (2,)]))
    mask_n, mask_q = draw(st.sampled_from([1, n])), draw(st.sampled_from([1, l_q]))
    bits = draw(st.lists(st.booleans(), min_size=mask_n * mask_q * l_k, max_size=mask_n * mask_q * l_k))
    gen = torch.Generator().manual_seed(draw(seeds))
    q = torch.randn(n, *heads, l_q, d_k, generator=gen)  # (N, ..., L_q, d_k)
    k = torch.randn(n, *heads, l_k, d_k, generator=gen)  # (N, ..., L_k, d_k)
    v = torch.randn(n, *heads, l_k, d_v, generator=gen)  # (N, ..., L_k, d_v)
    mask = torch.tensor(bits, dtype=torch.bool).view(mask_n, mask_q, l_k)  # (1 or N, 1 or L_q, L_k)
    return q, k, v, mask


def _with_heads(mask, like):
    """Broadcast a ``(1 or N, 1 or L_q, L_k)`` mask to the weights' shape ``like``."""
    while mask.dim() < like.dim():
        mask = mask.unsqueeze(1)  # (N, 1, ..., L_q, L_k)
    return mask.expand_as(like)


@PROPERTY
@given(inputs=attention_inputs())
def test_weights_rows_sum_to_one_or_to_zero_when_nothing_is_visible(inputs):
    q, k, v, mask = inputs
    _, weights = scaled_dot_product(q, k, v, mask)
    visible = _with_heads(mask, weights)  # (N, ..., L_q, L_k)
    expected = visible.any(dim=-1).float()  # 1 where a row sees a key, 0 where it sees none
    torch.testing.assert_close(weights.sum(-1), expected)
    assert torch.all(weights >= 0)
    _, unmasked = scaled_dot_product(q, k, v)
    torch.testing.assert_close(unmasked.sum(-1), torch.ones(unmasked.shape[:-1]))


@PROPERTY
@given(inputs=attention_inputs())
def test_masked_keys_get_zero_weight_and_the_context_stays_within_the_visible_values(inputs):
    q, k, v, mask = inputs
    context, weights = scaled_dot_product(q, k, v, mask)
    visible = _with_heads(mask, weights)  # (N, ..., L_q, L_k)
    assert torch.all(weights[~visible] == 0)
    assert torch.isfinite(context).all()
    # a convex combination of the visible values: between their smallest and largest
    big = torch.finfo(v.dtype).max
    values = v.unsqueeze(-3)  # (N, ..., 1, L_k, d_v)
    lowest = values.masked_fill(~visible.unsqueeze(-1), big).amin(-2)  # (N, ..., L_q, d_v)
    highest = values.masked_fill(~visible.unsqueeze(-1), -big).amax(-2)  # (N, ..., L_q, d_v)
    has_key = visible.any(-1, keepdim=True)  # (N, ..., L_q, 1)
    assert torch.all(~has_key | (context >= lowest - 1e-5))
    assert torch.all(~has_key | (context <= highest + 1e-5))
    assert torch.all(has_key | (context == 0))


@st.composite
def causal_case(draw):
    """Sizes, a position i, and a sequence plus a copy whose elements after i are replaced."""
    n_heads, d_k, length = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(2, 6))
    i = draw(st.integers(0, length - 2))
    gen = torch.Generator().manual_seed(draw(seeds))
    x = torch.randn(2, length, n_heads * d_k, generator=gen)  # (2, L, d_model)
    changed = x.clone()
    changed[:, i + 1 :] = torch.randn(2, length - i - 1, n_heads * d_k, generator=gen)
    return n_heads, n_heads * d_k, i, x, changed, draw(seeds)


@PROPERTY
@given(case=causal_case(), store_alphas=st.booleans())
def test_causal_self_attention_does_not_look_ahead(case, store_alphas):
    n_heads, d_model, i, x, changed, seed = case
    torch.manual_seed(seed)
    mha = NarrowMultiHeadAttention(n_heads, d_model, store_alphas=store_alphas).eval()
    causal = subsequent_mask(x.shape[1])  # (1, L, L)

    def self_attend(z):
        return mha(z, mask=causal)  # (2, L, d_model)

    torch.testing.assert_close(self_attend(changed)[:, : i + 1], self_attend(x)[:, : i + 1])


@PROPERTY
@given(case=causal_case(), norm_first=st.booleans(), ff_units=st.integers(1, 8))
def test_decoder_layer_output_at_i_ignores_the_targets_after_i(case, norm_first, ff_units):
    n_heads, d_model, i, x, changed, seed = case
    torch.manual_seed(seed)
    layer = DecoderLayer(n_heads, d_model, ff_units, norm_first=norm_first).eval()
    memory = torch.randn(2, 3, d_model)  # the encoder's states
    causal = subsequent_mask(x.shape[1])  # (1, L, L)
    before = layer(x, target_mask=causal, memory=memory)[:, : i + 1]  # (2, i+1, d_model)
    torch.testing.assert_close(layer(changed, target_mask=causal, memory=memory)[:, : i + 1], before)


@PROPERTY
@given(
    n_heads=st.integers(1, 3),
    d_k=st.integers(1, 3),
    ff_units=st.integers(1, 8),
    norm_first=st.booleans(),
    perm=st.integers(1, 6).flatmap(lambda length: st.permutations(range(length))),
    n_pad=st.integers(0, 5),
    seed=seeds,
)
def test_encoder_layer_without_positions_is_permutation_equivariant(
    n_heads, d_k, ff_units, norm_first, perm, n_pad, seed
):
    """Permuting the input rows (and the padding mask with them) permutes the output rows."""
    torch.manual_seed(seed)
    length, d_model = len(perm), n_heads * d_k
    layer = EncoderLayer(n_heads, d_model, ff_units, norm_first=norm_first).eval()
    x = torch.randn(2, length, d_model)
    mask = torch.ones(2, 1, length, dtype=torch.bool)
    mask[0, 0, length - min(n_pad, length - 1) :] = False  # keeps at least one real element
    perm = torch.tensor(perm)
    out = layer(x, mask)  # (2, L, d_model)
    torch.testing.assert_close(layer(x[:, perm], mask[:, :, perm]), out[:, perm], atol=1e-5, rtol=1e-5)


@st.composite
def padded_batch(draw):
    """Sizes and a source keep-mask whose sequences may even be all padding."""
    n, length = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    pads = draw(st.lists(st.integers(0, length), min_size=n, max_size=n))
    mask = torch.ones(n, 1, length, dtype=torch.bool)
    for j, pad in enumerate(pads):
        mask[j, 0, length - pad :] = False
    return n, length, mask


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
@PROPERTY
@given(
    n_heads=st.integers(1, 3),
    d_k=st.integers(1, 3),
    ff_units=st.integers(1, 8),
    norm_first=st.booleans(),
    batch=padded_batch(),
    target_len=st.integers(1, 4),
    seed=seeds,
)
def test_fused_path_equals_the_teaching_path_in_eval_mode(
    kind, n_heads, d_k, ff_units, norm_first, batch, target_len, seed
):
    n, length, source_mask = batch
    d_model = n_heads * d_k
    layer_type = EncoderLayer if kind == "encoder" else DecoderLayer
    torch.manual_seed(seed)
    teach = layer_type(n_heads, d_model, ff_units, norm_first=norm_first).eval()
    fused = layer_type(n_heads, d_model, ff_units, norm_first=norm_first, store_alphas=False).eval()
    fused.load_state_dict(teach.state_dict())
    source = torch.randn(n, length, d_model)
    if kind == "encoder":
        expected, out = teach(source, source_mask), fused(source, source_mask)
    else:
        target = torch.randn(n, target_len, d_model)
        causal = subsequent_mask(target_len)  # (1, L_t, L_t)
        expected, out = teach(target, source_mask, causal, source), fused(target, source_mask, causal, source)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert all(m.alphas is None for m in fused.modules() if isinstance(m, NarrowMultiHeadAttention))
