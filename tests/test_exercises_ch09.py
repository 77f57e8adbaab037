"""Chapter 09's exercises: the worked solutions pass, typical wrong answers get a useful message
that does not give the answer away."""
import math

import torch

from stepbystep.exercises import ch09


# ----------------------------------------------------------------------------- top-k
def test_top_k_solution_passes():
    assert ch09.top_k.check(ch09.top_k._solution)


def test_top_k_placeholder_is_caught(fails_with):
    fails_with(ch09.top_k, lambda logits, k: logits, "every row should keep k tokens")


def test_top_k_smallest_instead_of_largest_is_caught(fails_with):
    def smallest(logits, k):
        kth = logits.topk(k, dim=-1, largest=False).values[..., -1:]
        return logits.masked_fill(logits > kth, float("-inf"))
    fails_with(ch09.top_k, smallest, "not the most likely ones")


def test_top_k_zero_instead_of_minus_infinity_is_caught(fails_with):
    def zeros(logits, k):
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, 0.0)
    message = fails_with(ch09.top_k, zeros, "the left-out logits must be -inf")
    assert "masked_fill" not in message  # says what is wrong, not how to write it


def test_top_k_a_large_negative_instead_of_minus_infinity_is_caught(fails_with):
    def very_negative(logits, k):
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < kth, -1e9)
    fails_with(ch09.top_k, very_negative, "the left-out logits must be -inf")


def test_top_k_changed_values_are_caught(fails_with):
    def softmaxed(logits, k):
        kth = logits.topk(k, dim=-1).values[..., -1:]
        return logits.softmax(dim=-1).log().masked_fill(logits < kth, float("-inf"))
    fails_with(ch09.top_k, softmaxed, "must stay as they are")


def test_top_k_whole_tensor_instead_of_rows_is_caught(fails_with):
    def flat(logits, k):
        kth = logits.flatten().topk(k).values[-1]
        return logits.masked_fill(logits < kth, float("-inf"))
    fails_with(ch09.top_k, flat, "every row should keep k tokens")


def test_top_k_needs_a_function(fails_with):
    fails_with(ch09.top_k, 3, "expected a function")


# ----------------------------------------------------------------------------- cached step
def test_cached_step_solution_passes():
    assert ch09.cached_step.check(ch09.cached_step._solution)


def test_cached_step_without_scaling_is_caught(fails_with):
    def unscaled(attention, x_new, keys, values):
        q = attention.make_chunks(attention.linear_query(x_new))
        keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)
        values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)
        weights = torch.softmax(q @ keys.transpose(-2, -1), dim=-1)
        return attention.output_function(weights @ values), keys, values
    fails_with(ch09.cached_step, unscaled, "√d_k")


def test_cached_step_not_appending_is_caught(fails_with):
    def forgetful(attention, x_new, keys, values):
        return attention.output_function(torch.zeros(2, 2, 1, 4)), keys, values
    fails_with(ch09.cached_step, forgetful, "(N, h, 6, d_k)")


def test_cached_step_prepending_is_caught(fails_with):
    def prepends(attention, x_new, keys, values):
        keys = torch.cat([attention.make_chunks(attention.linear_key(x_new)), keys], dim=2)
        values = torch.cat([attention.make_chunks(attention.linear_value(x_new)), values], dim=2)
        q = attention.make_chunks(attention.linear_query(x_new))
        weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)
        return attention.output_function(weights @ values), keys, values
    fails_with(ch09.cached_step, prepends, "stay first")


def test_cached_step_only_attending_to_itself_is_caught(fails_with):
    def itself(attention, x_new, keys, values):
        keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)
        values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)
        return attention.output_function(values[:, :, -1:]), keys, values
    fails_with(ch09.cached_step, itself, "differs from the last row")


def test_cached_step_wrong_return_is_caught(fails_with):
    fails_with(ch09.cached_step, lambda attention, x_new, keys, values: None, "return three things")


# ----------------------------------------------------------------------------- completion mask
def test_completion_mask_solution_passes():
    assert ch09.completion_mask.check(ch09.completion_mask._solution)


def test_completion_mask_everything_counted_is_caught(fails_with):
    fails_with(ch09.completion_mask, lambda stream, n: stream[1:], "every target is counted")


def test_completion_mask_separator_counted_is_caught(fails_with):
    def off_by_one(stream, n):
        targets = stream[1:].clone()
        targets[:n - 2] = -100
        return targets
    fails_with(ch09.completion_mask, off_by_one, "is the separator")


def test_completion_mask_first_completion_token_ignored_is_caught(fails_with):
    def too_many(stream, n):
        targets = stream[1:].clone()
        targets[:n] = -100
        return targets
    fails_with(ch09.completion_mask, too_many, "the first one")


def test_completion_mask_unshifted_is_caught(fails_with):
    def unshifted(stream, n):
        targets = stream[:-1].clone()
        targets[:n - 1] = -100
        return targets
    fails_with(ch09.completion_mask, unshifted, "shift the stream by one")


def test_completion_mask_wrong_length_is_caught(fails_with):
    def whole(stream, n):
        targets = stream.clone()
        targets[:n] = -100
        return targets
    fails_with(ch09.completion_mask, whole, "next-token targets")


def test_messages_do_not_reveal_the_answers(fails_with):
    """A failed check says what is wrong, never the expected targets or values."""
    message = fails_with(ch09.completion_mask, lambda stream, n: stream[1:], "every target")
    assert "[" not in message  # no list of expected targets
    message = fails_with(ch09.top_k, lambda logits, k: logits, "keep k tokens")
    assert "inf," not in message and "tensor(" not in message


def test_cached_step_without_output_projection_is_caught(fails_with):
    def unprojected(attention, x_new, keys, values):
        q = attention.make_chunks(attention.linear_query(x_new))
        keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)
        values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)
        weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)
        context = (weights @ values).transpose(1, 2).reshape(x_new.shape[0], 1, -1)
        return context, keys, values
    fails_with(ch09.cached_step, unprojected, "linear_out")


def test_completion_mask_unshifted_with_prompt_masked_is_caught(fails_with):
    def unshifted(stream, n):
        targets = stream[:-1].clone()
        targets[:n] = -100
        return targets
    fails_with(ch09.completion_mask, unshifted, "shift the stream by one")


def test_completion_mask_zero_instead_of_minus_100_is_caught(fails_with):
    def zeros(stream, n):
        targets = stream[1:].clone()
        targets[:n - 1] = 0
        return targets
    fails_with(ch09.completion_mask, zeros, "exactly IGNORE_INDEX (-100)")


def test_hints_do_not_give_the_answers():
    assert "[..., -1:]" not in ch09.top_k._hint and "masked_fill" not in ch09.top_k._hint
    assert "prompt_length - 1" not in ch09.completion_mask._hint
    assert "stream[1:]" not in ch09.completion_mask._hint
    assert "sqrt" not in ch09.tied_logit_std._hint and "√" not in ch09.tied_logit_std._hint


# ----------------------------------------------------------------------------- tied logits' scale
def test_tied_logit_std_solution_passes_and_matches_a_model():
    assert ch09.tied_logit_std.check(ch09.tied_logit_std._solution)
    from stepbystep.models import DecoderOnlyTransformer
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(40, d_model=64, n_layers=2, dropout=0.0, tie_weights=True, embedding_std=0.3)
    with torch.no_grad():
        logits = model(torch.randint(4, 40, (16, 20)))
    assert abs(logits.std().item() - ch09.tied_logit_std._solution(0.3, 64)) < 0.5 * 2.4


def test_tied_logit_std_linear_in_d_model_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: s * d, "variances")


def test_tied_logit_std_without_d_model_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: s, "does not change with d_model")


def test_tied_logit_std_divided_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: s / math.sqrt(d), "not with d_model as a dot product does")


def test_tied_logit_std_wrong_constant_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: s * math.sqrt(d / 3), "constant is off")


def test_tied_logit_std_wrong_in_the_std_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: s ** 2 * math.sqrt(d), "multiplied by 10/3")


def test_tied_logit_std_negative_is_caught(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: -s * math.sqrt(d), "positive number")


def test_tied_logit_std_needs_a_number(fails_with):
    fails_with(ch09.tied_logit_std, lambda s, d: None, "one number")


# ----------------------------------------------------------------------------- top-p
def test_top_p_solution_passes():
    assert ch09.top_p.check(ch09.top_p._solution)


def _nucleus(logits, p, strict):
    probs = torch.softmax(logits, dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    cumulative = sorted_probs.cumsum(dim=-1)
    keep_sorted = cumulative < p if strict else cumulative - sorted_probs <= p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def test_top_p_without_the_crossing_token_is_caught(fails_with):
    fails_with(ch09.top_p, lambda logits, p: _nucleus(logits, p, strict=True), "crosses p")


def test_top_p_one_token_too_many_is_caught(fails_with):
    def one_more(logits, p):
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        keep_sorted = torch.cat([torch.ones_like(before[:, :1], dtype=torch.bool), before[:, :-1] < p], dim=1)
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        return logits.masked_fill(~keep, float("-inf"))
    fails_with(ch09.top_p, one_more, "more tokens than it needs")


def test_top_p_least_likely_tokens_is_caught(fails_with):
    def ascending(logits, p):
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, order = probs.sort(dim=-1)
        keep_sorted = sorted_probs.cumsum(dim=-1) - sorted_probs < p
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        return logits.masked_fill(~keep, float("-inf"))
    fails_with(ch09.top_p, ascending, "not the most likely tokens")


def test_top_p_unsorted_positions_is_caught(fails_with):
    def forgets_to_scatter(logits, p):
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, _ = probs.sort(dim=-1, descending=True)
        keep = sorted_probs.cumsum(dim=-1) - sorted_probs < p
        return logits.masked_fill(~keep, float("-inf"))
    fails_with(ch09.top_p, forgets_to_scatter, "tokens' own order")


def test_top_p_placeholder_is_caught(fails_with):
    fails_with(ch09.top_p, lambda logits, p: logits, "more tokens than it needs")


def test_cached_step_scaled_by_d_model_is_caught(fails_with):
    def by_d_model(attention, x_new, keys, values):
        q = attention.make_chunks(attention.linear_query(x_new))
        keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)
        values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)
        weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_model), dim=-1)
        return attention.output_function(weights @ values), keys, values
    fails_with(ch09.cached_step, by_d_model, "scale by √d_k")


def test_cached_step_hint_is_a_nudge_not_the_recipe():
    hint = ch09.cached_step._hint
    assert "torch.cat" not in hint and "linear_query" not in hint and "output_function" not in hint


def test_completion_mask_inverted_is_caught(fails_with):
    def inverted(stream, n):
        targets = stream[1:].clone()
        targets[n - 1:] = -100  # the prompt counted, the completion masked
        return targets
    fails_with(ch09.completion_mask, inverted, "the other way round")


def test_completion_mask_float_targets_are_caught(fails_with):
    def floats(stream, n):
        return torch.cat([torch.full((n - 1,), -100.0), stream[n:].float()])
    fails_with(ch09.completion_mask, floats, "integer ids (torch.long)")


def test_completion_mask_int32_targets_are_caught(fails_with):
    def int32(stream, n):
        return ch09.completion_targets(stream, n).to(torch.int32)
    fails_with(ch09.completion_mask, int32, "F.cross_entropy needs torch.long")
