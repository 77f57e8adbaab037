"""Chapter 08's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import torch

from stepbystep.exercises import ch08


# ----------------------------------------------------------------------------- new pattern
def test_new_pattern_solution_passes():
    assert ch08.new_pattern.check(ch08.new_pattern._solution())


def test_new_pattern_fixed_suffix_is_caught(fails_with):
    fails_with(ch08.new_pattern, "'the' d'rd of' MMMM, y", "the 1rd of May, 1979")
    fails_with(ch08.new_pattern, "'the' d'rd of' MMMM, y", "suffix is wrong")


def test_new_pattern_messages_do_not_give_the_pattern_away(fails_with):
    for answer in ("d MMMM y", "'the' d'rd of' MMMM, y", "'the 'd{ord}' of 'MMMM,y", "'The' d{ord} 'of' MMMM, y"):
        message = repr(ch08.new_pattern.check(answer))
        assert "{ord}" not in message and "MMMM" not in message and "was wanted" not in message
    fails_with(ch08.new_pattern, "'The' d{ord} 'of' MMMM, y", "capitals")


def test_new_pattern_unquoted_words_are_caught(fails_with):
    fails_with(ch08.new_pattern, "the d{ord} of MMMM, y", "single quotes")


def test_new_pattern_spacing_is_caught(fails_with):
    fails_with(ch08.new_pattern, "'the 'd{ord}' of 'MMMM,y", "check the spaces")


def test_new_pattern_needs_a_string(fails_with):
    fails_with(ch08.new_pattern, None, "a str")


# ----------------------------------------------------------------------------- reading positions
def test_reading_positions_solution_passes():
    assert ch08.reading_positions.check(ch08.reading_positions._solution)


def test_reading_positions_tensor_answer_passes():
    assert ch08.reading_positions.check(lambda t: t.weights.mean(dim=0).argmax(dim=-1))


def test_reading_positions_one_head_is_caught(fails_with):
    fails_with(ch08.reading_positions, lambda t: t.weights[0].argmax(dim=-1).tolist(), "one head's choice")


def test_reading_positions_wrong_axis_is_caught(fails_with):
    fails_with(ch08.reading_positions, lambda t: t.weights.mean(dim=0).argmax(dim=0).tolist(), "the last dimension")


def test_reading_positions_wrong_answer_does_not_show_the_positions():
    translation = ch08._translations()[0]
    wanted = ch08.reading_positions._solution(translation)
    result = ch08.reading_positions.check(lambda t: [0] * t.weights.shape[1])
    assert not result and "not the most-read source position" in repr(result)
    assert str(wanted) not in repr(result)


def test_reading_positions_placeholder_is_caught(fails_with):
    fails_with(ch08.reading_positions, lambda t: None, "list of ints")


def test_reading_positions_solution_on_a_hand_made_map():
    translation = ch08._translations()[0]
    weights = torch.zeros_like(translation.weights)  # (3, 11, 10)
    weights[:, :, 4] = 1.0
    hand_made = type(translation)(translation.text, translation.translation, translation.source_tokens,
                                  translation.output_tokens, weights, ())
    assert ch08.reading_positions._solution(hand_made) == [4] * 11


# ----------------------------------------------------------------------------- confidence
def _by_hand(shift=True, stop_at_eos=True, exponentiate=True):
    def confidence(model, source, generated, sos_id, eos_id):
        start = torch.full_like(generated[:, :1], sos_id)
        target_in = torch.cat([start, generated[:, :-1]], dim=1) if shift else generated
        with torch.no_grad():
            log_probs = model(source, target_in).log_softmax(-1)
        token = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)
        if stop_at_eos:
            is_eos = (generated == eos_id).long()
            token = token * ((is_eos.cumsum(1) - is_eos) == 0)
        total = token.sum(1)
        return total.exp() if exponentiate else total
    return confidence


def test_confidence_solution_passes():
    assert ch08.confidence.check(ch08.confidence._solution)
    assert ch08.confidence.check(_by_hand())


def test_confidence_matches_sequence_log_probs_on_a_case():
    from stepbystep.models import sequence_log_probs

    model, source, generated = ch08._confidence_case()
    expected = sequence_log_probs(model, source, generated, 1, 2).exp()
    torch.testing.assert_close(ch08.confidence._solution(model, source, generated, 1, 2), expected)


def test_confidence_mistakes_are_caught(fails_with):
    fails_with(ch08.confidence, _by_hand(exponentiate=False), "log-probabilities")
    fails_with(ch08.confidence, _by_hand(stop_at_eos=False), "stop after the first <eos>")
    unshifted = fails_with(ch08.confidence, _by_hand(shift=False), "read the output itself")
    assert "shifted" not in unshifted and "<sos>" not in unshifted  # a diagnosis, not the hint
    fails_with(ch08.confidence, ch08._before_eos, "include that token's probability")
    fails_with(ch08.confidence, lambda m, s, g, sos, eos: torch.zeros(len(g)), "every output gets probability 0")
    other = fails_with(ch08.confidence, lambda m, s, g, sos, eos: ch08._confidence_solution(m, s, g, sos, eos) * 0.5,
                       "differ from the model's")
    assert "read the output itself" not in other
    constant = fails_with(ch08.confidence, lambda m, s, g, sos, eos: torch.ones(len(g)), "not the model's")
    assert "same probability" in constant and "shifted" not in constant
    fails_with(ch08.confidence, lambda m, s, g, sos, eos: torch.ones(3), "one probability per output row")
    for mean in (0, 1):  # the arithmetic and the geometric mean of the tokens' probabilities
        average = fails_with(ch08.confidence, lambda m, s, g, sos, eos, i=mean: ch08._token_means(m, s, g, sos, eos)[i],
                             "the product of its tokens' probabilities")
        assert "differ from the model's" not in average
    fails_with(ch08.confidence, None, "expected a function")


def test_confidence_checker_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    before = torch.rand(3)
    torch.manual_seed(5)
    ch08.confidence.check(ch08.confidence._solution)
    assert torch.equal(torch.rand(3), before)
