"""Chapter 12: the block study's figure colours each variant by its role, the claim on one KV head
is judged by its share of seeds on either stored file, and the cache control times a matrix that
fits in a cache."""
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


def test_kv_head_claims_judge_one_kv_head_by_its_share_of_seeds():
    from stepbystep.experiments.todays_block_seeds import FRESH_RESULTS, load_block_seeds
    for path in (None, FRESH_RESULTS):  # the stored ten and the thirty more alike
        _, results = load_block_seeds(path) if path else load_block_seeds()
        assert all(bool(c.holds) for c in kv_head_claims(results))
        one = results["1 KV head"].clone()
        n = len(one)
        one[: n // 4 + 1, 0] = results["+ RoPE"][: n // 4 + 1, 0] - 0.01  # below four in over a quarter of the seeds
        held = {c.claim: bool(c.holds) for c in kv_head_claims(dict(results, **{"1 KV head": one}))}
        assert not held["one KV head ends with a higher loss than four in more than three seeds in four, seed for seed"]


def test_matrix_vector_times_takes_a_small_matrix_and_refuses_bad_sizes():
    per_vector = matrix_vector_times(8, (1, 4), repeats=2)
    assert len(per_vector) == 2 and min(per_vector) > 0
    with pytest.raises(ValueError):
        matrix_vector_times(0, (1,))
    with pytest.raises(ValueError):
        matrix_vector_times(8, (0,))
