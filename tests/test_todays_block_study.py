"""Chapter 12's experiments: the block study's variants and recipe, its claims, and the timings."""
import pytest
import torch

from stepbystep.experiments.cache_timing import generation_times, prefill_decode_times
from stepbystep.experiments.todays_block import (
    BLOCK_STEPS,
    block_claims,
    block_configs,
    block_study,
    date_streams,
    kv_head_claims,
    train_block,
)
from stepbystep.models import DecoderConfig, RMSNorm, SwiGLU


@pytest.fixture(scope="module")
def dates():
    return date_streams(n_train=64, n_val=16)


def test_date_streams_are_padded_completion_streams(dates):
    vocab, (train_x, train_y), (val_x, val_y) = dates
    assert train_x.shape == train_y.shape and train_x.shape[0] == 64 and val_x.shape[0] == 16
    assert (train_y == -100).any() and (train_y != -100).any()  # the prompt's targets ignored
    assert int(train_x.max()) < len(vocab)


def test_each_step_adds_one_change_and_swiglu_keeps_the_weights(dates):
    configs = block_configs(len(dates[0]))
    assert list(configs)[:5] == list(BLOCK_STEPS)
    models = {name: config.build() for name, config in configs.items()}
    assert isinstance(models["+ RMSNorm"].norm, RMSNorm) and not isinstance(models["2017 block"].norm, RMSNorm)
    assert isinstance(models["+ SwiGLU"].layers[0].ffn, SwiGLU)
    relu_weights = models["+ RMSNorm"].layers[0].ffn[0].weight.numel() + models["+ RMSNorm"].layers[0].ffn[3].weight.numel()
    swiglu = models["+ SwiGLU"].layers[0].ffn
    assert abs(sum(m.weight.numel() for m in (swiglu.gate, swiglu.up, swiglu.down)) - relu_weights) <= 3 * 32
    assert models["+ no biases"].head.bias is None and models["+ SwiGLU"].head.bias is not None
    assert models["+ RoPE"].position_scheme == "rope" and models["+ no biases"].position_scheme == "sinusoidal"
    assert configs["2017 block + RoPE"] == configs["2017 block"].replace(position_scheme="rope")
    assert configs["+ RMSNorm, GELU"] == configs["+ RMSNorm"].replace(mlp="gelu")
    assert [configs[name].n_kv_heads for name in ("+ RoPE", "2 KV heads", "1 KV head")] == [None, 2, 1]
    count = lambda name: sum(p.numel() for p in models[name].parameters())  # noqa: E731
    assert count("1 KV head, wider FFN") == count("+ RoPE") > count("1 KV head")


def test_train_block_is_seeded_and_learns(dates):
    _, train, val = dates
    config = DecoderConfig(len(dates[0]), d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.0, max_len=48)
    first, again = train_block(config, 0, train, val, steps=30), train_block(config, 0, train, val, steps=30)
    assert first == again
    untrained = train_block(config, 0, train, val, steps=1, lr=1e-9)
    assert first[0] < untrained[0] and 0 <= first[1] <= 1


def test_block_study_shape(dates):
    _, train, val = dates
    configs = dict(list(block_configs(len(dates[0]), d_model=16).items())[:2])
    results = block_study(configs, (0, 1), train, val, steps=2)
    assert list(results) == list(configs) and all(r.shape == (2, 2) for r in results.values())


def _results(**losses):
    names = list(BLOCK_STEPS) + ["2017 block + RoPE", "2017 block, no positions", "2017 block, learned positions",
                                 "+ RMSNorm, GELU", "2 KV heads", "1 KV head", "1 KV head, wider FFN"]
    return {name.replace("_", " "): torch.tensor([[loss, 0.5] for loss in losses[name]]) for name in names}


GOOD = {"2017 block": [1.40, 1.38, 1.34], "+ RMSNorm": [1.42, 1.33, 1.34], "+ SwiGLU": [1.37, 1.40, 1.31],
        "+ no biases": [1.34, 1.27, 1.35], "+ RoPE": [0.83, 0.64, 0.84], "2017 block + RoPE": [0.83, 0.88, 0.87],
        "2017 block, no positions": [1.38, 1.29, 1.42], "2017 block, learned positions": [1.22, 1.21, 1.23],
        "+ RMSNorm, GELU": [1.35, 1.36, 1.30],
        "2 KV heads": [0.84, 0.85, 0.83], "1 KV head": [0.93, 0.93, 0.93], "1 KV head, wider FFN": [0.72, 0.96, 0.87]}


def _claims(results, claims):
    return {claim.claim: bool(claim.holds) for claim in claims(results)}


def test_block_claims_hold_on_the_chapter_s_numbers_and_fail_otherwise():
    assert all(_claims(_results(**GOOD), block_claims).values())
    weak_rope = dict(GOOD, **{"+ RoPE": [1.2, 1.0, 1.3]})
    assert not _claims(_results(**weak_rope), block_claims)["RoPE lowers the validation loss by more than 0.3 in "
                                                            "every seed"]
    big_rmsnorm = dict(GOOD, **{"+ RMSNorm": [1.1, 1.1, 1.1]})
    held = _claims(_results(**big_rmsnorm), block_claims)
    assert not held["RMSNorm, SwiGLU, GELU and dropping the biases each move the median loss by less than 0.15"]
    # one seed where dropping the biases moves the loss by more than half of RoPE's gain there: the medians
    # barely move, the seed-for-seed bound goes
    one_seed = dict(GOOD, **{"+ no biases": [1.34, 1.27, 1.64], "+ RoPE": [0.83, 0.64, 1.13]})
    held = _claims(_results(**one_seed), block_claims)
    assert held["RMSNorm, SwiGLU, GELU and dropping the biases each move the median loss by less than 0.15"]
    assert not held[SHARE]


SHARE = ("seed for seed, each of those changes moves the loss by less than half of what RoPE gains in the same seed "
         "(on Llama's path and alone)")


def test_the_seed_for_seed_bound_is_judged_against_the_smaller_of_ropes_two_gains():
    assert _claims(_results(**GOOD), block_claims)[SHARE]
    # RoPE alone on the 2017 block gains little in seed 1 (0.14): the biases' 0.13 there is then over half of it
    weak_control = dict(GOOD, **{"2017 block + RoPE": [0.83, 1.24, 0.87]})
    assert not _claims(_results(**weak_control), block_claims)[SHARE]


def test_kv_head_claims_hold_and_fail():
    assert all(_claims(_results(**GOOD), kv_head_claims).values())
    one_seed_better = dict(GOOD, **{"1 KV head": [0.93, 0.63, 0.93]})  # above four's in 2 of 3: not three in four
    held = _claims(_results(**one_seed_better), kv_head_claims)
    assert not held["one KV head ends with a higher loss than four in more than three seeds in four, seed for seed"]
    collapsed = dict(GOOD, **{"1 KV head": [1.3, 1.3, 1.3]})
    assert not _claims(_results(**collapsed), kv_head_claims)["4, 2 and 1 KV heads each keep most of RoPE's gain: "
                                                               "medians more than 0.3 below the 2017 block's"]


def test_prefill_decode_times_are_positive_per_length():
    torch.manual_seed(0)
    model = DecoderConfig.llama(30, d_model=16, n_heads=2, n_layers=1, max_len=40, n_kv_heads=1).build()
    prefill, decode = prefill_decode_times(model, [4, 16], repeats=2)
    assert len(prefill) == len(decode) == 2 and min(prefill + decode) > 0
    assert model.training  # its mode restored


def test_generation_times_compares_the_same_tokens():
    transformers = pytest.importorskip("transformers")
    from stepbystep.models import from_transformers

    torch.manual_seed(0)
    theirs = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=40, n_embd=16, n_layer=1, n_head=2,
                                                                  n_positions=32)).eval()
    seconds, same = generation_times(from_transformers(theirs), theirs, torch.tensor([[1, 2, 3]]), 5, repeats=1)
    assert same and set(seconds) == {"ours", "transformers"} and min(seconds.values()) > 0
