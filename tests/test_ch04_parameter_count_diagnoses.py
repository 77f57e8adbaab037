"""Chapter 04's exercise 1: the wrong counts a learner commonly makes get a message that names
what is wrong (and, where two slips give the same count, both), never the count itself."""
from stepbystep.exercises import ch04


def _count(attention_bias=True, norms_per_layer=2, width=None, second_bias="d_model", final_norm=True):
    """A count with the given slips; the defaults give the right one."""
    def count(n_layers, d_model, ff_units, norm_first):
        hidden = ff_units if width is None else width(d_model)
        attention = 4 * (d_model * d_model + (d_model if attention_bias else 0))
        feed_forward = d_model * hidden + hidden + hidden * d_model + (d_model if second_bias == "d_model" else hidden)
        per_layer = attention + feed_forward + norms_per_layer * 2 * d_model
        return n_layers * per_layer + (2 * d_model if norm_first and final_norm else 0)
    return count


def _message(answer):
    result = ch04.stack_parameter_count.check(answer)
    assert not result
    return repr(result)


def test_the_right_count_passes():
    assert ch04.stack_parameter_count.check(_count())


def test_missing_attention_biases_are_not_blamed_on_the_layer_norms_alone():
    message = _message(_count(attention_bias=False))
    assert "4 · d_model short in every layer" in message
    assert "biases of the attention's four projections" in message and "layer norms" in message


def test_a_feed_forward_width_of_four_times_d_model_is_named():
    message = _message(_count(width=lambda d_model: 4 * d_model))
    assert "4 · d_model (the paper's ratio) hidden units" in message and "ff_units argument" in message
    assert "layer norms" not in message


def test_a_feed_forward_width_of_d_model_is_named():
    assert "your feed-forward network has d_model hidden units" in _message(_count(width=lambda d_model: d_model))


def test_a_second_bias_as_long_as_the_hidden_layer_is_named():
    assert "second bias has the wrong length" in _message(_count(second_bias="hidden"))


def test_no_norms_and_no_attention_biases_is_named():
    assert "left out the layer norms and the attention projections' biases" in _message(
        _count(attention_bias=False, norms_per_layer=0, final_norm=False))


def test_the_messages_do_not_reveal_the_count():
    right = _count()
    for slip in (_count(attention_bias=False), _count(width=lambda d_model: 4 * d_model), _count(second_bias="x")):
        message = _message(slip)
        for case in ((3, 4, 10, True), (3, 6, 10, True), (2, 8, 16, False), (4, 6, 12, False)):
            assert str(right(*case)) not in message
