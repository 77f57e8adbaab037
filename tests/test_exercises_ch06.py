"""Chapter 06's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import warnings

import pytest
import torch
from torch import nn

from ch06_answers import transformer_with
from stepbystep.exercises import ch06


@pytest.fixture(autouse=True)
def quiet_nested_tensor_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        yield


def _additive(keep):
    return torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))


def test_combined_mask_solution_passes():
    assert ch06.combined_mask.check(ch06.combined_mask._solution)


def test_combined_mask_with_a_large_finite_negative_number_passes():
    def finite(target_pad, causal, n_heads):
        keep = (target_pad & causal).repeat_interleave(n_heads, dim=0)
        return torch.zeros(keep.shape).masked_fill(~keep, -1e9)
    assert ch06.combined_mask.check(finite)


@pytest.mark.parametrize("answer, words", [
    (lambda pad, causal, h: (pad & causal).repeat_interleave(h, dim=0), "boolean mask"),
    (lambda pad, causal, h: _additive(pad & causal), "one mask per sequence"),
    (lambda pad, causal, h: _additive(~(pad & causal)).repeat_interleave(h, dim=0), "the convention is inverted"),
    (lambda pad, causal, h: _additive(pad & causal).repeat(h, 1, 1), "the copies are in the wrong order"),
    (lambda pad, causal, h: _additive(causal.expand(pad.shape[0], -1, -1)).repeat_interleave(h, dim=0),
     "only the causal part"),
    (lambda pad, causal, h: _additive(pad.expand(-1, pad.shape[-1], -1)).repeat_interleave(h, dim=0),
     "only the padding part"),
    (lambda pad, causal, h: torch.zeros(pad.shape[0] * h, 2, 2), "expected shape (4, 4, 4)"),
    (lambda pad, causal, h: (pad & causal).int(), "expected a float tensor"),
    (lambda pad, causal, h: (pad & causal).float().repeat_interleave(h, dim=0), "adding 1 or 0 blocks nothing"),
    (lambda pad, causal, h: (~(pad & causal)).float().repeat_interleave(h, dim=0), "adding 1 or 0 blocks nothing"),
    (lambda pad, causal, h: None, "expected a tensor"),
])
def test_combined_mask_typical_slips_are_named(fails_with, answer, words):
    message = fails_with(ch06.combined_mask, answer, words)
    assert "repeat_interleave" not in message and "-inf where it may" not in message.replace(
        "0 sits where a query must not attend, -inf where it may", "")


def test_combined_mask_other_wrong_values_are_called_wrong(fails_with):
    def off_by_one(pad, causal, h):
        keep = (pad & causal).repeat_interleave(h, dim=0).clone()
        keep[0, 0, 1] = True  # one future key let through
        return _additive(keep)
    fails_with(ch06.combined_mask, off_by_one, "some entries are wrong")


def test_copy_from_torch_solution_passes():
    assert ch06.copy_from_torch.check(ch06.copy_from_torch._solution)


def _copy_with(order=(0, 1, 2), transpose=False, biases=True, out_proj=True):
    def copy(theirs, ours):
        blocks, bias_blocks = theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3)
        with torch.no_grad():
            for linear, i in zip((ours.linear_query, ours.linear_key, ours.linear_value), order):
                linear.weight.copy_(blocks[i].T if transpose else blocks[i])
                if biases:
                    linear.bias.copy_(bias_blocks[i])
            if out_proj:
                ours.linear_out.weight.copy_(theirs.out_proj.weight)
                ours.linear_out.bias.copy_(theirs.out_proj.bias)
    return copy


@pytest.mark.parametrize("answer, words", [
    (lambda theirs, ours: None, "nothing was copied"),
    (_copy_with(order=(1, 0, 2)), "not in the order in_proj_weight stacks them"),
    (_copy_with(transpose=True), "transposed"),
    (_copy_with(biases=False), "their biases are not in_proj_bias's blocks"),
    (_copy_with(out_proj=False), "linear_out"),
])
def test_copy_from_torch_typical_slips_are_named(fails_with, answer, words):
    message = fails_with(ch06.copy_from_torch, answer, words)
    assert "chunk(3)" not in message


def _share_out_proj(theirs, ours):
    _copy_with(out_proj=False)(theirs, ours)
    ours.linear_out = theirs.out_proj  # the same module, not a copy


def _share_out_proj_weight(theirs, ours):
    _copy_with()(theirs, ours)
    ours.linear_out.weight = theirs.out_proj.weight  # the same parameter, not a copy


@pytest.mark.parametrize("answer", [_share_out_proj, _share_out_proj_weight])
def test_copy_from_torch_sharing_instead_of_copying_is_named(fails_with, answer):
    fails_with(ch06.copy_from_torch, answer, "shares PyTorch's parameters instead of holding copies")


def test_copy_from_torch_without_no_grad_is_reported_not_raised(fails_with):
    def copy_with_grad(theirs, ours):
        ours.linear_query.weight.copy_(theirs.in_proj_weight.chunk(3)[0])
    fails_with(ch06.copy_from_torch, copy_with_grad, "where PyTorch records no gradients")


def test_copy_from_torch_wrong_dimension_is_reported(fails_with):
    def split_columns(theirs, ours):
        with torch.no_grad():
            ours.linear_query.weight.copy_(theirs.in_proj_weight.chunk(3, dim=1)[0])
    fails_with(ch06.copy_from_torch, split_columns, "check along which dimension")


def test_copy_from_torch_weights_from_elsewhere_are_named(fails_with):
    def random_weights(theirs, ours):
        with torch.no_grad():
            ours.linear_query.weight.copy_(torch.randn_like(ours.linear_query.weight))
    fails_with(ch06.copy_from_torch, random_weights, "are not the blocks of in_proj_weight")


def test_exercises_leave_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    ch06.copy_from_torch.check(ch06.copy_from_torch._solution)
    ch06.combined_mask.check(ch06.combined_mask._solution)
    assert torch.equal(torch.rand(1), expected)


def test_matching_transformer_solution_passes():
    assert ch06.matching_transformer.check(ch06.matching_transformer._solution)


def test_matching_transformer_sequence_first_fails():
    result = ch06.matching_transformer.check(transformer_with(batch_first=False))
    assert not result and "reads its inputs sequence-first" in repr(result)
    assert "batch_first" not in repr(result)


def test_matching_transformer_default_norm_placement_fails_on_the_norm_first_model():
    result = ch06.matching_transformer.check(transformer_with(norm_first=False))
    assert not result
    assert "first model" in repr(result) and "its norm_first differs from our model's" in repr(result)


def test_matching_transformer_wrong_layer_counts_fail():
    result = ch06.matching_transformer.check(transformer_with(num_decoder_layers=2))
    # the first model has 2 + 2 layers, the second 1 + 3: only the second is caught
    assert not result and "second model" in repr(result) and "number of decoder layers differs" in repr(result)


def test_matching_transformer_needs_an_nn_transformer():
    result = ch06.matching_transformer.check(lambda model: nn.TransformerEncoder(nn.TransformerEncoderLayer(6, 3), 2))
    assert not result and "expected an nn.Transformer" in repr(result)


def test_solutions_print_their_source(capsys):
    ch06.combined_mask.solution()
    ch06.copy_from_torch.solution()
    ch06.matching_transformer.solution()
    out = capsys.readouterr().out
    assert "repeat_interleave" in out and "in_proj_weight.chunk(3)" in out and "batch_first=True" in out


def test_hints_are_printed_on_request(capsys):
    ch06.combined_mask.hint()
    ch06.copy_from_torch.hint()
    ch06.matching_transformer.hint()
    out = capsys.readouterr().out
    assert "both keep-masks" in out and "chunk" in out and "batch_first" in out
