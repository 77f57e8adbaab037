"""Chapter 05's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch05
from stepbystep.models import build_transformer


# ----------------------------------------------------------------------------- teacher-forced loss
def test_teacher_forced_loss_solution_passes_and_keeps_the_mode():
    assert ch05.teacher_forced_loss.check(ch05.teacher_forced_loss._solution)
    model = build_transformer(seed=0).train()
    full = torch.randn(4, 4, 2)
    first = ch05.teacher_forced_loss._solution(model, full)
    assert model.training and first == ch05.teacher_forced_loss._solution(model, full)


def test_teacher_forced_loss_solution_matches_the_train_mode_forward_without_dropout():
    model = build_transformer(dropout=0.0, seed=0).train()
    full = torch.randn(4, 4, 2)
    with torch.no_grad():
        train_mode = F.mse_loss(model(full), full[:, 2:]).item()  # teacher forcing, nothing dropped
    assert abs(ch05.teacher_forced_loss._solution(model, full) - train_mode) < 1e-6


def test_teacher_forced_loss_with_dropout_on_is_caught():
    def dropout_on(model, full):
        with torch.no_grad():
            return F.mse_loss(model.train()(full), full[:, 2:]).item()

    result = ch05.teacher_forced_loss.check(dropout_on)
    assert not result and "dropout is still on" in repr(result)


def test_teacher_forced_loss_greedy_eval_forward_is_caught():
    def greedy(model, full):
        was_training = model.training
        model.eval()
        loss = F.mse_loss(model(full[:, :2]), full[:, 2:]).item()
        model.train(was_training)
        return loss

    result = ch05.teacher_forced_loss.check(greedy)
    assert not result and "that is the greedy loss" in repr(result)


def _eval_decode(shift, masked):
    def answer(model, full):
        was_training = model.training
        model.eval()
        n = model.input_len
        model.encode(full[:, :n])
        inputs = full[:, n - 1 : -1] if shift else full[:, n:]
        predicted = model.decode(inputs, target_mask=model.trg_masks if masked else None)
        model.train(was_training)
        return F.mse_loss(predicted, full[:, n:])  # a one-element tensor is accepted too
    return answer


def test_teacher_forced_loss_accepts_a_tensor_and_catches_a_missing_mask_or_shift():
    assert ch05.teacher_forced_loss.check(_eval_decode(shift=True, masked=True))
    result = ch05.teacher_forced_loss.check(_eval_decode(shift=True, masked=False))
    assert not result and "without the causal mask" in repr(result)
    result = ch05.teacher_forced_loss.check(_eval_decode(shift=False, masked=True))
    assert not result and "shifted right by one" in repr(result)


def test_teacher_forced_loss_must_restore_the_mode():
    def stays_in_eval(model, full):
        return ch05.teacher_forced_loss._solution(model.eval(), full)

    result = ch05.teacher_forced_loss.check(stays_in_eval)
    assert not result and "training mode and your function left it in the other mode" in repr(result)


def test_teacher_forced_loss_placeholder_and_global_rng():
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    result = ch05.teacher_forced_loss.check(lambda model, full: None)
    assert not result and "should return the loss as a float, got NoneType" in repr(result)
    ch05.teacher_forced_loss.check(ch05.teacher_forced_loss._solution)
    assert torch.equal(torch.rand(2), expected)  # checking draws nothing from the global stream


# ----------------------------------------------------------------------------- nearest-corner baseline
def test_corner_baseline_solution_passes_and_gives_exact_corners():
    assert ch05.corner_baseline.check(ch05.corner_baseline._solution)
    source = torch.tensor([[[-1.05, -0.93], [-0.98, 1.1]]])  # bottom-left, then top-left
    expected = torch.tensor([[[1.0, 1.0], [1.0, -1.0]]])  # top-right, then bottom-right
    assert torch.equal(ch05.corner_baseline._solution(source), expected)


def test_corner_baseline_typical_mistakes_are_explained():
    cases = {
        "mirrored noisy points": lambda s: -s,
        "the exact corners of the source itself": torch.sign,
        "the right corners in the wrong order": lambda s: -torch.sign(s).flip(1),
        "should be (32, 2, 2), got (32, 2)": lambda s: -torch.sign(s)[:, 0],
        "should return a tensor": lambda s: None,
    }
    for message, answer in cases.items():
        result = ch05.corner_baseline.check(answer)
        assert not result and message in repr(result), message


def test_corner_baseline_accepts_numpy():
    assert ch05.corner_baseline.check(lambda s: -torch.sign(s).numpy())


# ----------------------------------------------------------------------------- greedy decoding
def test_greedy_decode_solution_passes():
    assert ch05.greedy_decode.check(ch05.greedy_decode._solution)


def test_greedy_decode_without_feedback_says_which_corner():
    def no_feedback(model, source):
        model.encode(source)
        first = model.decode(source[:, -1:], target_mask=model.trg_masks[:, :1, :1])  # (N, 1, F)
        second = model.decode(first, target_mask=model.trg_masks[:, :1, :1])  # forgets x_1
        return torch.cat([first, second], dim=1)

    result = ch05.greedy_decode.check(no_feedback)
    assert not result and "the predicted corners before x̂_3 match model.predict's, x̂_3 differs" in repr(result)


def test_greedy_decode_wrong_start_and_shape():
    def starts_from_zeros(model, source):
        return ch05.greedy_decode._solution(model, torch.cat([source[:, :1], torch.zeros_like(source[:, 1:])], 1))

    result = ch05.greedy_decode.check(starts_from_zeros)
    assert not result and "the first predicted corner (x̂_2) differs" in repr(result)
    result = ch05.greedy_decode.check(lambda model, source: source[:, :1])
    assert not result and "should be (N, target_len, n_features) = (8, 2, 2), got (8, 1, 2)" in repr(result)


def test_solutions_print_their_source(capsys):
    ch05.greedy_decode.solution()
    assert "model.encode(source)" in capsys.readouterr().out


# ----------------------------------------------------------------------------- what a failed check reveals
def test_a_wrong_loss_is_reported_without_the_expected_value():
    def off_by_a_bit(model, full):
        return ch05.teacher_forced_loss._solution(model, full) + 0.01

    result = ch05.teacher_forced_loss.check(off_by_a_bit)
    model = ch05._model()
    expected = ch05.teacher_forced_loss._solution(model, ch05._squares(16, seed=3))
    assert not result and "not the loss of teacher-forced predictions" in repr(result)
    assert f"{expected:.6f}" not in repr(result) and f"{expected + 0.01:.6f}" in repr(result)
    assert "Stuck? .hint() gives a nudge, .solution() a worked answer." in repr(result)


def test_a_wrong_corner_baseline_shows_the_learners_prediction_not_the_answer():
    source = ch05._squares(32, seed=5)[:, :2]
    answer = ch05.corner_baseline._solution(source)
    result = ch05.corner_baseline.check(lambda s: torch.zeros_like(s))  # never a corner
    assert not result and "not made of exact corners of the square" in repr(result)
    assert str(answer[0].tolist()) not in repr(result)
    # exact corners, but the wrong ones: the second source corner's opposite twice
    result = ch05.corner_baseline.check(lambda s: -torch.sign(s[:, 1:]).expand(-1, 2, -1))
    assert not result and "made of exact corners, but not the two that follow the source" in repr(result)


def test_the_placeholders_messages_do_not_give_the_answer_away():
    """The committed notebook runs the checkers on these placeholders: no code of the answer shows."""
    placeholders = {
        ch05.teacher_forced_loss: lambda model, full: None,
        ch05.corner_baseline: lambda source: -source,
        ch05.greedy_decode: lambda model, source: source,
    }
    for exercise, placeholder in placeholders.items():
        message = repr(exercise.check(placeholder))
        for giveaway in ("torch.sign", "trg_masks", "model.decode", "model.encode", "source[:, -1:]", "-1 or 1"):
            assert giveaway not in message, (exercise.title, giveaway)


def test_hints_are_printed_on_request(capsys):
    ch05.corner_baseline.hint()
    ch05.teacher_forced_loss.hint()
    ch05.greedy_decode.hint()
    out = capsys.readouterr().out
    assert "-1 or 1" in out and "the mode you found the model in" in out
    # the greedy hint names where to start, not the loop: no slice, no append
    assert "source[:, -1:]" not in out and "append" not in out
    # the teacher-forcing hint is a nudge, not the recipe: no slices, no mask, no restoring call
    assert "full[:, input_len-1:-1]" not in out and "trg_masks" not in out and "model.train(was_training)" not in out
    assert "the mask matters at every step" in out  # why decoding without the mask drifts at a later corner


def test_teacher_forced_loss_summed_instead_of_averaged_is_named(fails_with):
    def summed(model, full):
        was_training = model.training
        model.eval()
        with torch.no_grad():
            model.encode(full[:, :2])
            predicted = model.decode(full[:, 1:3], target_mask=model.trg_masks)
            loss = torch.nn.functional.mse_loss(predicted, full[:, 2:], reduction="sum")
        model.train(was_training)
        return loss.item()
    fails_with(ch05.teacher_forced_loss, summed, "the sum of the squared errors, not their mean")


def _gap_losses():
    """An untrained model, a batch and made-up training- and eval-mode losses around its
    teacher-forced loss: dropout's step is 0.01 and teacher forcing's 0.001 the other way, so
    dropout's share is 0.01 / 0.011, about 0.91 (and its ratio to the whole gap 0.01 / 0.009)."""
    model, x = ch05._model(), ch05._squares(16, seed=3)
    teacher_forced = ch05._teacher_forced_loss_solution(model, x)
    return model, x, torch.full((20,), teacher_forced + 0.01), teacher_forced + 0.001


@pytest.mark.parametrize("share, words", [
    (1.0, "is not dropout's share for these three losses"),  # the unmeasured guess
    (0.5, "is not dropout's share for these three losses"),
    (0.01 / 0.009, "divided dropout's step by the whole gap"),  # the ratio, above 1 here
    (0.001 / 0.011, "the other step's share"),
    (3.0, "a share lies between 0 and 1"),
    (-0.2, "a share lies between 0 and 1"),
    ("dropout", "expected a number"),
    (None, "expected a number"),
])
def test_gap_cause_wrong_answers(fails_with, share, words):
    message = fails_with(ch05.gap_cause, (share, *_gap_losses()), words)
    assert "0.9" not in message


def test_gap_cause_a_bare_number_asks_for_the_losses(fails_with):
    fails_with(ch05.gap_cause, 1.0, "call ch05.gap_cause.check((my_gap_share, model, x, train_mode, eval_mode))")


def test_gap_cause_accepts_the_measured_share():
    model, x, train_mode, eval_mode = _gap_losses()
    share = ch05._gap_cause_solution(model, x, train_mode, eval_mode)
    assert abs(share - 0.01 / 0.011) < 1e-4  # float32 train_mode
    assert 0 <= share <= 1
    assert ch05.gap_cause.check((share, model, x, train_mode, eval_mode))
    assert ch05.gap_cause.check((torch.tensor(share + 0.005), model, x, train_mode, eval_mode))
    assert model.training  # the checker leaves the model's mode alone


def _decode_without_encode(model, full):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        predicted = model.decode(full[:, 1:3], target_mask=model.trg_masks)  # reads whatever was encoded last
        loss = F.mse_loss(predicted, full[:, 2:]).item()
    model.train(was_training)
    return loss


def test_teacher_forced_loss_without_encode_is_caught(fails_with):
    fails_with(ch05.teacher_forced_loss, _decode_without_encode, "the states of the batch encoded before")


def test_teacher_forced_loss_with_hard_coded_lengths_is_caught(fails_with):
    def two_plus_two(model, full):
        was_training = model.training
        model.eval()
        with torch.no_grad():
            model.encode(full[:, :2])  # the chapter's lengths, not the model's
            predicted = model.decode(full[:, 1:3], target_mask=model.trg_masks)
            loss = F.mse_loss(predicted, full[:, 2:]).item()
        model.train(was_training)
        return loss
    fails_with(ch05.teacher_forced_loss, two_plus_two, "take the lengths from the model")


def test_greedy_decode_without_encode_is_caught(fails_with):
    def no_encode(model, source):
        inputs = source[:, -1:]
        for i in range(model.target_len):
            out = model.decode(inputs, target_mask=model.trg_masks[:, : i + 1, : i + 1])
            inputs = torch.cat([inputs, out[:, -1:]], dim=1)
        return inputs[:, 1:]
    fails_with(ch05.greedy_decode, no_encode, "the states of the batch encoded before")


@pytest.mark.parametrize("shortcut", [
    lambda model, source: model.predict(source),
    lambda model, source: model(source),
    lambda model, source: (model.encode(source), model._greedy(source))[1],
])
def test_greedy_decode_through_the_models_own_decoding_is_refused(fails_with, shortcut):
    fails_with(ch05.greedy_decode, shortcut, "decodes for you")


@pytest.mark.parametrize("answer, words", [
    (0.02, "counts two noises"),
    (0.0, "too low"),
    (0.1, "too high"),
    ("0.01", "expected a number"),
])
def test_corner_baseline_mse_wrong_predictions(fails_with, answer, words):
    message = fails_with(ch05.corner_baseline_mse, answer, words)
    assert "0.01" not in message


def test_corner_baseline_mse_accepts_the_noise_variance():
    assert ch05.corner_baseline_mse.check(0.01) and ch05.corner_baseline_mse.check(torch.tensor(0.0102))


def test_gap_cause_share_stays_between_0_and_1_whichever_way_the_second_step_goes():
    model, x = ch05._model(), ch05._squares(16, seed=3)
    teacher_forced = ch05._teacher_forced_loss_solution(model, x)
    for eval_offset in (-0.02, -0.001, 0.0, 0.001, 0.009, 0.05):  # eval-mode loss below, at and above it
        share = ch05._gap_cause_solution(model, x, torch.full((20,), teacher_forced + 0.01), teacher_forced + eval_offset)
        assert 0 <= share <= 1
        assert share == pytest.approx(0.01 / (0.01 + abs(eval_offset)), rel=1e-3)
