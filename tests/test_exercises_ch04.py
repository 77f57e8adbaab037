"""Chapter 04's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch04


def test_stack_parameter_count_solution_passes():
    assert ch04.stack_parameter_count.check(ch04.stack_parameter_count._solution)


def test_stack_parameter_count_missing_final_norm_is_named():
    def no_final_norm(n_layers, d_model, ff_units, norm_first):
        return ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, False)

    result = ch04.stack_parameter_count.check(no_final_norm)
    assert not result and "left out the stack's final layer norm" in repr(result)
    assert "8 parameters" not in repr(result)


def test_stack_parameter_count_final_norm_on_norm_last_is_named():
    def always_final_norm(n_layers, d_model, ff_units, norm_first):
        return ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, True)

    result = ch04.stack_parameter_count.check(always_final_norm)
    assert not result and "a norm-last stack has none" in repr(result)


def test_stack_parameter_count_one_layer_only_is_named():
    def one_layer(n_layers, d_model, ff_units, norm_first):
        return ch04.stack_parameter_count._solution(1, d_model, ff_units, norm_first)

    result = ch04.stack_parameter_count.check(one_layer)
    assert not result and "independent copies" in repr(result) and "n_layers=3" in repr(result)


def test_stack_parameter_count_without_layer_norms_is_named():
    def no_norms(n_layers, d_model, ff_units, norm_first):
        per_layer = 4 * (d_model * d_model + d_model) + 2 * d_model * ff_units + ff_units + d_model
        return n_layers * per_layer

    result = ch04.stack_parameter_count.check(no_norms)
    assert not result and "left out the layer norms" in repr(result)
    assert "Stuck? .hint() gives a nudge" in repr(result) and "Hint" not in repr(result)


def test_stack_parameter_count_other_wrong_answers_do_not_reveal_the_count():
    result = ch04.stack_parameter_count.check(lambda n_layers, d_model, ff_units, norm_first: 7)
    assert not result and "not the number of parameters" in repr(result)
    assert str(ch04.stack_parameter_count._solution(1, 4, 8, True)) not in repr(result)


def test_hints_nudge_without_solving(capsys):
    for exercise in (ch04.stack_parameter_count, ch04.masked_batch_norm, ch04.layer_norm_invariants):
        exercise.hint()
    hints = capsys.readouterr().out
    assert hints.count("\n") == 3
    for giveaway in ("4 * ", "d_model * d_model", "var(", "unbiased", "mean(", "sqrt(", "sphere", "circle"):
        assert giveaway not in hints


def test_masked_batch_norm_solution_passes_and_zeroes_padding():
    assert ch04.masked_batch_norm.check(ch04.masked_batch_norm._solution)
    x = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    out = ch04.masked_batch_norm._solution(x, mask)
    torch.testing.assert_close(out[~mask], torch.zeros(3, 4))
    torch.testing.assert_close(out[mask].mean(0), torch.zeros(4), atol=1e-5, rtol=0)


def test_masked_batch_norm_plain_batch_norm_is_caught():
    def plain(x, mask):
        d = x.shape[-1]
        return F.batch_norm(x.reshape(-1, d), None, None, training=True).view_as(x)

    result = ch04.masked_batch_norm.check(plain)
    assert not result and "statistics include the padding" in repr(result)


def test_masked_batch_norm_padding_left_nonzero_is_caught():
    def no_zeroing(x, mask):
        real = x[mask]
        return (x - real.mean(0)) / torch.sqrt(real.var(0, unbiased=False) + 1e-5)

    result = ch04.masked_batch_norm.check(no_zeroing)
    assert not result and "padding positions should stay at zero" in repr(result)


def test_stack_parameter_count_missing_feed_forward_biases_are_named():
    def no_ffn_bias(n_layers, d_model, ff_units, norm_first):
        right = ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, norm_first)
        return right - n_layers * (ff_units + d_model)

    result = ch04.stack_parameter_count.check(no_ffn_bias)
    assert not result and "feed-forward network's biases" in repr(result)


def test_stack_parameter_count_layer_norms_without_their_shift_are_named():
    def scale_only(n_layers, d_model, ff_units, norm_first):  # each layer norm counted as d_model values
        right = ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, norm_first)
        return right - n_layers * 2 * d_model - (d_model if norm_first else 0)

    result = ch04.stack_parameter_count.check(scale_only)
    assert not result and "each layer norm as d_model values" in repr(result)
    assert "biases" not in repr(result)
    assert str(ch04.stack_parameter_count._solution(*ch04._STACK_CASES[0])) not in repr(result)


def test_stack_parameter_count_one_norm_per_layer_is_named(fails_with):
    def one_norm_per_layer(n_layers, d_model, ff_units, norm_first):
        right = ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, norm_first)
        return right - n_layers * 2 * d_model

    message = fails_with(ch04.stack_parameter_count, one_norm_per_layer, "one layer norm per layer")
    assert "final layer norm" not in message


def test_layer_norm_invariants_neutral_starter_gets_a_neutral_message(fails_with):
    message = fails_with(ch04.layer_norm_invariants, lambda d: (None, None), "replace the two Nones")
    assert "unit" not in message and "sum of the features is" not in message


def test_stack_parameter_count_slips_differ_on_the_first_case():
    """Each slip's shortfall is distinct on the first case, so each gets its own message."""
    n, d, f, norm_first = ch04._STACK_CASES[0]
    shortfalls = [2 * d,  # final norm
                  n * (f + d), n * f, n * d,  # feed-forward biases
                  n * 4 * d, n * 4 * d + 2 * d,  # layer norms
                  n * 2 * d + d,  # layer norms' shifts
                  n * 2 * d]  # one norm per layer
    assert len(set(shortfalls)) == len(shortfalls)


def test_masked_batch_norm_per_sequence_statistics_are_named():
    def per_sequence(x, mask, eps=1e-5):
        out = torch.zeros_like(x)
        for i in range(len(x)):
            real = x[i][mask[i]]  # (n_real_i, D)
            out[i] = (x[i] - real.mean(0)) / torch.sqrt(real.var(0, unbiased=False) + eps) * mask[i].unsqueeze(-1)
        return out

    result = ch04.masked_batch_norm.check(per_sequence)
    assert not result and "each sequence's statistics on its own" in repr(result)


def test_masked_batch_norm_layer_norm_is_caught():
    result = ch04.masked_batch_norm.check(lambda x, mask: F.layer_norm(x, x.shape[-1:]) * mask.unsqueeze(-1))
    assert not result and "layer norm" in repr(result)


def test_masked_batch_norm_unbiased_variance_is_caught():
    def unbiased(x, mask):
        real = x[mask]
        return (x - real.mean(0)) / torch.sqrt(real.var(0) + 1e-5) * mask.unsqueeze(-1)

    result = ch04.masked_batch_norm.check(unbiased)
    assert not result and "biased variance" in repr(result) and "unbiased=False" not in repr(result)


def test_layer_norm_invariants_solution_passes_and_matches_layer_norm():
    assert ch04.layer_norm_invariants.check(ch04.layer_norm_invariants._solution)
    for d in (2, 3, 7):
        y = F.layer_norm(5 * torch.randn(100, d, dtype=torch.float64), (d,), eps=0.0)  # (100, d)
        total, squares = ch04.layer_norm_invariants._solution(d)
        torch.testing.assert_close(y.sum(-1), torch.full((100,), total, dtype=torch.float64))
        torch.testing.assert_close(y.pow(2).sum(-1), torch.full((100,), squares, dtype=torch.float64))


def test_layer_norm_invariants_tensor_answers_pass():
    assert ch04.layer_norm_invariants.check(lambda d: torch.tensor([0.0, float(d)]))


def test_layer_norm_invariants_unit_length_is_explained():
    result = ch04.layer_norm_invariants.check(lambda d: (0.0, 1.0))
    assert not result and "standard deviation 1, not the length" in repr(result)


def test_layer_norm_invariants_unbiased_variance_is_explained():
    result = ch04.layer_norm_invariants.check(lambda d: (0, d - 1))
    assert not result and "unbiased variance" in repr(result)


def test_layer_norm_invariants_nonzero_sum_is_explained_without_the_answer():
    result = ch04.layer_norm_invariants.check(lambda d: (1.0, d))
    assert not result and "subtract the mean" in repr(result)
    assert "is 0" not in repr(result)


def test_layer_norm_invariants_other_answers_do_not_reveal_it():
    for wrong in (lambda d: (0.0, 2.0 * d), lambda d: (0.0, d**2)):
        result = ch04.layer_norm_invariants.check(wrong)
        assert not result and "is not what layer norm gives" in repr(result)
        assert "sqrt" not in repr(result) and "= d" not in repr(result)


def test_layer_norm_invariants_needs_two_numbers():
    result = ch04.layer_norm_invariants.check(lambda d: 0.0)
    assert not result and "should return two numbers" in repr(result)


def test_solutions_print_their_source(capsys):
    ch04.layer_norm_invariants.solution()
    assert "squares = float(d)" in capsys.readouterr().out
