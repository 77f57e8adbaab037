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
    for exercise in (ch04.stack_parameter_count, ch04.masked_batch_norm, ch04.layer_norm_pair):
        exercise.hint()
    hints = capsys.readouterr().out
    assert hints.count("\n") == 3
    for giveaway in ("4 * ", "d_model * d_model", "var(", "unbiased", "mean(", "(a - b) / 2", "sqrt("):
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


def test_masked_batch_norm_layer_norm_is_caught():
    result = ch04.masked_batch_norm.check(lambda x, mask: F.layer_norm(x, x.shape[-1:]) * mask.unsqueeze(-1))
    assert not result and "layer norm" in repr(result)


def test_masked_batch_norm_unbiased_variance_is_caught():
    def unbiased(x, mask):
        real = x[mask]
        return (x - real.mean(0)) / torch.sqrt(real.var(0) + 1e-5) * mask.unsqueeze(-1)

    result = ch04.masked_batch_norm.check(unbiased)
    assert not result and "biased variance" in repr(result) and "unbiased=False" not in repr(result)


def test_layer_norm_pair_solution_passes_and_matches_layer_norm():
    assert ch04.layer_norm_pair.check(ch04.layer_norm_pair._solution)
    a, b = torch.randn(10), torch.randn(10)
    torch.testing.assert_close(ch04.layer_norm_pair._solution(a, b), F.layer_norm(torch.stack([a, b], -1), (2,)))


def test_layer_norm_pair_unbiased_variance_is_caught():
    def unbiased(a, b):
        pair = torch.stack([a, b], dim=-1)
        return (pair - pair.mean(-1, keepdim=True)) / torch.sqrt(pair.var(-1, keepdim=True) + 1e-5)

    result = ch04.layer_norm_pair.check(unbiased)
    assert not result and "±0.71" in repr(result)


def test_layer_norm_pair_without_epsilon_is_caught():
    def no_eps(a, b):
        half_gap = (a - b) / 2
        first = half_gap / half_gap.abs()
        return torch.stack([first, -first], dim=-1)

    result = ch04.layer_norm_pair.check(no_eps)
    assert not result and "NaN when a == b" in repr(result)


def test_layer_norm_pair_sign_only_is_caught_near_equal_pairs():
    result = ch04.layer_norm_pair.check(lambda a, b: torch.stack([torch.sign(a - b), torch.sign(b - a)], dim=-1))
    assert not result and "a = 2, b = 2.0005" in repr(result)
    expected = torch.nn.functional.layer_norm(torch.tensor([[2.0, 2.0005]]), (2,))[0]
    assert f"{expected[0].item():.4f}" not in repr(result)  # the right pair stays hidden


def test_solutions_print_their_source(capsys):
    ch04.layer_norm_pair.solution()
    assert "half_gap" in capsys.readouterr().out
