"""CPU bfloat16 autocast's rules, as chapter 16 states them: matrix products lowered to bfloat16, losses
raised to float32, every other operation following its inputs."""
import torch

from stepbystep.experiments.mixed_precision import autocast_rules


def test_autocast_lowers_products_raises_losses_and_lets_the_rest_follow_their_inputs():
    rules = autocast_rules()
    assert rules["linear"] == torch.bfloat16  # float32 inputs, a bfloat16 result
    assert rules["cross_entropy"] == torch.float32 and rules["cross_entropy outside"] == torch.bfloat16
    assert rules["softmax of bfloat16"] == torch.bfloat16 and rules["softmax of float32"] == torch.float32
    assert rules["bfloat16 + float32"] == torch.float32
    assert list(rules) == ["cross_entropy outside", "linear", "cross_entropy", "softmax of bfloat16",
                           "softmax of float32", "bfloat16 + float32"]
