"""Chapter 07's exercises: the solutions pass, typical mistakes fail with a useful message that
does not give the answer away (no expected value, no index)."""
import pytest
import torch

from stepbystep.exercises import ch07
from stepbystep.models import beam_search


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
    def first_batch_only(logits, targets, pad_id):  # right on the first batch, by luck
        return 4 / 6

    result = ch07.masked_accuracy.check(first_batch_only)
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


def test_beam_step_solution_passes():
    assert ch07.beam_step.check(ch07._beam_step_solution)


def test_beam_step_solution_is_the_step_of_beam_search():
    """Run the exercise's step as a whole beam search on a fixed table of next-token log-probs;
    it keeps what the package's beam_search keeps."""
    torch.manual_seed(0)
    table = torch.log_softmax(torch.randn(6, 5), dim=-1)  # (6, 5): the next token's log-probs after token t
    table[:, 0] = -30.0  # <pad> is never a live choice

    class Lookup(torch.nn.Module):
        max_len = 8

        def encode(self, source):
            return torch.zeros(len(source), 1, 1)

        def source_mask(self, source):
            return None

        def decode(self, target_in, memory, source_mask=None, cache=None):
            return table[target_in.clamp(max=5)]  # (N, L, 5): depends on the previous token only

    model = Lookup()
    expected = ch07._beam_step_solution  # the exercise's step, run by hand below
    scores, finished = torch.tensor([0.0, float("-inf")]), torch.tensor([False, False])
    sequences = [[1], [1]]
    for _ in range(4):
        log_probs = torch.stack([table[seq[-1]] for seq in sequences])  # (2, 5)
        scores, beams, tokens = expected(scores, finished, log_probs, 2)
        sequences = [sequences[b] + [t] for b, t in zip(beams.tolist(), tokens.tolist())]
        finished = finished[beams] | (tokens == 2)
    best = sequences[int(scores.argmax())][1:]
    package = beam_search(model, torch.zeros(1, 1, dtype=torch.long), 1, 2, max_new_tokens=4, beam_width=2,
                          use_cache=False)
    assert package[0].tolist()[:len(best)] == best


@pytest.mark.parametrize("mistake, words", [
    (ch07._per_beam_best, "each beam kept its own best token"),
    (ch07._new_token_only, "new token's log-probability alone"),
    (ch07._finished_ignored, "finished beam was extended"),
    (lambda scores, finished, log_probs, width: (scores, torch.arange(2), torch.zeros(2)), "does not keep the 2 best"),
    (lambda scores, finished, log_probs, width: scores, "three things"),
])
def test_beam_step_mistakes_fail_without_the_answer(fails_with, mistake, words):
    message = fails_with(ch07.beam_step, mistake, words)
    assert "-1.179" not in message and "-1.447" not in message  # no kept score is given away


def test_hints_and_solutions_print(capsys):
    ch07.beam_step.hint()
    hint = capsys.readouterr().out
    assert "candidate" in hint and "topk" not in hint  # a nudge; the recipe is in the solution
    ch07.beam_step.solution()
    assert "topk" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, words", [
    (lambda logits, targets, pad_id: ch07._masked_accuracy_solution(logits, targets, 0), "pad id is 3"),
    (ch07._masked_by_prediction, "known from the targets"),
    (ch07._all_positions, "padded positions count"),
])
def test_masked_accuracy_named_mistakes_fail_without_the_answer(fails_with, mistake, words):
    message = fails_with(ch07.masked_accuracy, mistake, words)
    _no_answer_given(message)


def test_masked_accuracy_by_prediction_is_not_called_counting_pads():
    result = ch07.masked_accuracy.check(ch07._masked_by_prediction)
    assert not result and "padded positions count" not in result.message


@pytest.mark.parametrize("mistake, words", [
    (ch07._new_token_score, "must include the beam's score"),
    (ch07._beam_token_swapped, "beam index and the token are swapped"),
    (ch07._index_by_width, "holds V tokens"),
    (ch07._finished_pays_pad, "goes on at no cost"),
    (ch07._finished_dropped, "a finished beam left the beam"),
    (lambda scores, finished, log_probs, width: ch07._beam_step_solution(scores, finished, log_probs, 2),
     "with beam_width 3 your step keeps 2 candidates"),
])
def test_beam_step_named_slips_fail(fails_with, mistake, words):
    message = fails_with(ch07.beam_step, mistake, words)
    assert "-1.193" not in message and "-1.179" not in message


def test_beam_step_dropping_finished_is_not_called_paying_pad():
    result = ch07.beam_step.check(ch07._finished_dropped)
    assert not result and "log-probability of <pad>" not in result.message
    result = ch07.beam_step.check(ch07._finished_pays_pad)
    assert not result and "left the beam" not in result.message


@pytest.mark.parametrize("mistake, words", [
    (lambda predicted, targets, eos_id: ch07._exact_match_solution(predicted, targets, 2), "does not use eos_id"),
    (lambda predicted, targets, eos_id: ((predicted == targets) | (targets == 0)).all(1).float().mean().item(),
     "what follows the target's <eos> was compared"),
])
def test_exact_match_named_slips_fail(fails_with, mistake, words):
    message = fails_with(ch07.exact_match, mistake, words)
    assert "100%" not in message and "0%" not in message  # the named slip, not the case's verdict
