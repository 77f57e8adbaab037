"""Chapter 10's claims about position schemes on the lag-copy task, at and past the training length.

``results`` maps each scheme to its accuracies ``(seeds, 3)`` over the first 16, 32 and 64
positions; ``by_position`` maps it to the seed-0 model's accuracy at each position ``(64,)``.
``alibi_head_claims`` compares ALiBi with 4 heads, 4 heads given 8 heads' steepest slope, and 8 heads;
``far_token_claims`` the schemes on
a task whose answer lies 8 tokens back; ``copying_layer_claims`` what RoPE's second layer reads
in training and past it.
Each function returns the claims the text makes, for ``expect_all``.
"""
from stepbystep.expect import Claim

__all__ = ["training_length_claims", "length_claims", "alibi_head_claims", "far_token_claims",
           "copying_layer_claims"]


def _lowest_highest(results):
    lowest = {scheme: runs.min(dim=0).values for scheme, runs in results.items()}  # (3,) each
    highest = {scheme: runs.max(dim=0).values for scheme, runs in results.items()}  # (3,) each
    return lowest, highest


def training_length_claims(results, by_position, chance):
    """At the 16 trained positions: every scheme learns; without positions, partly and early best."""
    lowest, highest = _lowest_highest(results)
    early, late = by_position["none"][1:4].mean(), by_position["none"][12:16].mean()
    return [
        Claim(all(lowest[scheme][0] >= 0.99 for scheme in ("sinusoidal", "learned", "rope")),
              "sinusoidal, learned and RoPE get at least 99% at 16 tokens in every seed",
              {scheme: lowest[scheme][0].item() for scheme in ("sinusoidal", "learned", "rope")}),
        Claim(lowest["alibi"][0] >= 0.95, "ALiBi gets at least 95% at 16 tokens in every seed", lowest["alibi"]),
        Claim(all(highest["alibi"][0] < lowest[scheme][0] for scheme in ("sinusoidal", "learned", "rope")),
              "at 16 tokens every ALiBi seed is below every seed of sinusoidal, learned and RoPE",
              {scheme: results[scheme][:, 0] for scheme in ("alibi", "sinusoidal", "learned", "rope")}),
        Claim(2 * chance < lowest["none"][0] and highest["none"][0] <= 0.9,
              "without positions: more than twice chance, at most 90% at 16 tokens", results["none"][:, 0]),
        Claim(early > late + 0.1,
              "without positions, positions 1-3 beat positions 12-15 by more than 10 points (seed 0)",
              (early, late)),
    ]


def length_claims(results, by_position, train_length):
    """Past the training length: sinusoidal and learned fail, ALiBi holds, RoPE holds only nearby."""
    lowest, highest = _lowest_highest(results)
    others = ("sinusoidal", "learned", "rope", "none")
    past = {scheme: by_position[scheme][train_length:].mean().item() for scheme in ("sinusoidal", "learned")}
    rope_near, rope_far = by_position["rope"][train_length:32].mean(), by_position["rope"][48:].mean()
    return [
        Claim(all(accuracy < 0.3 for accuracy in past.values()),
              f"sinusoidal and learned are right less than 30% of the time past position {train_length - 1} (seed 0)",
              past),
        Claim(all(highest[scheme][2] < 0.45 for scheme in ("sinusoidal", "learned")),
              "sinusoidal and learned stay below 0.45 at 64 tokens in every seed",
              {scheme: highest[scheme][2].item() for scheme in ("sinusoidal", "learned")}),
        Claim(lowest["alibi"][2] >= 0.9, "ALiBi keeps at least 90% at 64 tokens in every seed", lowest["alibi"]),
        Claim(all(lowest["alibi"][2] > highest[scheme][2] for scheme in others),
              "ALiBi is ahead of every other scheme at 64 tokens",
              {scheme: highest[scheme][2].item() for scheme in others}),
        Claim(lowest["rope"][1] >= 0.95, "RoPE holds at 32 tokens (at least 95% in every seed)", lowest["rope"]),
        Claim(highest["rope"][2] < lowest["alibi"][2], "RoPE falls behind ALiBi at 64 tokens", highest["rope"]),
        Claim(rope_near >= 0.95 and rope_far < 0.3,
              f"RoPE (seed 0) is right at least 95% over positions {train_length}-31 and under 30% over 48-63",
              (rope_near, rope_far)),
        Claim(all(highest["none"][longer] < lowest["none"][longer - 1] for longer in (1, 2)),
              "without positions, the accuracy falls at every longer test length", results["none"]),
        Claim(all(lowest["none"][2] > highest[scheme][2] for scheme in ("sinusoidal", "learned")),
              "at 64 tokens, no positions is ahead of sinusoidal and learned in every seed",
              {scheme: results[scheme][:, 2] for scheme in ("none", "sinusoidal", "learned")}),
        Claim(lowest["none"][1] > highest["learned"][1]
              and abs(results["none"][:, 1].median() - results["sinusoidal"][:, 1].median()) < 0.03,
              "at 32 tokens, no positions is ahead of learned in every seed, within 3 points of sinusoidal "
              "in the median", {scheme: results[scheme][:, 1] for scheme in ("none", "sinusoidal", "learned")}),
    ]


def alibi_head_claims(four_heads, steep_four_heads, eight_heads):
    """ALiBi with 4 heads (steepest slope 1/4), with 4 heads given the slopes 1/2, 1/8, 1/32, 1/128
    (steepest 1/2, as with 8 heads), and with 8 heads (steepest 1/2): ``(seeds, 3)`` each."""
    median4, median8 = four_heads.median(dim=0).values, eight_heads.median(dim=0).values  # (3,) each
    median_steep = steep_four_heads.median(dim=0).values  # (3,)
    return [
        Claim(eight_heads[:, 0].min() > four_heads[:, 0].max(),
              "at 16 tokens, every 8-head seed beats every 4-head seed", (four_heads[:, 0], eight_heads[:, 0])),
        Claim(bool((median8 > median4).all()), "the 8-head median is higher at every test length", (median4, median8)),
        Claim(bool((steep_four_heads.min(dim=0).values > four_heads.max(dim=0).values).all()),
              "4 heads with a steepest slope of 1/2 beat the default 4 heads at every test length in every seed",
              (four_heads, steep_four_heads)),
        Claim(bool((median_steep >= median8).all()),
              "4 heads with a steepest slope of 1/2 match or beat the 8-head median at every test length",
              (median_steep, median8)),
    ]


def far_token_claims(results, chance):
    """Copying the token 8 back: ALiBi learns it only partly, like no positions; RoPE learns it and holds
    past the training length; the learned table learns it less reliably than the sinusoidal one, and both
    fail past it. ``chance`` is the accuracy of a uniform guess."""
    lowest, highest = _lowest_highest(results)
    medians = {scheme: runs.median(dim=0).values for scheme, runs in results.items()}  # (3,) each
    spread = {scheme: (highest[scheme][0] - lowest[scheme][0]).item() for scheme in results}  # at 16 tokens
    return [
        Claim(all(lowest[scheme][0] >= 0.99 for scheme in ("sinusoidal", "rope")),
              "sinusoidal and RoPE get at least 99% at 16 tokens in every seed",
              {scheme: lowest[scheme][0].item() for scheme in ("sinusoidal", "rope")}),
        Claim(all(3 * chance < lowest[scheme][0] and highest[scheme][0] < 0.4 for scheme in ("alibi", "none")),
              "ALiBi and no positions: more than 3 times chance but below 40% at 16 tokens in every seed",
              {scheme: results[scheme][:, 0] for scheme in ("alibi", "none")}),
        Claim(abs(medians["alibi"][0] - medians["none"][0]) < 0.05,
              "at 16 tokens the ALiBi median is within 5 points of the median without positions",
              (medians["alibi"][0], medians["none"][0])),
        Claim(bool((lowest["rope"] > highest["alibi"]).all()),
              "RoPE beats ALiBi at every test length in every seed", (lowest["rope"], highest["alibi"])),
        Claim(lowest["rope"][2] >= 0.7 and all(lowest["rope"][2] > highest[scheme][2]
                                               for scheme in ("sinusoidal", "learned", "alibi", "none")),
              "RoPE keeps at least 70% at 64 tokens in every seed, ahead of every other scheme",
              {scheme: (lowest[scheme][2].item(), highest[scheme][2].item()) for scheme in results}),
        Claim(medians["learned"][0] < lowest["sinusoidal"][0]
              and spread["learned"] > spread["sinusoidal"],
              "at 16 tokens the learned table is less reliable: its median below every sinusoidal seed, "
              "its seeds further apart", {scheme: results[scheme][:, 0] for scheme in ("sinusoidal", "learned")}),
        Claim(all(highest[scheme][2] < 0.3 for scheme in ("sinusoidal", "learned")),
              "sinusoidal and learned fall below 30% at 64 tokens in every seed",
              {scheme: highest[scheme][2].item() for scheme in ("sinusoidal", "learned")}),
    ]


def copying_layer_claims(copying, top_offsets, far_weight, aliases, late_queries=(50, 60)):
    """RoPE's second layer on lag 1, one model per seed: in training most of its heads copy the previous
    token; past the training length every head reads an alias of offset 1. ``copying``: per seed, each head's
    mean weight on the previous token over the trained queries, ``(n_heads,)``; ``top_offsets[seed, query]``:
    each head's most-read offset at that query; ``far_weight[seed, query]``: the heads' mean weight on offsets
    past the trained ones; ``aliases``: the offsets that pair 0 sees almost as offset 1."""
    n_heads = len(copying[0])
    late = [offset for (seed, query), offsets in top_offsets.items() if query in late_queries for offset in offsets]
    queries = " and ".join(str(query) for query in late_queries)
    return [
        Claim(all(int((heads > 0.9).sum()) >= n_heads - 1 for heads in copying),
              f"in training, at least {n_heads - 1} of the {n_heads} heads of layer 2 put over 0.9 of their weight "
              "on the previous token, in every seed", [heads.tolist() for heads in copying]),
        Claim(all(min(abs(offset - alias) for alias in aliases) <= 1 for offset in late),
              f"at queries {queries}, every head of layer 2 reads most an offset within 1 of an alias of offset 1, "
              "in every seed", top_offsets),
        Claim(min(weight for (seed, query), weight in far_weight.items() if query in late_queries) > 0.5,
              "and there, most of its weight lies on offsets beyond the trained ones", far_weight),
    ]
