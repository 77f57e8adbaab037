"""generate and the KV cache: cached equals uncached, batches of different lengths, sampling, errors."""
import pytest
import torch

from stepbystep.models import (
    DecoderOnlyTransformer,
    KVCache,
    LayerCache,
    generate,
    left_pad,
    next_token_logits,
    sampling_distribution,
    top_k_filter,
    top_p_filter,
)
from stepbystep.experiments.generation_timing import cache_numbers, step_logits, time_per_token, time_slope
from stepbystep.models.gpt.generation import sample_next

V, PAD, EOS = 20, 0, 2


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return DecoderOnlyTransformer(V, d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0, max_len=40,
                                  tie_weights=False).eval()


PROMPTS = [[1, 5, 6, 7], [1, 8], [1, 9, 9, 4, 9, 9, 3]]


# ----------------------------------------------------------------------------- the cache
def test_cached_and_uncached_logits_agree_step_by_step(model):
    prompt = torch.randint(3, V, (2, 5), generator=torch.Generator().manual_seed(1))
    cached, cached_ids = step_logits(model, prompt, 20, use_cache=True)
    uncached, uncached_ids = step_logits(model, prompt, 20, use_cache=False)
    assert cached.shape == (2, 20, V)
    torch.testing.assert_close(cached, uncached, atol=1e-5, rtol=0)
    assert torch.equal(cached_ids, uncached_ids)


def test_cached_and_uncached_agree_on_prompts_of_different_lengths(model):
    cached, cached_ids = step_logits(model, PROMPTS, 15, use_cache=True)
    uncached, uncached_ids = step_logits(model, PROMPTS, 15, use_cache=False)
    torch.testing.assert_close(cached, uncached, atol=1e-5, rtol=0)
    assert torch.equal(cached_ids, uncached_ids)


def test_greedy_outputs_identical_with_and_without_cache(model):
    for prompts in (PROMPTS, torch.randint(3, V, (3, 4), generator=torch.Generator().manual_seed(2))):
        with_cache = generate(model, prompts, 25, temperature=0, use_cache=True)
        without = generate(model, prompts, 25, temperature=0, use_cache=False)
        assert torch.equal(with_cache, without)


def test_a_batch_is_generated_as_each_prompt_alone(model):
    batch = generate(model, PROMPTS, 12, temperature=0)
    width = max(map(len, PROMPTS))
    assert batch.shape == (3, width + 12)
    for prompt, row in zip(PROMPTS, batch):
        alone = generate(model, prompt, 12, temperature=0)
        assert alone.shape == (len(prompt) + 12,)
        assert row[:width - len(prompt)].eq(PAD).all()  # left padding
        assert torch.equal(row[width - len(prompt):], alone)


def test_the_cache_grows_one_token_per_step(model):
    cache = model.new_cache()
    assert isinstance(cache, KVCache) and cache.length == 0
    model(torch.tensor([[1, 5, 6]]), cache=cache)
    assert cache.length == 3 and cache.layers[0].keys.shape == (1, 2, 3, 8)
    model(torch.tensor([[7]]), cache=cache)
    assert cache.length == 4 and all(layer.keys.shape == (1, 2, 4, 8) for layer in cache.layers)
    assert "4 tokens" in repr(cache)


def test_cached_self_attention_is_the_last_row_of_full_attention(model):
    attention = model.layers[0].self_attn_heads
    x = torch.randn(2, 6, 16)
    cache, layer_cache = KVCache(1), LayerCache()
    with torch.no_grad():
        cache.add_tokens(torch.full((2, 5), 3), pad_id=0)
        assert torch.equal(cache.mask(5), torch.ones(1, 5, 5).tril().bool())  # no padding: causal only
        attention(x[:, :5], mask=cache.mask(5), cache=layer_cache)
        cache.add_tokens(torch.full((2, 1), 3), pad_id=0)
        assert cache.mask(1) is None  # one new token, no padding: every key
        last = attention(x[:, 5:], mask=cache.mask(1), cache=layer_cache)
        assert layer_cache.keys.shape == layer_cache.values.shape == (2, 2, 6, 8)
        full = attention(x, mask=torch.ones(1, 6, 6, dtype=torch.bool).tril())
    torch.testing.assert_close(last, full[:, -1:], atol=1e-5, rtol=0)


def test_cache_refuses_another_batch(model):
    cache = model.new_cache()
    model(torch.tensor([[1, 5]]), cache=cache)
    with pytest.raises(ValueError, match="one cache per batch"):
        model(torch.tensor([[1], [2]]), cache=cache)


def test_time_per_token_gives_one_time_per_step(model):
    for use_cache in (True, False):
        times = time_per_token(model, [1, 5, 6], 10, use_cache=use_cache)
        assert len(times) == 10 and all(t > 0 for t in times)


# ----------------------------------------------------------------------------- eos and padding
class _Scripted(torch.nn.Module):
    """A fake model whose next token is scripted per row and step (cache or not)."""

    def __init__(self, script):
        super().__init__()
        self.script = torch.tensor(script)  # (N, T)
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.max_len, self.vocab_size, self.pad_id = 40, V, PAD
        self.prompt_length = None

    def new_cache(self, capacity=None):
        return KVCache(1, capacity=capacity)

    def forward(self, ids, cache=None):
        if cache is not None:
            cache.add_tokens(ids)
            step = cache.length - self.prompt_length
        else:
            step = ids.shape[1] - self.prompt_length
        logits = torch.zeros(ids.shape[0], ids.shape[1], V)
        logits[torch.arange(ids.shape[0]), -1, self.script[:, step]] = 1.0
        return logits


def test_rows_that_wrote_eos_keep_padding_and_generation_stops():
    fake = _Scripted([[5, EOS, 6, 7, 8], [5, 6, 7, EOS, 9], [5, 6, 7, 8, 9]])
    prompt = torch.ones(3, 2, dtype=torch.long)
    fake.prompt_length = 2
    out = generate(fake, prompt, 5, temperature=0, eos_id=EOS)
    assert out[:, 2:].tolist() == [[5, EOS, PAD, PAD, PAD], [5, 6, 7, EOS, PAD], [5, 6, 7, 8, 9]]
    fake2 = _Scripted([[5, EOS, 6, 7, 8], [EOS, 6, 7, 8, 9]])
    fake2.prompt_length = 2
    out = generate(fake2, torch.ones(2, 2, dtype=torch.long), 5, temperature=0, eos_id=EOS)
    assert out.shape == (2, 4)  # stopped once both rows were finished
    assert out[:, 2:].tolist() == [[5, EOS], [EOS, PAD]]


# ----------------------------------------------------------------------------- sampling
def test_top_k_1_equals_greedy(model):
    greedy = generate(model, PROMPTS, 15, temperature=0)
    for temperature in (0.5, 1.0, 3.0):
        sampled = generate(model, PROMPTS, 15, temperature=temperature, top_k=1,
                           generator=torch.Generator().manual_seed(3))
        assert torch.equal(sampled, greedy)


def test_a_seeded_generator_repeats_its_samples(model):
    first = generate(model, PROMPTS, 15, generator=torch.Generator().manual_seed(4), top_p=0.9)
    second = generate(model, PROMPTS, 15, generator=torch.Generator().manual_seed(4), top_p=0.9)
    third = generate(model, PROMPTS, 15, generator=torch.Generator().manual_seed(5), top_p=0.9)
    assert torch.equal(first, second)
    assert not torch.equal(first, third)


def test_top_k_filter_keeps_exactly_the_k_largest():
    logits = torch.tensor([[0.1, 3.0, -1.0, 2.0, 2.5], [5.0, 4.0, 3.0, 2.0, 1.0]])
    kept = torch.isfinite(top_k_filter(logits, 2))
    assert kept.tolist() == [[False, True, False, False, True], [True, True, False, False, False]]
    assert torch.equal(top_k_filter(logits, 5), logits)
    assert torch.isfinite(top_k_filter(torch.zeros(1, 6), 3)).sum() == 3  # ties: still exactly k


def test_top_p_filter_keeps_the_smallest_nucleus():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log()
    assert torch.isfinite(top_p_filter(logits, 0.5)).tolist() == [[True, False, False, False]]
    assert torch.isfinite(top_p_filter(logits, 0.8)).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_p_filter(logits, 0.81)).tolist() == [[True, True, True, False]]
    assert torch.isfinite(top_p_filter(logits, 0.01)).tolist() == [[True, False, False, False]]
    assert torch.isfinite(top_p_filter(logits, 1.0)).all()


def test_top_p_never_draws_outside_the_nucleus():
    generator = torch.Generator().manual_seed(6)
    logits = torch.randn(8, 30, generator=generator) * 2
    nucleus = torch.isfinite(top_p_filter(logits, 0.7))  # (8, 30)
    for _ in range(200):
        drawn = sample_next(logits, top_p=0.7, generator=generator)  # (8,)
        assert nucleus[torch.arange(8), drawn].all()


def test_sampling_distribution_renormalises_and_temperature_zero_is_one_hot():
    logits = torch.randn(3, 10)
    probs = sampling_distribution(logits, temperature=0.7, top_k=4, top_p=0.9)
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(3))
    assert ((probs > 0).sum(dim=-1) <= 4).all()
    greedy = sampling_distribution(logits, temperature=0, top_k=4)
    assert torch.equal(greedy.argmax(dim=-1), logits.argmax(dim=-1)) and torch.equal(greedy.sum(-1), torch.ones(3))
    flat, sharp = sampling_distribution(logits, 5.0), sampling_distribution(logits, 0.2)
    assert (flat.max(dim=-1).values < sharp.max(dim=-1).values).all()


def test_sampling_frequencies_follow_the_distribution():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).expand(20_000, 4)
    drawn = sample_next(logits, temperature=1.0, generator=torch.Generator().manual_seed(7))
    frequencies = torch.bincount(drawn, minlength=4).float() / 20_000
    torch.testing.assert_close(frequencies, torch.softmax(logits[0], dim=-1), atol=0.015, rtol=0)


def test_next_token_logits(model):
    one = next_token_logits(model, [1, 5, 6])
    assert one.shape == (V,)
    batch = next_token_logits(model, PROMPTS)
    assert batch.shape == (3, V)
    torch.testing.assert_close(batch[0], next_token_logits(model, PROMPTS[0]), atol=1e-5, rtol=0)


def test_left_pad():
    assert left_pad([[1, 2, 3], [4]], pad_id=0).tolist() == [[1, 2, 3], [0, 0, 4]]


def test_generate_restores_training_mode(model):
    model.train()
    generate(model, [1, 5], 3, temperature=0)
    assert model.training
    model.eval()


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, error, words", [
    ({"temperature": -0.5}, ValueError, "temperature must be 0 or a positive number, got -0.5"),
    ({"temperature": float("inf")}, ValueError, "temperature must be 0 or a positive number, got inf"),
    ({"temperature": "hot"}, TypeError, "temperature must be 0 or a positive number, got str 'hot'"),
    ({"top_k": 0}, ValueError, "top_k must be a positive int, got 0"),
    ({"top_k": 2.5}, TypeError, "top_k must be a positive int, got float 2.5"),
    ({"top_p": 0.0}, ValueError, r"top_p must be a number in \(0, 1\], got 0.0"),
    ({"top_p": 1.5}, ValueError, r"top_p must be a number in \(0, 1\], got 1.5"),
    ({"top_p": "all"}, TypeError, r"top_p must be a number in \(0, 1\], got str"),
    ({"max_new_tokens": 0}, ValueError, "max_new_tokens must be a positive int, got 0"),
    ({"max_new_tokens": 2.0}, TypeError, "max_new_tokens must be a positive int, got float 2.0"),
    ({"max_new_tokens": 39}, ValueError, "ask for at most 38 new tokens"),
    ({"eos_id": V}, ValueError, f"eos_id must be an int from 0 to {V - 1}, got {V}"),
    ({"eos_id": 1.0}, TypeError, f"eos_id must be an int from 0 to {V - 1}, got float"),
    ({"generator": 3}, TypeError, "generator must be a torch.Generator"),
])
def test_bad_settings_are_refused(model, kwargs, error, words):
    arguments = {"max_new_tokens": 5, **kwargs}
    with pytest.raises(error, match=words):
        generate(model, [1, 5], **arguments)


@pytest.mark.parametrize("prompt, error, words", [
    ([], TypeError, "an empty list"),
    ("abc", TypeError, "inputs must be a tensor"),
    (torch.ones(2, 3), TypeError, "integer token ids"),
    (torch.ones(1, 1, 2, dtype=torch.long), ValueError, r"\(L,\) or \(N, L\)"),
    ([[1, 2], []], ValueError, "at least one token"),
    (torch.ones(1, 41, dtype=torch.long), ValueError, "more than the model's max_len=40"),
])
def test_bad_prompts_are_refused(model, prompt, error, words):
    with pytest.raises(error, match=words):
        generate(model, prompt, 1)


def test_model_must_be_decoder_only():
    with pytest.raises(TypeError, match="decoder-only model"):
        generate(torch.nn.Linear(2, 2), [1, 2], 3)


def test_padding_needs_a_pad_id():
    torch.manual_seed(0)
    no_pad = DecoderOnlyTransformer(V, d_model=16, n_heads=2, ff_units=32, pad_id=None, max_len=20).eval()
    with pytest.raises(ValueError, match="pad_id=None"):
        generate(no_pad, [[1, 2], [3]], 2)
    with pytest.raises(ValueError, match="pad_id=None"):
        generate(no_pad, [1, 2], 2, eos_id=EOS)
    assert generate(no_pad, [[1, 2], [3, 4]], 2, temperature=0).shape == (2, 4)


def test_the_teaching_path_caches_the_same_way():
    torch.manual_seed(0)
    teaching = DecoderOnlyTransformer(V, d_model=16, n_heads=2, ff_units=32, dropout=0.0, max_len=40,
                                      store_alphas=True).eval()
    cached, cached_ids = step_logits(teaching, PROMPTS, 10, use_cache=True)
    uncached, uncached_ids = step_logits(teaching, PROMPTS, 10, use_cache=False)
    torch.testing.assert_close(cached, uncached, atol=1e-5, rtol=0)
    assert torch.equal(cached_ids, uncached_ids)


def test_the_cache_holds_every_chunk_in_order_and_counts_real_tokens():
    cache = KVCache(1)
    chunks = [torch.randn(2, 3, n, 4) for n in (5, 1, 20, 1, 1)]
    with torch.no_grad():
        for chunk in chunks:
            cache.add_tokens(torch.ones(2, chunk.shape[2], dtype=torch.long), pad_id=0)
            keys, values = cache.layers[0].extend(chunk, 2 * chunk)
    expected = torch.cat(chunks, dim=2)
    assert torch.equal(keys, expected) and torch.equal(values, 2 * expected)
    assert cache.length == 28 and cache.keep is None  # no padding yet: counted, not recorded per token
    with torch.no_grad():  # padding arrives late: the counts follow it
        cache.add_tokens(torch.tensor([[1], [0]]), pad_id=0)
    assert not bool(cache.keep.all()) and cache.n_real.tolist() == [29, 28]


def test_gradients_flow_through_the_cache():
    cache = KVCache(1)
    first = torch.randn(1, 2, 3, 4, requires_grad=True)
    cache.add_tokens(torch.ones(1, 3, dtype=torch.long))
    cache.layers[0].extend(first, first)
    cache.add_tokens(torch.ones(1, 1, dtype=torch.long))
    keys, _ = cache.layers[0].extend(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    keys.sum().backward()
    assert torch.equal(first.grad, torch.ones_like(first))  # the gradient reaches the first keys


def test_the_model_checks_the_range_of_ids_on_the_cpu_and_generation_still_agrees(model):
    cache = model.new_cache()
    with pytest.raises(ValueError, match="ids must hold ids in 0..19, got ids from 1 to 999"):
        model(torch.tensor([[1, 999]]), cache=cache)
    out = generate(model, [1, 5, 6], 5, temperature=0)
    assert torch.equal(out, generate(model, [1, 5, 6], 5, temperature=0, use_cache=False))


def test_time_slope_and_cache_numbers():
    assert time_slope([1.0, 3.0, 5.0, 7.0], first_position=10) == pytest.approx(2.0)
    assert time_slope([2.0] * 5) == pytest.approx(0.0)
    spiky = [1.0 + 0.1 * i for i in range(40)]
    spiky[30:34] = [50.0] * 4  # four slow steps: a least-squares fit would tilt, the median does not
    assert time_slope(spiky) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="two step times"):
        time_slope([1.0])
    model = DecoderOnlyTransformer(20, d_model=16, n_heads=2, ff_units=32, n_layers=3, dropout=0.0, max_len=32)
    assert cache_numbers(model, 10) == 2 * 3 * 10 * 16
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(4, 20, (1, 10)), cache=cache)
    held = sum(t.numel() for layer in cache.layers for t in (layer.keys, layer.values))
    assert held == cache_numbers(model, 10)


def test_top_p_of_one_keeps_every_token_even_the_tiniest():
    # 1,000 tokens: one at logit 30, the rest at 0; their running sum rounds to 1 long before the tail
    logits = torch.zeros(1, 1000)
    logits[0, 0] = 30.0
    before = torch.softmax(logits, -1).sort(descending=True).values.cumsum(-1)
    assert (before[0, :-1] >= 1).any()  # the rounding that would drop the tail without the rule
    assert torch.equal(top_p_filter(logits, 1.0), logits)
