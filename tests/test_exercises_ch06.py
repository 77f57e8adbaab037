"""Chapter 06's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import warnings

import pytest
import torch
from torch import nn

from stepbystep.exercises import ch06


@pytest.fixture(autouse=True)
def quiet_nested_tensor_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        yield


def test_pytorch_masks_solution_passes():
    assert ch06.pytorch_masks.check(ch06.pytorch_masks._solution)


def test_pytorch_masks_keep_masks_passed_unchanged_are_called_out():
    result = ch06.pytorch_masks.check(lambda source, target: (source[:, 0, :], target[0]))
    assert not result
    assert "key_padding_mask is our keep-mask unchanged" in repr(result)
    assert "the mistake the book's TransformerModel makes with its source mask" in repr(result)
    assert "Stuck? .hint() gives a nudge" in repr(result) and "invert" not in repr(result)


def test_pytorch_masks_inverted_target_but_not_source_names_the_source():
    result = ch06.pytorch_masks.check(lambda source, target: (source[:, 0, :], ~target[0]))
    assert not result and "key_padding_mask" in repr(result)
    result = ch06.pytorch_masks.check(lambda source, target: (~source[:, 0, :], target[0]))
    assert not result and "attn_mask is our keep-mask unchanged" in repr(result)


def test_pytorch_masks_wrong_shapes_say_expected_and_got():
    result = ch06.pytorch_masks.check(lambda source, target: (~source, ~target))
    assert not result and "should have shape (3, 3), got (3, 1, 3)" in repr(result)


def test_pytorch_masks_additive_masks_are_asked_to_be_boolean():
    def additive(source, target):
        blocked_source, blocked_target = ~source[:, 0, :], ~target[0]
        return (torch.zeros(blocked_source.shape).masked_fill(blocked_source, float("-inf")),
                torch.zeros(blocked_target.shape).masked_fill(blocked_target, float("-inf")))

    result = ch06.pytorch_masks.check(additive)
    assert not result and "should be boolean" in repr(result)


def test_pytorch_masks_needs_a_pair():
    result = ch06.pytorch_masks.check(lambda source, target: ~source[:, 0, :])
    assert not result and "return a pair" in repr(result)


def test_copy_attention_solution_passes():
    assert ch06.copy_attention.check(ch06.copy_attention._solution)


def test_copy_attention_doing_nothing_fails():
    result = ch06.copy_attention.check(lambda ours, theirs: None)
    assert not result and "still has its own weights" in repr(result)


def _copy_with(order=("query", "key", "value"), transpose=False, out_proj=True):
    def copy(ours, theirs):
        layers = [getattr(ours, f"linear_{name}") for name in order]
        with torch.no_grad():
            weights = [layer.weight.T if transpose else layer.weight for layer in layers]
            theirs.in_proj_weight.copy_(torch.cat(weights))
            theirs.in_proj_bias.copy_(torch.cat([layer.bias for layer in layers]))
            if out_proj:
                theirs.out_proj.weight.copy_(ours.linear_out.weight)
                theirs.out_proj.bias.copy_(ours.linear_out.bias)
    return copy


def test_copy_attention_wrong_order_fails():
    result = ch06.copy_attention.check(_copy_with(order=("key", "query", "value")))
    assert not result and "not in the order PyTorch reads them" in repr(result)


def test_copy_attention_transposed_weights_fail():
    result = ch06.copy_attention.check(_copy_with(transpose=True))
    assert not result and "transposed" in repr(result)


def test_copy_attention_forgotten_output_layer_fails():
    result = ch06.copy_attention.check(_copy_with(out_proj=False))
    assert not result and "out_proj" in repr(result)


def test_copy_attention_without_no_grad_is_reported_not_raised():
    def copy_with_grad(ours, theirs):
        theirs.in_proj_weight.copy_(torch.cat([ours.linear_query.weight, ours.linear_key.weight,
                                               ours.linear_value.weight]))

    result = ch06.copy_attention.check(copy_with_grad)
    assert not result and "raised RuntimeError" in repr(result)  # PyTorch's own words follow
    assert "torch.no_grad()" in ch06.copy_attention._hint  # and the hint, on request, says why


def test_copy_attention_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    ch06.copy_attention.check(ch06.copy_attention._solution)
    assert torch.equal(torch.rand(1), expected)


def test_matching_transformer_solution_passes():
    assert ch06.matching_transformer.check(ch06.matching_transformer._solution)


def _transformer_with(**overrides):
    def build(model):
        layer = model.encoder.layers[0]
        arguments = dict(d_model=layer.d_model, nhead=layer.n_heads, num_encoder_layers=len(model.encoder.layers),
                         num_decoder_layers=len(model.decoder.layers), dim_feedforward=layer.ff_units,
                         batch_first=True, norm_first=layer.norm_first)
        arguments.update(overrides)
        return nn.Transformer(**arguments)
    return build


def test_matching_transformer_sequence_first_fails():
    result = ch06.matching_transformer.check(_transformer_with(batch_first=False))
    assert not result and "reads its inputs sequence-first" in repr(result)
    assert "batch_first" not in repr(result)


def test_matching_transformer_default_norm_placement_fails_on_the_norm_first_model():
    result = ch06.matching_transformer.check(_transformer_with(norm_first=False))
    assert not result
    assert "norm_first=True" in repr(result) and "norm_first differs" in repr(result)


def test_matching_transformer_wrong_layer_counts_fail():
    result = ch06.matching_transformer.check(_transformer_with(num_decoder_layers=2))
    # the first model has 2 + 2 layers, the second 1 + 3: only the second is caught
    assert not result and "1+3 layers" in repr(result) and "number of layers differs" in repr(result)


def test_matching_transformer_needs_an_nn_transformer():
    result = ch06.matching_transformer.check(lambda model: nn.TransformerEncoder(nn.TransformerEncoderLayer(6, 3), 2))
    assert not result and "expected an nn.Transformer" in repr(result)


def test_solutions_print_their_source(capsys):
    ch06.pytorch_masks.solution()
    ch06.copy_attention.solution()
    ch06.matching_transformer.solution()
    out = capsys.readouterr().out
    assert "~source_mask[:, 0, :]" in out and "in_proj_weight.copy_" in out and "batch_first=True" in out


def test_wrong_mask_values_are_shown_but_not_the_answer():
    def half_inverted(source, target):
        return ~source[:, 0, :], torch.zeros_like(target[0])  # right padding, nothing blocked
    result = ch06.pytorch_masks.check(half_inverted)
    assert not result and "attn_mask has the right shape and dtype but not the right values" in repr(result)
    assert "got [[0, 0], [0, 0]]" in repr(result) and "[[0, 1], [0, 0]]" not in repr(result)


def test_in_proj_weight_that_is_not_ours_at_all_is_named():
    def random_weights(ours, theirs):
        with torch.no_grad():
            theirs.in_proj_weight.copy_(torch.randn_like(theirs.in_proj_weight))
    result = ch06.copy_attention.check(random_weights)
    assert not result and "does not hold our query, key and value projection weights" in repr(result)


def test_hints_are_printed_on_request(capsys):
    ch06.pytorch_masks.hint()
    ch06.copy_attention.hint()
    ch06.matching_transformer.hint()
    out = capsys.readouterr().out
    assert "invert each mask" in out and "in_proj_weight" in out and "batch_first" in out
