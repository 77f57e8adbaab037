"""Chapter 10's exercises: a correct answer that turns a vector backwards is not a crash, and three
common slips get their own message."""
import torch

from stepbystep.exercises import ch10


def test_offset_score_turning_the_query_backwards_says_to_turn_the_key(fails_with):
    def query_backwards(q, k, offset, rotary):
        return rotary(q.unsqueeze(0), torch.tensor([-offset])).squeeze(0) @ k  # right maths, negative position
    message = fails_with(ch10.offset_score, query_backwards, "positions >= 0")
    assert "raised" not in message and "forward" in message


def test_offset_score_divided_by_sqrt_d_is_caught(fails_with):
    def scaled(q, k, offset, rotary):
        return ch10.offset_score._solution(q, k, offset, rotary) / q.shape[-1] ** 0.5
    fails_with(ch10.offset_score, scaled, "√d")


def test_offset_score_other_errors_still_surface(fails_with):
    def broken(q, k, offset, rotary):
        raise ValueError("something else")
    fails_with(ch10.offset_score, broken, "raised ValueError: something else")


def test_alibi_mask_hiding_the_diagonal_is_caught(fails_with):
    def diagonal_too(n_heads, length):
        mask = ch10.alibi_mask._solution(n_heads, length)
        return mask.masked_fill(torch.eye(length, dtype=torch.bool), float("-inf"))
    fails_with(ch10.alibi_mask, diagonal_too, "read itself")
