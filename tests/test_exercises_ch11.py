"""Chapter 11's exercises: the worked solutions pass, typical wrong answers get a message that says
what is wrong without giving the answer away."""
import torch

from stepbystep.exercises import ch11
from stepbystep.models import patchify


# ----------------------------------------------------------------------------- patches by hand
def test_patchify_solution_passes_and_matches_the_package():
    assert ch11.patchify.check(ch11.patchify._solution)
    images = torch.rand(2, 3, 8, 8)
    assert torch.equal(ch11.patchify._solution(images, 4), patchify(images, 4))


def test_patchify_package_function_passes():
    assert ch11.patchify.check(patchify)


def test_patchify_placeholder_is_caught(fails_with):
    fails_with(ch11.patchify, lambda images, p: images, "should be (N, n_patches, C·p·p)")


def test_patchify_column_major_patches_are_caught(fails_with):
    def columns_first(images, p):
        return patchify(images.transpose(2, 3), p).view(images.shape[0], -1, images.shape[1], p, p) \
            .transpose(-2, -1).flatten(2)  # the right patches, numbered column by column

    fails_with(ch11.patchify, columns_first, "not in the convolution's order")


def test_patchify_pixels_in_the_wrong_order_are_caught(fails_with):
    def channels_last(images, p):
        n, c = images.shape[:2]
        blocks = images.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 4, 5, 1)  # channel last
        return blocks.reshape(n, -1, c * p * p)

    fails_with(ch11.patchify, channels_last, "flattened in another order")


def test_patchify_forgetting_the_channel_permute_is_told_where_the_channel_goes(fails_with):
    def no_permute(images, p):  # unfold, then reshape without moving the channel next to the pixels
        blocks = images.unfold(2, p, p).unfold(3, p, p)  # (N, C, H/p, W/p, p, p)
        return blocks.reshape(images.shape[0], -1, images.shape[1] * p * p)
    fails_with(ch11.patchify, no_permute, "with C > 1, put the channel dimension next to the pixel dimensions")


def test_patchify_wrong_size_and_type_are_caught(fails_with):
    fails_with(ch11.patchify, lambda images, p: images[:, :, :p, :p].flatten(2), "cannot hold every pixel")
    fails_with(ch11.patchify, lambda images, p: None, "expected a tensor")
    fails_with(ch11.patchify, "patches", "expected a function")


def test_patchify_errors_are_reported_not_raised(fails_with):
    fails_with(ch11.patchify, lambda images, p: images.view(-1, 7), "your answer raised RuntimeError")


# ----------------------------------------------------------------------------- counting tokens
def test_token_count_solution_passes():
    assert ch11.token_count.check(ch11.token_count._solution)
    assert ch11.token_count._solution(12, 12, 4) == (10, 100) and ch11.token_count._solution(224, 224, 16)[0] == 197
    assert ch11.token_count._solution(224, 160, 16) == (141, 141 ** 2)


def test_token_count_forgetting_the_cls_token_is_caught(fails_with):
    message = fails_with(ch11.token_count, lambda h, w, p: ((h // p) * (w // p), ((h // p) * (w // p)) ** 2),
                         "besides the patches")
    assert "10" not in message  # the expected count is not given away


def test_token_count_square_only_is_caught(fails_with):
    fails_with(ch11.token_count, lambda h, w, p: ((h // p) ** 2 + 1, ((h // p) ** 2 + 1) ** 2), "as if the image were square")


def test_token_count_one_direction_is_caught(fails_with):
    fails_with(ch11.token_count, lambda h, w, p: (h // p + 1, (h // p + 1) ** 2), "two directions")


def test_token_count_attention_mistakes_are_caught(fails_with):
    def tokens(h, w, p):
        return (h // p) * (w // p) + 1
    fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p), (tokens(h, w, p) - 1) ** 2), "the CLS token too")
    fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p), tokens(h, w, p)), "for every key")
    fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p), tokens(h, w, p) * (tokens(h, w, p) + 1) // 2),
               "not causal")
    fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p), tokens(h, w, p) ** 2 + 1), "attention weights are not")
    # twice the count is a head count's multiple: tests/test_ch11_token_count_slips.py


def test_token_count_other_mistakes(fails_with):
    fails_with(ch11.token_count, lambda h, w, p: ((h // p) * (w // p) + 2, 0), "number of tokens is not right")
    fails_with(ch11.token_count, lambda h, w, p: ((h / p) * (w / p) + 1, 0), "two whole numbers")
    fails_with(ch11.token_count, lambda h, w, p: 0, "two whole numbers")
    assert ch11.token_count.check(lambda h, w, p: (torch.tensor((h // p) * (w // p) + 1),
                                                   torch.tensor(((h // p) * (w // p) + 1) ** 2)))


# ----------------------------------------------------------------------------- mean pooling
def test_mean_pooling_solution_passes():
    assert ch11.mean_pooling.check(ch11.mean_pooling._solution)
    states = torch.zeros(1, 3, 2)
    states[0, 0] = 100.0  # the CLS state is left out
    states[0, 1:] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert ch11.mean_pooling._solution(states).tolist() == [[2.0, 3.0]]


def test_mean_pooling_cls_pooling_is_caught(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, 0], "CLS pooling")


def test_mean_pooling_including_the_cls_token_is_caught(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states.mean(dim=1), "includes the CLS token")


def test_mean_pooling_wrong_axis_and_wrong_values_are_caught(fails_with):
    fails_with(ch11.mean_pooling, lambda states: states[:, 1:].mean(dim=2), "(N, d_model)")
    fails_with(ch11.mean_pooling, lambda states: states[:, 1:].sum(dim=1), "not the mean of the patch tokens")
    fails_with(ch11.mean_pooling, lambda states: states.tolist(), "expected a tensor")


def test_hints_and_solutions_print(capsys):
    for exercise in (ch11.patchify, ch11.token_count, ch11.mean_pooling):
        exercise.hint()
        exercise.solution()
    printed = capsys.readouterr().out
    assert "unfold" in printed and "def _token_count_solution" in printed and "states[:, 1:]" in printed


def test_token_count_dividing_the_pixels_by_the_patch_side_is_caught(fails_with):
    message = fails_with(ch11.token_count, lambda h, w, p: (h * w // p + 1, (h * w // p + 1) ** 2),
                         "how many pixels does one")
    assert "16" not in message  # p² is not given away
