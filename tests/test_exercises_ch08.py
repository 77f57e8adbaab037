"""Chapter 08's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import torch

from stepbystep.exercises import ch08


def _fails_with(exercise, answer, words):
    result = exercise.check(answer)
    assert not result
    assert words in repr(result), repr(result)


# ----------------------------------------------------------------------------- new pattern
def test_new_pattern_solution_passes():
    assert ch08.new_pattern.check(ch08.new_pattern._solution())


def test_new_pattern_fixed_suffix_is_caught():
    _fails_with(ch08.new_pattern, "'the' d'rd of' MMMM, y", "the 1rd of May, 1979")


def test_new_pattern_unquoted_words_are_caught():
    _fails_with(ch08.new_pattern, "the d{ord} of MMMM, y", "single quotes")


def test_new_pattern_spacing_is_caught():
    _fails_with(ch08.new_pattern, "'the 'd{ord}' of 'MMMM,y", "check the spaces")


def test_new_pattern_needs_a_string():
    _fails_with(ch08.new_pattern, None, "a str")


# ----------------------------------------------------------------------------- century rule
def test_century_rule_solution_passes():
    assert ch08.century_rule.check(ch08.century_rule._solution)
    assert ch08.century_rule._solution(9) == 2009 and ch08.century_rule._solution(79) == 1979


def test_century_rule_off_by_one_boundary_is_caught():
    _fails_with(ch08.century_rule, lambda yy: (2000 if yy <= 50 else 1900) + yy, "the boundary")


def test_century_rule_reference_mistake_is_caught():
    """The reference material's model read "09" as 1990: reversed digits, another century."""
    _fails_with(ch08.century_rule, lambda yy: 1900 + yy, "full_year(0) should be 2000, got 1900")


def test_century_rule_needs_ints():
    _fails_with(ch08.century_rule, lambda yy: str(2000 + yy), "should be an int")


# ----------------------------------------------------------------------------- reading positions
def test_reading_positions_solution_passes():
    assert ch08.reading_positions.check(ch08.reading_positions._solution)


def test_reading_positions_tensor_answer_passes():
    assert ch08.reading_positions.check(lambda t: t.weights.mean(dim=0).argmax(dim=-1))


def test_reading_positions_one_head_is_caught():
    _fails_with(ch08.reading_positions, lambda t: t.weights[0].argmax(dim=-1).tolist(), "one head's choice")


def test_reading_positions_wrong_axis_is_caught():
    _fails_with(ch08.reading_positions, lambda t: t.weights.mean(dim=0).argmax(dim=0).tolist(), "the last dimension")


def test_reading_positions_placeholder_is_caught():
    _fails_with(ch08.reading_positions, lambda t: None, "list of ints")


def test_reading_positions_solution_on_a_hand_made_map():
    translation = ch08._translations()[0]
    weights = torch.zeros_like(translation.weights)  # (3, 11, 10)
    weights[:, :, 4] = 1.0
    hand_made = type(translation)(translation.text, translation.translation, translation.source_tokens,
                                  translation.output_tokens, weights, ())
    assert ch08.reading_positions._solution(hand_made) == [4] * 11
