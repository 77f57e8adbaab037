"""The cached layer step: the layer's own modules on the new rows, the earlier keys and values from the cache."""
import pytest
import torch

from stepbystep.models import DecoderOnlyTransformer, KVCache
from stepbystep.models import DecoderOnlyLayer
from stepbystep.models import subsequent_mask

D, HEADS, FF = 16, 2, 32


def _layer(norm_first=True, store_alphas=False, dropout=0.0):
    torch.manual_seed(0)
    layer = DecoderOnlyLayer(HEADS, D, FF, dropout, norm_first=norm_first, store_alphas=store_alphas)
    for parameter in layer.parameters():  # norms away from their (1, 0) start, so a skipped norm shows
        torch.nn.init.normal_(parameter, std=0.3)
    return layer


def _in_pieces(layer, x, sizes):
    """The layer over ``x`` fed to a cache in consecutive pieces of ``sizes`` tokens: ``(N, L, d)``."""
    cache, outputs = KVCache(1), []
    for start, size in zip([0, *torch.tensor(sizes).cumsum(0).tolist()], sizes):
        cache.add_tokens(torch.ones(x.shape[0], size, dtype=torch.long))  # ids, no padding
        mask = cache.mask(size)  # (1, size, t), or None for one token
        outputs.append(layer(x[:, start:start + size], mask, cache=cache.layers[0]))
    return torch.cat(outputs, dim=1)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("store_alphas", [True, False])
@pytest.mark.parametrize("grad", [True, False])
def test_the_cached_step_is_the_layer_on_the_new_rows(norm_first, store_alphas, grad):
    layer = _layer(norm_first, store_alphas).eval()
    x = torch.randn(3, 7, D)
    with torch.set_grad_enabled(grad):
        whole = layer(x, subsequent_mask(7))  # (3, 7, D): the modules, every row at once
        pieces = _in_pieces(layer, x, [4, 1, 2])  # the cached step: 4 tokens, then 1, then 2
    torch.testing.assert_close(pieces, whole, atol=1e-5, rtol=0)


def test_gradients_of_a_cached_step_reach_every_parameter():
    layer = _layer()
    x = torch.randn(2, 5, D)
    _in_pieces(layer, x, [3, 1, 1]).pow(2).sum().backward()
    missing = [name for name, parameter in layer.named_parameters() if parameter.grad is None]
    assert not missing, f"no gradient reached {missing}"
    expected = {name: parameter.grad.clone() for name, parameter in layer.named_parameters()}
    layer.zero_grad()
    layer(x, subsequent_mask(5)).pow(2).sum().backward()  # the same loss through the modules
    for name, parameter in layer.named_parameters():
        torch.testing.assert_close(parameter.grad, expected[name], atol=1e-4, rtol=1e-4, msg=name)


def test_dropout_acts_in_training_mode_only():
    layer = _layer(dropout=0.5)
    x = torch.randn(2, 6, D)
    layer.eval()
    reference = _in_pieces(layer, x, [6])
    layer.train()
    torch.manual_seed(1)
    dropped = _in_pieces(layer, x, [6])
    torch.manual_seed(1)
    assert torch.equal(_in_pieces(layer, x, [6]), dropped)  # seeded: the same units dropped
    assert not torch.allclose(dropped, reference)
    layer.eval()
    torch.testing.assert_close(_in_pieces(layer, x, [6]), reference, atol=0, rtol=0)


def test_the_cache_records_which_tokens_are_real():
    cache = KVCache(1)
    assert cache.keep is None and cache.n_real is None
    assert cache.add_tokens(torch.tensor([[0, 7, 7], [7, 7, 7]]), pad_id=0).tolist() == [[0, 0, 1], [0, 1, 2]]
    assert cache.keep.tolist() == [[False, True, True], [True] * 3] and cache.n_real.tolist() == [2, 3]
    assert cache.add_tokens(torch.tensor([[5, 0]] * 2), pad_id=0).tolist() == [[2, 2], [3, 3]]  # padding moves nothing
    assert cache.keep.tolist() == [[False, True, True, True, False], [True, True, True, True, False]]
    assert cache.n_real.tolist() == [3, 4] and cache.length == 5
    assert cache.positions.tolist() == [[0, 0, 1, 2, 2], [0, 1, 2, 3, 3]]
    assert cache.mask(1).tolist() == [[[False, True, True, True, False]], [[True, True, True, True, False]]]


def test_a_pad_id_without_padding_costs_no_record_on_the_cpu_and_no_read_on_an_accelerator():
    cache = KVCache(1)
    assert cache.add_tokens(torch.full((2, 3), 7), pad_id=0).tolist() == [[0, 1, 2]] * 2
    assert cache.keep is None and cache.n_real is None and cache.mask(1) is None  # read: no padding
    # a device whose values cannot be read without waiting for it ("meta" cannot be read at all):
    # the record starts at once, and nothing is read
    cache = KVCache(1)
    positions = cache.add_tokens(torch.full((2, 3), 7, device="meta"), pad_id=0)
    assert positions.shape == (2, 3) and cache.keep.shape == (2, 3) and cache.keep.device.type == "meta"


def test_without_padding_the_cache_counts_positions_and_needs_no_mask_for_one_token():
    cache = KVCache(1)
    assert cache.add_tokens(torch.full((2, 3), 7)).tolist() == [[0, 1, 2]] * 2
    assert cache.keep is None and cache.n_real is None  # no padding: nothing to record per token
    assert torch.equal(cache.mask(3), torch.ones(1, 3, 3, dtype=torch.bool).tril())  # causal only
    assert cache.add_tokens(torch.full((2, 1), 7)).tolist() == [[3]] * 2
    assert cache.mask(1) is None  # one new token reads every key
    # padding arriving late: the earlier tokens count as real
    assert cache.add_tokens(torch.tensor([[0], [7]]), pad_id=0).tolist() == [[3], [4]]
    assert cache.keep.tolist() == [[True] * 4 + [False], [True] * 5] and cache.n_real.tolist() == [4, 5]
    assert cache.mask(1).tolist() == [[[True] * 4 + [False]], [[True] * 5]]
    assert cache.positions.tolist() == [[0, 1, 2, 3, 3], [0, 1, 2, 3, 4]]


def test_positions_pick_rows_of_the_sinusoidal_table():
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(12, d_model=D, n_heads=HEADS, ff_units=FF, max_len=20).eval()
    ids = torch.randint(1, 12, (2, 4))
    embedded = model.embed_tokens(ids, torch.arange(5, 9))  # positions 5..8
    torch.testing.assert_close(embedded - model.embed(ids), model.pe.pe[:, 5:9].expand(2, -1, -1), atol=1e-6, rtol=0)
    per_row = model.embed_tokens(ids, torch.tensor([[5, 6, 7, 8], [0, 0, 1, 2]]))
    assert torch.equal(per_row[0], embedded[0])
    torch.testing.assert_close(per_row[1] - model.embed(ids)[1], model.pe.pe[0, [0, 0, 1, 2]], atol=1e-6, rtol=0)


@pytest.mark.parametrize("pad_id", [0, None])  # a padding record to reorder, or none
@pytest.mark.parametrize("capacity", [None, 9])
def test_a_reordered_cache_continues_the_kept_rows(capacity, pad_id):
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(12, d_model=D, n_heads=HEADS, ff_units=FF, max_len=20, pad_id=pad_id).eval()
    ids = torch.randint(1, 12, (3, 6))
    ids[2, 0] = 0  # with pad_id=0, row 2 starts with padding: the cache keeps a record of its real tokens
    rows = torch.tensor([2, 0, 0])  # beam search: hypothesis 2 first, hypothesis 0 twice
    with torch.no_grad():
        cache = model.new_cache(capacity=capacity)
        model(ids[:, :4], cache=cache)
        cache.reorder(rows)
        assert (cache.keep is None) == (pad_id is None) and cache.positions.shape == (3, 4)
        model(ids[rows, 4:5], cache=cache)  # the step after the reorder writes into the kept rows
        cached = model(ids[rows, 5:], cache=cache)  # (3, 1, V)
        reference = model(ids[rows])[:, 5:]  # recomputed from scratch
    torch.testing.assert_close(cached, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("store_alphas", [True, False])
@pytest.mark.parametrize("position_scheme", ["learned", "rope", "alibi"])
def test_without_padding_one_new_token_reads_every_key_as_the_whole_stream_does(store_alphas, position_scheme):
    # pad_id=None: a single new token is given no mask at all, and must still match the whole stream's row
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(12, d_model=16, n_heads=2, ff_units=32, n_layers=2, pad_id=None, max_len=12,
                                   store_alphas=store_alphas, position_scheme=position_scheme).eval()
    ids = torch.randint(0, 12, (3, 9))
    with torch.no_grad():
        whole = model(ids)  # (3, 9, 12)
        cache = model.new_cache()
        steps = [model(ids[:, :4], cache=cache)] + [model(ids[:, t:t + 1], cache=cache) for t in range(4, 9)]
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, atol=1e-5, rtol=0)


def test_the_cache_takes_token_ids_not_a_keep_mask():
    cache = KVCache(1)
    with pytest.raises(TypeError, match="integer token ids"):
        cache.add_tokens(torch.ones(2, 3, dtype=torch.bool))  # the old keep-mask form: refused, not misread
    assert cache.length == 0
