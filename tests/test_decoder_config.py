"""DecoderConfig is the one source of the decoder-only model's settings: the model takes a config or
its fields as keywords, has no defaults of its own, and every field changes the model it builds."""
import dataclasses
import inspect

import pytest
import torch

from stepbystep.models import AttentionOnlyTransformer, DecoderConfig, DecoderOnlyTransformer

V = 12
SMALL = dict(d_model=16, n_heads=4, ff_units=32, n_layers=1, max_len=16)
# a value other than the default for every field, on the small model (rope_* with rotary positions)
CHANGES = {
    "vocab_size": 13, "d_model": 8, "n_heads": 2, "ff_units": 24, "n_layers": 2, "dropout": 0.3, "max_len": 20,
    "pad_id": 1, "norm_first": False, "tie_weights": False, "embedding_std": 0.5, "store_alphas": True,
    "position_scheme": "learned", "rope_base": 500.0, "n_kv_heads": 2, "norm": "rmsnorm", "norm_eps": 1e-6,
    "mlp": "gelu", "bias": False, "head_bias": False, "rope_pairing": "rotate_half", "qk_norm": "head",
    "norm_output": True, "kv_latent_dim": 8, "q_latent_dim": 6, "rope_head_dim": 4, "nope_head_dim": 3,
    "v_head_dim": 5, "n_experts": 4, "experts_per_token": 1, "expert_ff_units": 16, "norm_topk_prob": False,
    "sliding_window": 3, "attention_sinks": 1,
}
ROPE_FIELDS = ("rope_base", "rope_pairing", "kv_latent_dim")
LATENT_FIELDS = ("q_latent_dim", "rope_head_dim", "nope_head_dim", "v_head_dim")  # with kv_latent_dim set
EXPERT_FIELDS = ("experts_per_token", "expert_ff_units", "norm_topk_prob")  # read only with n_experts


def _seeded(config):
    torch.manual_seed(0)
    return DecoderOnlyTransformer(config)


def _same(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return repr(a) == repr(b) and sa.keys() == sb.keys() and all(
        x.shape == y.shape and torch.equal(x, y) for x, y in zip(sa.values(), sb.values()))


def test_every_field_has_a_change_to_try():
    assert set(CHANGES) == {field.name for field in dataclasses.fields(DecoderConfig)}


@pytest.mark.parametrize("field", CHANGES)
def test_every_field_changes_the_model(field):
    base = DecoderConfig(V, **SMALL, position_scheme="rope" if field in ROPE_FIELDS + LATENT_FIELDS else "sinusoidal",
                         sliding_window=4 if field == "attention_sinks" else None)  # sinks need a window
    if field in LATENT_FIELDS:
        base = base.replace(kv_latent_dim=8)
    base = base.replace(n_experts=3) if field in EXPERT_FIELDS else base
    assert getattr(base, field) != CHANGES[field]
    assert _same(_seeded(base), _seeded(base))  # the comparison itself: one config, one model
    assert not _same(_seeded(base), _seeded(base.replace(**{field: CHANGES[field]})))


def test_the_model_has_no_defaults_of_its_own():
    parameters = inspect.signature(DecoderOnlyTransformer.__init__).parameters
    assert [(p.name, p.kind) for p in parameters.values()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("vocab_size", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("settings", inspect.Parameter.VAR_KEYWORD)]
    assert DecoderOnlyTransformer(V).config == DecoderConfig(V)
    assert DecoderOnlyTransformer(V, **SMALL).config == DecoderConfig(V, **SMALL)


def test_a_config_and_its_keywords_build_the_same_model():
    config = DecoderConfig(V, **SMALL, position_scheme="alibi")
    torch.manual_seed(0)
    from_keywords = DecoderOnlyTransformer(V, **SMALL, position_scheme="alibi")
    assert _same(_seeded(config), from_keywords)
    torch.manual_seed(0)
    assert _same(config.build(), from_keywords)
    changed = DecoderOnlyTransformer(config, n_layers=2)  # a config with changes
    assert changed.config == config.replace(n_layers=2) and len(changed.layers) == 2


def test_an_unknown_setting_is_refused():
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_kv'"):
        DecoderOnlyTransformer(V, n_kv=2)


def test_the_attention_only_model_takes_config_fields():
    fields = {field.name for field in dataclasses.fields(DecoderConfig)}
    own = set(inspect.signature(AttentionOnlyTransformer.__init__).parameters) - {"self"}
    assert own <= fields
    model = AttentionOnlyTransformer(V, d_model=16, n_heads=2, n_layers=1, max_len=16)
    assert model.config == DecoderConfig(V, d_model=16, n_heads=2, ff_units=None, n_layers=1, dropout=0.0, max_len=16,
                                         pad_id=None, tie_weights=False, position_scheme="learned")


def test_changes_lists_the_settings_that_differ_from_the_2017_block():
    assert DecoderConfig(V).changes() == {"vocab_size": V}
    llama = DecoderConfig.llama(V, d_model=16, n_heads=4, n_layers=2, max_len=32, n_kv_heads=2)
    changes = llama.changes()
    assert changes["norm"] == "rmsnorm" and changes["mlp"] == "swiglu" and changes["n_kv_heads"] == 2
    assert "norm_first" not in changes and "qk_norm" not in changes  # Llama keeps these defaults
    assert DecoderConfig(**changes) == llama
