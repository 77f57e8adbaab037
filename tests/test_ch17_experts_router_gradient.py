"""Why chapter 17's mixture weighs its one expert by the router's probability (Switch Transformer's
form) and does not renormalise it: a renormalised top-1 weight is always 1, and the task's loss then
gives the router no gradient; only the balancing loss would train it."""
import torch

from stepbystep.experiments.after_llama.experts import mixed_batch, moe_config
from stepbystep.models.gpt.model import completion_loss
from stepbystep.models.mixture_of_experts import MixtureOfExperts


def _router_gradients(config):
    torch.manual_seed(0)
    model = config.build()
    ids, targets, _ = mixed_batch(16, torch.Generator().manual_seed(0))
    completion_loss(model(ids), targets).backward()
    return [m.router.weight.grad.abs().max().item() for m in model.modules() if isinstance(m, MixtureOfExperts)]


def test_the_study_s_router_learns_from_the_task():
    config = moe_config()
    assert config.experts_per_token == 1 and config.norm_topk_prob is False
    assert min(_router_gradients(config)) > 1e-4


def test_a_renormalised_top_1_router_gets_no_gradient_from_the_task():
    assert max(_router_gradients(moe_config().replace(norm_topk_prob=True))) < 1e-8  # rounding only
