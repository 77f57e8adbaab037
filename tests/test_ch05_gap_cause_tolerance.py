"""Chapter 05's gap_cause accepts the share rounded to two decimals, and no longer a bare 1 on a run whose
share is 0.99."""
import torch

from stepbystep.exercises import ch05


def _losses(teacher_step):
    """Dropout's step 0.01 and teacher forcing's ``teacher_step`` the other way: a share of 0.01 / (0.01 + step)."""
    model, x = ch05._model(), ch05._squares(16, seed=3)
    teacher_forced = ch05._teacher_forced_loss_solution(model, x)
    return model, x, torch.full((20,), teacher_forced + 0.01), teacher_forced + teacher_step


def test_the_share_rounded_to_two_decimals_passes():
    losses = _losses(0.001)
    share = ch05._gap_cause_solution(*losses)
    assert ch05.gap_cause.check((round(share, 2), *losses))
    assert ch05.gap_cause.check((share - 0.005, *losses))


def test_a_share_off_by_more_than_rounding_fails(fails_with):
    losses = _losses(0.001)
    share = ch05._gap_cause_solution(*losses)
    fails_with(ch05.gap_cause, (share + 0.008, *losses), "is not dropout's share")


def test_a_bare_1_fails_on_a_share_of_0_99(fails_with):
    losses = _losses(0.0001)
    share = ch05._gap_cause_solution(*losses)
    assert 0.985 < share < 0.995
    fails_with(ch05.gap_cause, (1.0, *losses), "is not dropout's share")
