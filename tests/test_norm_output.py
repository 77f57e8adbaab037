"""Where a sublayer's norm goes (chapters 04 and 17): before the sublayer (norm-first), after the
residual add (norm-last, the 2017 paper), or on the sublayer's output before the add (norm_output:
OLMo 2's reordered norm; with norm-first as well, Gemma's norms on both sides)."""
import pytest
import torch
from torch import nn

from stepbystep.models import DecoderConfig
from stepbystep.models.blocks.layers import SubLayerWrapper


def _wrapper(norm_first, norm_output):
    torch.manual_seed(0)
    wrapper = SubLayerWrapper(6, dropout=0.0, norm_first=norm_first, norm="rmsnorm", norm_output=norm_output).eval()
    with torch.no_grad():
        for p in wrapper.parameters():
            p.uniform_(0.5, 1.5)
    return wrapper


@pytest.mark.parametrize("norm_first, norm_output, formula", [
    (True, False, lambda w, x, f: x + f(w.norm(x))),
    (False, False, lambda w, x, f: w.norm(x + f(x))),
    (False, True, lambda w, x, f: x + w.out_norm(f(x))),
    (True, True, lambda w, x, f: x + w.out_norm(f(w.norm(x)))),
], ids=["norm-first", "norm-last", "olmo2", "both-sides"])
def test_each_placement_computes_its_formula(norm_first, norm_output, formula):
    wrapper = _wrapper(norm_first, norm_output)
    sublayer = nn.Linear(6, 6)
    x = torch.randn(2, 3, 6) * 5
    with torch.no_grad():
        torch.testing.assert_close(wrapper(x, sublayer), formula(wrapper, x, sublayer))
    n_norms = sum(norm is not None for norm in (wrapper.norm, wrapper.out_norm))
    assert n_norms == (2 if norm_first and norm_output else 1)
    assert ("norm_output=True" in repr(wrapper)) == norm_output


def test_norm_output_keeps_the_residual_stream_unnormalised_and_adds_a_final_norm():
    olmo = DecoderConfig.llama(20, d_model=16, n_heads=2, n_layers=2, max_len=8, n_kv_heads=1, norm_first=False,
                               norm_output=True).build()
    assert olmo.norm is not None and all(layer.sublayers[0].norm is None for layer in olmo.layers)
    post = DecoderConfig.llama(20, d_model=16, n_heads=2, n_layers=2, max_len=8, n_kv_heads=1, norm_first=False).build()
    assert post.norm is None and all(layer.sublayers[0].out_norm is None for layer in post.layers)
    with pytest.raises(TypeError, match="norm_output must be True or False"):
        DecoderConfig(20, norm_output="yes").build()
