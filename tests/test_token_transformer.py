"""The token-level Transformer: shapes, padding and causal masks, embedding scale, bad input."""
import pytest
import torch

from stepbystep.models import TokenTransformer


def make_model(**kwargs):
    torch.manual_seed(0)
    settings = dict(d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0, max_len=12)
    settings.update(kwargs)
    return TokenTransformer(9, 11, **settings).eval()


def random_ids(n, length, vocab_size, low=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(low, vocab_size, (n, length), generator=generator)


def test_shapes_and_cross_attention_weights():
    model = make_model()
    source, target_in = random_ids(3, 7, 9), random_ids(3, 5, 11)
    logits = model(source, target_in)
    assert logits.shape == (3, 5, 11)
    memory, source_mask = model.encode(source), model.source_mask(source)
    assert memory.shape == (3, 7, 16) and source_mask.shape == (3, 1, 7)
    assert torch.allclose(model.decode(target_in, memory, source_mask), logits, atol=1e-6)
    alphas = model.decoder.layers[-1].cross_attn_heads.alphas
    assert alphas.shape == (3, 2, 5, 7)
    assert torch.allclose(alphas.sum(-1), torch.ones(3, 2, 5))


def test_padding_does_not_change_a_sequences_output():
    model = make_model()
    source, target_in = random_ids(1, 5, 9), random_ids(1, 4, 11)
    alone = model(source, target_in)  # (1, 4, 11)
    padded_source = torch.cat([source, torch.zeros(1, 3, dtype=torch.long)], dim=1)  # (1, 8)
    padded_target = torch.cat([target_in, torch.zeros(1, 2, dtype=torch.long)], dim=1)  # (1, 6)
    longer = (random_ids(1, 8, 9, seed=1), random_ids(1, 6, 11, seed=1))
    batch = model(torch.cat([padded_source, longer[0]]), torch.cat([padded_target, longer[1]]))  # (2, 6, 11)
    assert torch.allclose(batch[0, :4], alone[0], atol=1e-5)
    padding_weights = model.decoder.layers[-1].cross_attn_heads.alphas[0, :, :, 5:]
    assert torch.all(padding_weights == 0)


def test_without_padding_masks_padding_changes_the_output():
    model = make_model(pad_id=None)
    source, target_in = random_ids(1, 5, 9), random_ids(1, 4, 11)
    padded_source = torch.cat([source, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    assert model.source_mask(source) is None
    assert not torch.allclose(model(padded_source, target_in), model(source, target_in), atol=1e-3)


def test_target_mask_combines_causal_and_padding():
    model = make_model()
    target_in = torch.tensor([[1, 5, 6, 0], [1, 5, 6, 7]])
    mask = model.target_mask(target_in)
    assert mask.shape == (2, 4, 4)
    assert torch.equal(mask[1], torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    assert not mask[0, :, 3].any()
    assert torch.equal(mask[0, :, :3], mask[1, :, :3])


def test_causal_outputs_do_not_depend_on_later_tokens():
    model = make_model()
    source, target_in = random_ids(2, 6, 9), random_ids(2, 5, 11)
    changed = target_in.clone()
    changed[:, 3:] = random_ids(2, 2, 11, seed=7)
    before, after = model(source, target_in), model(source, changed)
    assert torch.allclose(before[:, :3], after[:, :3], atol=1e-6)
    assert not torch.allclose(before[:, 3:], after[:, 3:], atol=1e-4)


def test_embedding_scale_is_applied_to_the_positional_encoding():
    plain, scaled = make_model(), make_model(scale_embeddings=True)
    assert not plain.encoder.pe.scale_input and not plain.decoder.pe.scale_input
    assert scaled.encoder.pe.scale_input and scaled.decoder.pe.scale_input
    source, target_in = random_ids(2, 6, 9), random_ids(2, 5, 11)
    assert not torch.allclose(plain(source, target_in), scaled(source, target_in))


def test_bad_input():
    model = make_model()
    target_in = random_ids(2, 3, 11)
    with pytest.raises(TypeError, match="source_ids must be a tensor of dtype torch.int64 or torch.int32, got torch.float32"):
        model(torch.rand(2, 3), target_in)
    with pytest.raises(TypeError, match="source_ids must be a tensor, got list"):
        model([[4, 5]], target_in)
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        model(torch.tensor([4, 5, 6]), target_in)
    with pytest.raises(ValueError, match="source_ids must be at most the model's max_len=12 long, got length 13"):
        model(random_ids(2, 13, 9), target_in)
    with pytest.raises(ValueError, match="target_in must be at most the model's max_len=12 long, got length 13"):
        model(random_ids(2, 3, 9), random_ids(2, 13, 11))
    with pytest.raises(ValueError, match="source_ids must hold ids in 0..8, got ids from 9 to 9"):
        model(torch.full((2, 3), 9), target_in)
    with pytest.raises(ValueError, match=r"memory must hold one sequence per row of target_in \(2\), got 3"):
        model.decode(target_in, torch.zeros(3, 4, 16), None)
    with pytest.raises(ValueError, match="pad_id must be an int from 0 to 4, got 7"):
        TokenTransformer(5, 5, pad_id=7)


def test_trains_on_a_tiny_copy_task():
    """A few Adam steps on one batch lower the loss: the gradient reaches every part."""
    from stepbystep.models import sequence_cross_entropy

    model = make_model()
    model.train()
    source = random_ids(8, 5, 9)
    target_in = torch.cat([torch.ones(8, 1, dtype=torch.long), source[:, :-1]], dim=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(20):
        loss = sequence_cross_entropy(model(source, target_in), source)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("store_alphas", [True, False])
def test_decoding_with_a_cache_gives_the_rows_of_the_whole_target(norm_first, store_alphas):
    model = make_model(norm_first=norm_first)
    for attention in model.modules():
        if hasattr(attention, "store_alphas"):
            attention.store_alphas = store_alphas
    source = random_ids(3, 7, 9)
    source[0, 4:] = 0  # padding in the first source
    target_in = random_ids(3, 6, 11, seed=1)
    target_in[1, 3] = 0  # padding inside a target: never attended to, with or without the cache
    with torch.no_grad():
        memory, source_mask = model.encode(source), model.source_mask(source)
        whole = model.decode(target_in, memory, source_mask)  # (3, 6, 11)
        cache = model.new_cache()
        pieces = [model.decode(target_in[:, :2], memory, source_mask, cache=cache)]  # two tokens at once, then one by one
        pieces += [model.decode(target_in[:, t:t + 1], memory, source_mask, cache=cache) for t in range(2, 6)]
    assert cache.length == 6 and cache.layers[0].keys.shape == (3, 2, 6, 8)
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, atol=1e-5, rtol=0)


def test_the_cache_reads_memory_once_and_refuses_what_it_cannot_hold():
    model = make_model()
    source, target_in = random_ids(2, 5, 9), random_ids(2, 12, 11)
    with torch.no_grad():
        memory, source_mask = model.encode(source), model.source_mask(source)
        cache = model.new_cache()
        model.decode(target_in[:, :1], memory, source_mask, cache=cache)
        projected = cache.cross[0].keys
        assert projected.shape == (2, 2, 5, 8)  # (N, h, L_s, d_k): the memory's keys
        model.decode(target_in[:, 1:2], memory, source_mask, cache=cache)
        assert cache.cross[0].keys is projected  # not projected again
        model.decode(target_in[:, 2:12], memory, source_mask, cache=cache)
        with pytest.raises(ValueError, match=r"target_in must be at most the model's max_len=12 long after the 12 tokens in the cache, got length 13"):
            model.decode(target_in[:, :1], memory, source_mask, cache=cache)
        with pytest.raises(TypeError, match="cache must be a KVCache from model.new_cache\\(\\), got dict"):
            model.decode(target_in[:, :1], memory, source_mask, cache={})
