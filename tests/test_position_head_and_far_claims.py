"""Chapter 10's claims about ALiBi's head count and about copying a far token hold for the
measured pattern and name what a different outcome breaks."""
import torch

from stepbystep.experiments.position_claims import alibi_head_claims, far_token_claims


def failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


def test_alibi_head_claims():
    four = torch.tensor([[0.968, 0.959, 0.95], [0.974, 0.965, 0.953], [0.968, 0.953, 0.938]])
    eight = torch.tensor([[0.99, 0.988, 0.986], [0.992, 0.989, 0.985], [0.983, 0.975, 0.968]])
    steep = torch.tensor([[0.997, 0.996, 0.995], [0.998, 0.997, 0.997], [0.997, 0.996, 0.996]])
    assert failing(alibi_head_claims(four, steep, eight)) == []
    eight[2, 0] = 0.97  # one 8-head seed no better than the best 4-head seed
    assert failing(alibi_head_claims(four, steep, eight)) == ["at 16 tokens, every 8-head seed beats every 4-head seed"]
    assert failing(alibi_head_claims(eight, steep, four)) == ["at 16 tokens, every 8-head seed beats every 4-head seed",
                                                              "the 8-head median is higher at every test length"]


def test_alibi_slope_claims():
    four = torch.tensor([[0.968, 0.959, 0.95], [0.974, 0.965, 0.953], [0.968, 0.953, 0.938]])
    eight = torch.tensor([[0.99, 0.988, 0.986], [0.992, 0.989, 0.985], [0.983, 0.975, 0.968]])
    steep = four.clone()
    steep[0] = torch.tensor([0.999, 0.999, 0.999])  # one steep seed better, the others the same as 4 heads
    assert failing(alibi_head_claims(four, steep, eight)) == [
        "4 heads with a steepest slope of 1/2 beat the default 4 heads at every test length in every seed",
        "4 heads with a steepest slope of 1/2 match or beat the 8-head median at every test length"]
    steep = torch.tensor([[0.985, 0.98, 0.97]] * 3)  # better than 4 heads, below the 8-head median
    assert failing(alibi_head_claims(four, steep, eight)) == [
        "4 heads with a steepest slope of 1/2 match or beat the 8-head median at every test length"]


CHANCE = 1 / 15


def far_results():
    return {"sinusoidal": torch.tensor([[1.0, 0.39, 0.23], [1.0, 0.43, 0.24], [1.0, 0.40, 0.23]]),
            "learned": torch.tensor([[0.9, 0.35, 0.2], [0.87, 0.34, 0.19], [0.9, 0.35, 0.2]]),
            "alibi": torch.tensor([[0.26, 0.18, 0.15], [0.25, 0.17, 0.14], [0.24, 0.17, 0.14]]),
            "rope": torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.99, 0.8], [1.0, 1.0, 1.0]]),
            "none": torch.tensor([[0.25, 0.16, 0.12], [0.24, 0.16, 0.12], [0.25, 0.16, 0.12]])}


def test_far_token_claims():
    results = far_results()
    assert failing(far_token_claims(results, CHANCE)) == []
    results["alibi"] = torch.tensor([[0.99, 0.98, 0.97]] * 3)  # an ALiBi that reads 8 back and extrapolates
    assert failing(far_token_claims(results, CHANCE)) == [
        "ALiBi and no positions: more than 3 times chance but below 40% at 16 tokens in every seed",
        "at 16 tokens the ALiBi median is within 5 points of the median without positions",
        "RoPE beats ALiBi at every test length in every seed",
        "RoPE keeps at least 70% at 64 tokens in every seed, ahead of every other scheme"]
    results = far_results()
    results["rope"][1] = torch.tensor([0.98, 0.6, 0.3])  # a RoPE seed that fails past the training length
    assert failing(far_token_claims(results, CHANCE)) == [
        "sinusoidal and RoPE get at least 99% at 16 tokens in every seed",
        "RoPE keeps at least 70% at 64 tokens in every seed, ahead of every other scheme"]


def test_far_token_claims_alibi_at_chance():
    results = far_results()
    results["alibi"] = torch.tensor([[0.07, 0.07, 0.07]] * 3)  # an ALiBi that learns nothing
    assert failing(far_token_claims(results, CHANCE)) == [
        "ALiBi and no positions: more than 3 times chance but below 40% at 16 tokens in every seed",
        "at 16 tokens the ALiBi median is within 5 points of the median without positions"]
