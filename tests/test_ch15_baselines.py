"""Chapter 15's count baselines: a unigram and a bigram table scored in bits per byte like a model,
the claims the chapter makes against them, and the figure that draws them beside the stored seeds."""
import math

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.collections import LineCollection

from stepbystep.data import BytePairTokenizer
from stepbystep.experiments import baseline_claims, count_bits_per_byte
from stepbystep.plots import bits_per_byte_study


def test_the_unigram_table_counts_ids_with_add_one_smoothing():
    train = torch.tensor(list(b"aab"))  # a twice, b once; with add-one: a 3, b 2, the 254 others 1
    assert count_bits_per_byte(BytePairTokenizer(), train, "ab") == pytest.approx(-math.log2(2 / 259))
    assert count_bits_per_byte(BytePairTokenizer(), train, "ba") == pytest.approx(-math.log2(3 / 259))


def test_the_bigram_table_counts_each_id_after_the_one_before():
    train = torch.tensor(list(b"aab"))  # after a: a once, b once; with add-one each 2 of 258
    assert count_bits_per_byte(BytePairTokenizer(), train, "ab", order=2) == pytest.approx(-math.log2(2 / 258))
    assert count_bits_per_byte(BytePairTokenizer(), train, "bb", order=2) == pytest.approx(-math.log2(1 / 256))


def test_the_tables_score_per_byte_of_the_predicted_tokens():
    tokenizer = BytePairTokenizer([(97, 98)], pattern=None)  # 256 = "ab"
    train = torch.tensor([256, 256, 97])  # with add-one over 257 ids: 256 three, a two, the 255 others 1
    assert tokenizer.encode("abab") == [256, 256]
    assert count_bits_per_byte(tokenizer, train, "abab") == pytest.approx(-math.log2(3 / 260) / 2)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="order must be 1 .unigram. or 2 .bigram., got 3"):
        count_bits_per_byte(BytePairTokenizer(), torch.tensor([97, 98]), "ab", order=3)
    with pytest.raises(TypeError, match="train_ids"):
        count_bits_per_byte(BytePairTokenizer(), [97, 98], "ab")


GOOD = {"bpe": torch.tensor([2.91, 2.92, 2.915]), "bytes": torch.tensor([3.60, 3.63, 3.65]),
        "bytes, 2x steps": torch.tensor([3.20, 3.14, 3.21])}
TABLES = {"bpe": (3.61, 2.64), "bytes": (4.87, 3.585)}


def test_the_baseline_claims_hold_for_the_studys_shape_and_each_fails_on_its_own():
    assert [c.holds for c in baseline_claims(GOOD, TABLES, live=2.99)] == [True] * 5
    assert [c.holds for c in baseline_claims(GOOD, TABLES, live=3.7)][:2] == [False, True]  # live above the unigram
    assert [c.holds for c in baseline_claims(GOOD, TABLES, live=2.6)][:2] == [True, False]  # live below the bigram
    far = {**GOOD, "bytes": torch.tensor([3.60, 3.70, 3.65])}  # one seed 0.115 above the byte-pair table
    assert [c.holds for c in baseline_claims(far, TABLES, live=2.99)] == [True, True, False, True, True]
    slow = {**GOOD, "bytes, 2x steps": torch.tensor([3.20, 3.59, 3.21])}
    assert [c.holds for c in baseline_claims(slow, TABLES, live=2.99)] == [True, True, True, False, True]
    close = {"bpe": (3.61, 3.2), "bytes": (4.87, 3.585)}  # BPE pairs only 0.385 below byte pairs
    assert [c.holds for c in baseline_claims({**GOOD, "bpe": GOOD["bpe"] + 0.5}, close, live=3.4)] == [
        True, True, True, True, False]


def test_the_figure_draws_each_arms_tables_and_side_by_side_dots():
    losses = torch.full((50,), 10 * math.log(2))  # 10 bits per token
    stored = {"bpe": torch.tensor([2.0, 2.0, 2.0]), "bytes": torch.tensor([3.0, 3.1, 3.3])}
    levels = {"bpe": {"unigram table": 3.6, "bigram table": 2.6}, "bytes": {"unigram table": 4.9, "bigram table": 3.6}}
    fig = bits_per_byte_study({"bpe (live)": losses}, {"bpe (live)": 2.5}, stored, window=10,
                              live={"bpe": 2.05}, chance={"bpe (live)": 4.0}, levels=levels)
    curve_ax, seed_ax = fig.axes
    assert [t.get_text() for t in curve_ax.get_legend().get_texts()] == [
        "bpe (live)", "a uniform guess (10 bits per token)"]
    dots = [c for c in seed_ax.collections if c.get_label().startswith("_") and len(c.get_offsets()) == 3]
    assert len({x for x, _ in dots[0].get_offsets().tolist()}) == 3  # three equal values, three dots
    tables = [c for c in seed_ax.collections if "table" in c.get_label()]
    assert [c.get_label() for c in tables] == ["unigram table", "bigram table"]  # one legend entry each
    grey = [c for c in seed_ax.collections
            if isinstance(c, LineCollection) and c.get_colors()[0][:3].tolist() == pytest.approx([0.45] * 3)]
    assert sorted(round(seg[0][1], 2) for c in grey for seg in c.get_segments()) == [2.6, 3.6, 3.6, 4.9]
    assert tables[0].get_linestyle() != tables[1].get_linestyle()
    assert [t.get_text() for t in seed_ax.get_legend().get_texts()] == ["unigram table", "bigram table", "live bpe run"]
    plt.close(fig)
