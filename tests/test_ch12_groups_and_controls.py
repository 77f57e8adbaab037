"""Chapter 12: the block study's figure colours each variant by its role, the claim on two KV heads
is judged seed for seed, and the cache control times a matrix that fits in a cache."""
import matplotlib.colors as mcolors
import pytest
import torch

from stepbystep import plots
from stepbystep.experiments.cache_timing import matrix_vector_times
from stepbystep.experiments.todays_block import BLOCK_GROUPS, block_configs, kv_head_claims


def _bar_colors(ax):
    return [mcolors.to_hex(bar.get_facecolor(), keep_alpha=False) for bar in ax.patches]


def test_block_groups_name_every_variant_of_the_study_once_in_its_order():
    configs = block_configs(30)
    grouped = [name for members in BLOCK_GROUPS.values() for name in members]
    assert grouped == list(configs)


def test_block_study_colours_each_group_once_and_names_it_in_a_legend():
    results = {name: torch.tensor([[1.0, 0.5], [1.2, 0.6]]) for name in ("a", "b", "c", "d")}
    fig = plots.block_study(results, groups={"first": ("a", "b"), "second": ("c",)})
    colors = _bar_colors(fig.axes[0])
    assert colors[0] == colors[1] != colors[2]  # one colour per group
    assert colors[3] == mcolors.to_hex("grey")  # in no group: grey
    assert _bar_colors(fig.axes[1]) == colors  # both panels alike
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["first", "second"]
    assert fig.legends[0].get_patches()[1].get_facecolor()[:3] == pytest.approx(mcolors.to_rgb(colors[2]))
    plain = plots.block_study(results)  # no groups: one colour, no legend
    assert len(set(_bar_colors(plain.axes[0]))) == 1 and not plain.legends


def _results(four, two):
    other = {name: [1.0] * len(four) for members in BLOCK_GROUPS.values() for name in members}
    other.update({"2017 block": [1.4] * len(four), "+ RoPE": four, "2 KV heads": two,
                  "1 KV head": [x + 0.1 for x in four], "1 KV head, wider FFN": [x + 0.05 + 0.1 * (i % 2) for i, x in
                                                                                 enumerate(four)]})
    return {name: torch.tensor([[loss, 0.5] for loss in losses]) for name, losses in other.items()}


def _held(results):
    return {claim.claim: bool(claim.holds) for claim in kv_head_claims(results)}


SEED_FOR_SEED = "and two KV heads end above four in more than half the seeds, seed for seed"


def test_two_kv_heads_are_judged_seed_for_seed_as_well_as_by_the_median():
    four = [0.83, 0.64, 0.84, 0.81, 0.76]
    assert _held(_results(four, [0.84, 0.85, 0.83, 0.78, 0.86]))[SEED_FOR_SEED]  # above in 3 of 5
    # a median above four's that two seeds of five carry: not above seed for seed in most
    level = _held(_results(four, [0.90, 0.90, 0.82, 0.80, 0.75]))
    assert level["two KV heads' median is above four's too"] and not level[SEED_FOR_SEED]


def test_matrix_vector_times_takes_a_small_matrix_and_refuses_bad_sizes():
    per_vector = matrix_vector_times(8, (1, 4), repeats=2)
    assert len(per_vector) == 2 and min(per_vector) > 0
    with pytest.raises(ValueError):
        matrix_vector_times(0, (1,))
    with pytest.raises(ValueError):
        matrix_vector_times(8, (0,))
