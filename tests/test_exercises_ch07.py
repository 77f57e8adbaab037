"""Chapter 07's exercises: the solutions pass, typical mistakes fail with a useful message."""
import torch

from stepbystep.exercises import ch07


def test_masked_accuracy_solution_passes():
    assert ch07.masked_accuracy.check(ch07._masked_accuracy_solution)


def test_masked_accuracy_counting_pads_fails():
    result = ch07.masked_accuracy.check(lambda logits, targets, pad_id: (logits.argmax(-1) == targets).float().mean())
    assert not result
    assert "padded positions count" in result.message and "Hint" in result.message


def test_masked_accuracy_wrong_type():
    result = ch07.masked_accuracy.check(lambda logits, targets, pad_id: None)
    assert not result and "one number" in result.message


def test_exact_match_solution_passes():
    assert ch07.exact_match.check(ch07._exact_match_solution)


def test_exact_match_comparing_everything_fails():
    result = ch07.exact_match.check(lambda p, t, eos: (p == t).all(dim=1).float().mean().item())
    assert not result and "after <eos>" in result.message


def test_exact_match_ignoring_eos_fails():
    def stops_before_eos(predicted, targets, eos_id):
        keep = (targets != eos_id) & (targets != 0)
        return ((predicted == targets) | ~keep).all(dim=1).float().mean().item()

    result = ch07.exact_match.check(stops_before_eos)
    assert not result and "goes on where it should write <eos>" in result.message


def test_best_output_solution_passes():
    assert ch07.best_output.check(ch07._best_output_solution)


def test_best_output_mistakes_fail():
    always_first = ch07.best_output.check(lambda log_probs, lengths, alpha: 0)
    assert not always_first and "length_penalty 1.0" in always_first.message
    mean_always = ch07.best_output.check(
        lambda log_probs, lengths, alpha: int(torch.tensor(log_probs).div(torch.tensor(lengths, dtype=torch.float)).argmax()))
    assert not mean_always and "length_penalty 0.0" in mean_always.message
    not_an_index = ch07.best_output.check(lambda log_probs, lengths, alpha: -1.2)
    assert not not_an_index and "an index" in not_an_index.message


def test_solutions_print(capsys):
    ch07.best_output.solution()
    assert "length_penalty" in capsys.readouterr().out
