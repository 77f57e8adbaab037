"""Chapter 06's matching_transformer checker says what differs without printing the model's sizes:
the exercise asks the learner to read them from the model."""
import re
import warnings

import pytest
from torch import nn

from ch06_answers import transformer_with
from stepbystep.exercises import ch06


@pytest.fixture(autouse=True)
def quiet_nested_tensor_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        yield


@pytest.mark.parametrize("overrides, names", [
    (dict(dim_feedforward=2048), "its ff_units (dim_feedforward) differs from our model's"),
    (dict(num_encoder_layers=6), "its number of encoder layers differs from our model's"),
    (dict(num_decoder_layers=2), "its number of decoder layers differs from our model's"),
    (dict(norm_first=False), "its norm_first differs from our model's"),
    (dict(nhead=1), "its n_heads (num_heads) differs from our model's"),
    (dict(batch_first=False), "reads its inputs sequence-first"),
])
def test_each_wrong_argument_is_named_without_a_size(overrides, names):
    result = ch06.matching_transformer.check(transformer_with(**overrides))
    assert not result
    assert names in repr(result)
    assert not re.search(r"\d", repr(result)), repr(result)  # no head count, width, layer count or flag value
    assert "ours has" not in repr(result) and "True" not in repr(result) and "False" not in repr(result)


def test_the_placeholder_fails_without_a_size():
    def placeholder(model):
        layer = model.encoder.layers[0]
        return nn.Transformer(d_model=layer.d_model, nhead=layer.n_heads)
    result = ch06.matching_transformer.check(placeholder)
    assert not result and "sequence-first" in repr(result) and not re.search(r"\d", repr(result))


def test_which_model_failed_is_still_said():
    # the first model has 2 + 2 layers, the second 1 + 3: a fixed 2 + 2 answer fails on the second
    result = ch06.matching_transformer.check(transformer_with(num_encoder_layers=2, num_decoder_layers=2))
    assert "for the checker's second model" in repr(result)
    result = ch06.matching_transformer.check(transformer_with(norm_first=False))
    assert "for the checker's first model" in repr(result)
