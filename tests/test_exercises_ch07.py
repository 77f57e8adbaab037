"""Chapter 07's exercises: the solutions pass, typical mistakes fail with a useful message that
does not give the answer away (no expected value, no index)."""
import torch

from stepbystep.exercises import ch07


def _no_answer_given(message):
    assert "expected 0.667" not in message and "expected index" not in message and "expected 100%" not in message
    assert ".hint()" in message and ".solution()" in message


def test_masked_accuracy_solution_passes():
    assert ch07.masked_accuracy.check(ch07._masked_accuracy_solution)


def test_masked_accuracy_counting_pads_fails():
    result = ch07.masked_accuracy.check(lambda logits, targets, pad_id: (logits.argmax(-1) == targets).float().mean())
    assert not result
    assert "padded positions count" in result.message and "0.667" not in result.message
    _no_answer_given(result.message)


def test_masked_accuracy_other_mistake_fails_without_the_value():
    def pads_counted_as_right(logits, targets, pad_id):  # right on the first batch, by luck
        return ((logits.argmax(-1) == targets).sum() / (targets != pad_id).sum()).item()

    result = ch07.masked_accuracy.check(pads_counted_as_right)
    assert not result and "on random logits" in result.message and "not the masked accuracy" in result.message
    _no_answer_given(result.message)


def test_masked_accuracy_wrong_type():
    result = ch07.masked_accuracy.check(lambda logits, targets, pad_id: None)
    assert not result and "one number" in result.message


def test_masked_accuracy_checker_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    ch07.masked_accuracy.check(ch07._masked_accuracy_solution)
    assert torch.equal(torch.rand(3), before)


def test_exact_match_solution_passes():
    assert ch07.exact_match.check(ch07._exact_match_solution)


def test_exact_match_comparing_everything_fails():
    result = ch07.exact_match.check(lambda p, t, eos: (p == t).all(dim=1).float().mean().item())
    assert not result and "after <eos> is a match" in result.message
    _no_answer_given(result.message)


def test_exact_match_ignoring_eos_fails():
    def stops_before_eos(predicted, targets, eos_id):
        keep = (targets != eos_id) & (targets != 0)
        return ((predicted == targets) | ~keep).all(dim=1).float().mean().item()

    result = ch07.exact_match.check(stops_before_eos)
    assert not result and "goes on where it should write <eos> is a mismatch" in result.message


def test_exact_match_counting_batches_fails():
    def any_row(predicted, targets, eos_id):
        return float(ch07._exact_match_solution(predicted, targets, eos_id) > 0)

    result = ch07.exact_match.check(any_row)
    assert not result and "batch of four rows" in result.message


def test_best_output_solution_passes():
    assert ch07.best_output.check(ch07._best_output_solution)


def test_best_output_mistakes_fail_without_the_index():
    always_first = ch07.best_output.check(lambda log_probs, lengths, alpha: 0)
    assert not always_first and "length_penalty 1.0" in always_first.message
    assert "picks output 0" in always_first.message
    _no_answer_given(always_first.message)
    def mean_always(log_probs, lengths, alpha):
        return int(torch.tensor(log_probs).div(torch.tensor(lengths, dtype=torch.float)).argmax())

    mean_always = ch07.best_output.check(mean_always)
    assert not mean_always and "length_penalty 0.0" in mean_always.message and "picks output 2" in mean_always.message
    assert "shortest" not in mean_always.message  # the message must not answer the exercise's question
    not_an_index = ch07.best_output.check(lambda log_probs, lengths, alpha: -1.2)
    assert not not_an_index and "an index" in not_an_index.message


def test_hints_and_solutions_print(capsys):
    ch07.best_output.hint()
    assert "length_penalty" in capsys.readouterr().out
    ch07.best_output.solution()
    assert "length_penalty" in capsys.readouterr().out
