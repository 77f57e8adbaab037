"""Chapter 05's checkers name more wrong answers: a teacher-forced loss scored by another error
(L1, the root of the MSE), and a gap share divided by the wrong thing; a share that is simply
wrong gets no hint of which way the answer lies."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch05


def _teacher_forced(score):
    """A right teacher-forced pass, dropout off and the mode kept, scored by ``score``."""
    def answer(model, full):
        was_training = model.training
        model.eval()
        with torch.no_grad():
            model.encode(full[:, : model.input_len])
            predicted = model.decode(full[:, model.input_len - 1 : -1], target_mask=model.trg_masks)
            loss = score(predicted, full[:, model.input_len :])
        model.train(was_training)
        return loss.item()
    return answer


@pytest.mark.parametrize("score, words", [
    (F.l1_loss, "the mean absolute error (an L1 loss)"),
    (lambda predicted, target: F.mse_loss(predicted, target).sqrt(), "the square root of their mean squared error"),
])
def test_teacher_forced_loss_scored_by_another_error_is_named(fails_with, score, words):
    message = fails_with(ch05.teacher_forced_loss, _teacher_forced(score), words)
    assert "not the loss of teacher-forced predictions" not in message


def test_teacher_forced_loss_scored_by_the_mse_still_passes():
    assert ch05.teacher_forced_loss.check(_teacher_forced(F.mse_loss))


def _gap_losses():
    """Dropout's step is 0.01 and teacher forcing's 0.004 the other way: the share is 0.01 / 0.014."""
    model, x = ch05._model(), ch05._squares(16, seed=3)
    teacher_forced = ch05._teacher_forced_loss_solution(model, x)
    return teacher_forced, (model, x, torch.full((20,), teacher_forced + 0.01), teacher_forced + 0.004)


def test_gap_share_over_the_other_step_is_named(fails_with):
    _, losses = _gap_losses()
    fails_with(ch05.gap_cause, (0.01 / 0.004, *losses), "divided dropout's step by teacher forcing's step")


def test_gap_share_over_the_loss_is_named(fails_with):
    teacher_forced, losses = _gap_losses()
    fails_with(ch05.gap_cause, (0.01 / (teacher_forced + 0.01), *losses), "by the training-mode loss itself")


@pytest.mark.parametrize("share", [0.2, 0.45, 0.9, 1.0])
def test_a_wrong_gap_share_does_not_say_which_way(fails_with, share):
    _, losses = _gap_losses()
    message = fails_with(ch05.gap_cause, (share, *losses), "is not dropout's share for these three losses")
    assert "high" not in message and "low" not in message and "0.71" not in message
