"""Chapter 03's wide parameter count: leaving out only the output layer's bias is named, without the count;
the right count passes."""
from stepbystep.exercises import ch03


def wide_count(n_heads, d_model):
    return n_heads * 3 * (d_model * d_model + d_model) + n_heads * d_model * d_model + d_model


def test_leaving_out_the_output_layers_bias_is_named(fails_with):
    message = fails_with(ch03.wide_parameter_count, lambda h, d: wide_count(h, d) - d, "leaves out one layer's bias")
    assert "output layer" in message and "not the number of parameters" not in message


def test_the_right_count_passes():
    assert ch03.wide_parameter_count.check(wide_count)
