"""Chapter 17's exercises: the worked solutions pass, typical wrong answers get a message that
says what is wrong without giving the answer away."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch17
from stepbystep.models import window_mask


# ----------------------------------------------------------------------------- a latent cache's size
def test_latent_cache_solution_passes_and_equals_latent_cache_bytes():
    from stepbystep.models import latent_cache_bytes
    right = latent_cache_bytes(40, 384, 32, 32768, batch_size=4, dtype=torch.bfloat16) / 2 ** 30
    assert ch17.latent_cache._solution() == right
    assert ch17.latent_cache.check(right)


def test_latent_cache_slips_are_named(fails_with):
    right = ch17.latent_cache._solution()
    fails_with(ch17.latent_cache, 2 * right, "keys and the values together")
    fails_with(ch17.latent_cache, right * 384 / 416, "something else each layer caches")
    fails_with(ch17.latent_cache, right * 32 / 416, "only the rotated key")
    fails_with(ch17.latent_cache, right * 64, "multiplied by the heads")
    fails_with(ch17.latent_cache, right / 4, "one sequence")
    fails_with(ch17.latent_cache, right * 2 ** 30 / 1e9, "GB")
    fails_with(ch17.latent_cache, right * 1024, "MiB")
    fails_with(ch17.latent_cache, 3.0, "not the cache's size")
    fails_with(ch17.latent_cache, "four", "expected one number")
    assert f"{right:g}" not in repr(ch17.latent_cache.check(2 * right))


# ----------------------------------------------------------------------------- top-k routing
def test_route_solution_passes_in_any_order_of_the_k():
    assert ch17.route.check(ch17.route._solution)

    def reversed_order(logits, k):
        weights, experts = ch17.route._solution(logits, k)
        return weights.flip(-1), experts.flip(-1)
    assert ch17.route.check(reversed_order)

    def softmax_of_the_top_logits(logits, k):  # the same weights, computed the other way round
        top, experts = logits.topk(k, dim=-1)
        return F.softmax(top, dim=-1), experts
    assert ch17.route.check(softmax_of_the_top_logits)


def test_route_slips_are_named(fails_with):
    def not_renormalised(logits, k):
        return F.softmax(logits, dim=-1).topk(k, dim=-1)
    fails_with(ch17.route, lambda l, k: tuple(not_renormalised(l, k)), "sum to less than 1")
    fails_with(ch17.route, lambda l, k: tuple(l.topk(k, dim=-1)), "raw scores")

    def least_liked(logits, k):
        weights, experts = F.softmax(logits, dim=-1).topk(k, dim=-1, largest=False)
        return weights / weights.sum(-1, keepdim=True), experts
    fails_with(ch17.route, least_liked, "likes least")

    def over_tokens(logits, k):
        experts = logits.topk(k, dim=-1).indices
        return F.softmax(logits, dim=0).gather(1, experts), experts
    fails_with(ch17.route, over_tokens, "over the tokens")

    def uniform(logits, k):
        experts = logits.topk(k, dim=-1).indices
        return torch.full(experts.shape, 1 / k), experts
    fails_with(ch17.route, uniform, "do not keep the ratios")
    fails_with(ch17.route, lambda l, k: (F.softmax(l, -1), l.argsort(-1, descending=True)), "must both be (T, k)")
    fails_with(ch17.route, lambda l, k: F.softmax(l, -1), "two tensors")

    def weights_as_experts(logits, k):
        weights, _ = ch17.route._solution(logits, k)
        return weights, weights
    fails_with(ch17.route, weights_as_experts, "indices")


# ----------------------------------------------------------------------------- the window mask with sinks
def test_window_mask_solution_equals_the_package_s():
    for length, window, sinks in ((10, 3, 2), (6, 6, 0)):
        i = torch.arange(length)
        wanted = window_mask(i, i, window, sinks)[0] & (i.unsqueeze(0) <= i.unsqueeze(1))
        assert torch.equal(ch17.window_mask._solution(length, window, sinks), wanted)
    assert ch17.window_mask.check(ch17.window_mask._solution)
    assert ch17.window_mask.check(lambda *a: ch17.window_mask._solution(*a).int())


def test_window_mask_slips_are_named(fails_with):
    solution = ch17.window_mask._solution
    fails_with(ch17.window_mask, lambda l, w, s: ~solution(l, w, s), "swapped")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, s) | (torch.arange(l).unsqueeze(0) < s),
               "after it")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w + 1, s), "one key too many")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, max(w - 1, 1), s), "one key too few")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, 0), "no sinks")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, l, 0), "the window is missing")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, s + 1), "one sink too many")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, s).float(), "True/False")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, s)[:-1], "must be (L, L)")
    fails_with(ch17.window_mask, lambda l, w, s: solution(l, w, s) & (torch.rand(l, l) > 0.3), "wrong keys")
    fails_with(ch17.window_mask, 3, "expected a function")


# ----------------------------------------------------------------------------- where QK-norm goes
def test_qk_norm_place_solution_passes_and_every_other_answer_is_refused(fails_with):
    assert ch17.qk_norm_place.check(ch17.qk_norm_place._solution())
    fails_with(ch17.qk_norm_place, {"gain of one": False, "learned gain": False}, "a vector's length")
    fails_with(ch17.qk_norm_place, {"gain of one": True, "learned gain": True}, "each dimension on its own")
    fails_with(ch17.qk_norm_place, {"gain of one": True}, "expected a dict")
    fails_with(ch17.qk_norm_place, {"gain of one": 1, "learned gain": 0}, "True (the two orders")
