"""Chapter 11's seed studies: models trained per seed, their predictions, a confusion matrix over seeds,
errors by line length, and what a learned position table holds (cosine similarities, top row against
bottom row)."""
import copy

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from stepbystep.data.bar_images import bar_datasets  # noqa: E402
from stepbystep.experiments.vit_positions import (  # noqa: E402
    POSITION_MODELS,
    ShuffledPatches,
    accuracy,
    position_claims,
    position_models,
    position_runs,
    position_similarity,
    predicted_classes,
    small_vit,
    table_claims,
    top_bottom_similarity,
)
from stepbystep.plots import confusion_over_seeds, error_by_length, position_similarity_grid  # noqa: E402

CLASSES = ("straight", "/", "\\")


# ----------------------------------------------------------------------------- models per seed
def test_position_models_trains_the_named_models_per_seed_and_position_runs_scores_them():
    train, val = bar_datasets(n_train=64, n_val=40, seed=2)
    models = position_models(train, 2, seeds=(0, 1), n_epochs=1, names=("ViT", "CNN"))
    assert list(models) == ["ViT", "CNN"] and all(len(trained) == 2 for trained in models.values())
    assert not any(model.training for trained in models.values() for model in trained)
    all_models = position_models(train, 2, seeds=(0, 1), n_epochs=1)
    assert list(all_models) == list(POSITION_MODELS)
    runs = position_runs(train, val, 2, seeds=(0, 1), n_epochs=1)
    for name, trained in all_models.items():  # the accuracies are those of the models, seed by seed
        assert torch.equal(runs[name], torch.tensor([accuracy(model, val) for model in trained]))
    assert torch.equal(models["ViT"][1].pos_embed, all_models["ViT"][1].pos_embed)  # a seed is a seed


def test_position_models_refuses_unknown_names_and_no_seeds():
    train, _ = bar_datasets(n_train=8, n_val=4)
    with pytest.raises(ValueError, match="names must be some of"):
        position_models(train, 2, seeds=(0,), n_epochs=1, names=("ResNet",))
    with pytest.raises(ValueError, match="at least one seed"):
        position_models(train, 2, seeds=(), n_epochs=1)


def test_predicted_classes_is_the_largest_logit_in_eval_mode_mode_restored():
    model = small_vit(0, 3)
    images = torch.rand(7, 1, 12, 12)
    with torch.no_grad():
        wanted = model.eval()(images).argmax(dim=1)
    model.train()
    got = predicted_classes(model, images)
    assert torch.equal(got, wanted) and got.device.type == "cpu" and model.training


def test_predicted_classes_feeds_the_model_where_it_lives(feeds_the_model_where_it_lives):
    vit = copy.deepcopy(small_vit(0, 2)).to("meta")
    feeds_the_model_where_it_lives(lambda: predicted_classes(vit, torch.rand(3, 1, 12, 12)))


# ----------------------------------------------------------------------------- the learned table
def _table_with_rows(top, middle, bottom):
    """A ViT whose patch positions are ``top`` in the grid's first row, ``middle`` and ``bottom`` below."""
    model = small_vit(0, 2)
    with torch.no_grad():
        model.pos_embed[0, 1:4], model.pos_embed[0, 4:7], model.pos_embed[0, 7:10] = top, middle, bottom
        model.pos_embed[0, 0] = 5.0  # the CLS token's row: left out
    return model


def test_position_similarity_is_the_cosine_of_the_patch_rows():
    up = torch.zeros(16)
    up[0] = 2.0
    side = torch.zeros(16)
    side[1] = 0.5
    model = _table_with_rows(up, side, -3 * up)
    similarity = position_similarity(model)
    assert similarity.shape == (9, 9)
    torch.testing.assert_close(similarity[0, :3], torch.ones(3))  # the top row: one direction
    torch.testing.assert_close(similarity[0, 3:6], torch.zeros(3))  # the middle row: orthogonal
    torch.testing.assert_close(similarity[0, 6:], -torch.ones(3))  # the bottom row: the opposite one
    assert top_bottom_similarity(model) == pytest.approx(-1.0)
    assert top_bottom_similarity(ShuffledPatches(_table_with_rows(up, side, up), seed=0)) == pytest.approx(1.0)


def test_position_similarity_refuses_a_model_without_a_table():
    model = small_vit(0, 2)
    model.pos_embed = None
    with pytest.raises(ValueError, match="no learned position table"):
        position_similarity(model)
    with pytest.raises(TypeError, match="a ViT or a ShuffledPatches"):
        position_similarity(torch.nn.Linear(2, 2))


def test_table_claims_hold_only_for_a_split_below_every_blind_seed():
    assert all(claim.holds for claim in table_claims([-0.4, -0.6, -0.2], [0.1, 0.3, -0.05]))
    assert [claim.holds for claim in table_claims([-0.4, 0.05, -0.2], [0.1, 0.3, 0.2])] == [False, True]
    assert [claim.holds for claim in table_claims([-0.4, -0.6, -0.2], [0.1, -0.3, 0.2])] == [True, False]


def test_position_claims_allow_one_slow_seed_but_not_a_low_median():
    ceiling = 0.658
    results = {"ViT": torch.tensor([0.982, 0.986, 0.990, 0.978, 0.894]),
               "ViT, patches shuffled": torch.tensor([0.658, 0.636, 0.638, 0.604, 0.646]),
               "CNN": torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0])}
    assert all(claim.holds for claim in position_claims(results, ceiling))
    results["ViT"] = torch.tensor([0.96, 0.94, 0.93, 0.97, 0.92])  # median under 95%
    assert not position_claims(results, ceiling)[0].holds
    results["ViT"] = torch.tensor([0.98, 0.99, 0.99, 0.97, 0.75])  # one seed within 15 points of the ceiling
    assert not position_claims(results, ceiling)[0].holds


# ----------------------------------------------------------------------------- figures
def test_confusion_over_seeds_shows_median_and_range_coloured_by_median_row_share():
    confusions = {"A": torch.tensor([[[8, 2, 0], [0, 5, 0], [1, 0, 3]],
                                     [[6, 4, 0], [0, 5, 0], [0, 0, 4]],
                                     [[10, 0, 0], [1, 4, 0], [0, 1, 3]]]),
                  "B": torch.eye(3, dtype=torch.long).expand(3, 3, 3) * 4}
    fig = confusion_over_seeds(confusions, CLASSES)
    first, second = fig.axes[0], fig.axes[1]
    texts = [t.get_text() for t in first.texts]
    assert texts[:3] == ["8\n(6-10)", "2\n(0-4)", "0\n(0-0)"] and texts[3] == "0\n(0-1)"
    shares = first.collections[0].get_array().reshape(3, 3)
    np.testing.assert_allclose(shares[0], [0.8, 0.2, 0.0])  # the median of the seeds' row shares
    assert first.get_ylabel() == "true class" and first.get_xlabel() == "predicted class"
    assert "median of 3 seeds" in first.get_title() and second.get_title().startswith("B")
    assert [t.get_text() for t in second.texts][0] == "4\n(4-4)"
    assert len(fig.axes) == 3  # two maps and one colour bar
    with pytest.raises(ValueError, match=r"\(seeds, 3, 3\)"):
        confusion_over_seeds({"A": torch.zeros(3, 3)}, CLASSES)
    with pytest.raises(ValueError, match="at least one model"):
        confusion_over_seeds({}, CLASSES)


def test_error_by_length_draws_every_seed_and_the_median():
    errors = {"ViT": torch.tensor([[0.5, 0.2, 0.0], [0.7, 0.1, 0.1]]), "CNN": torch.tensor([[0.3, 0.0, 0.0]] * 2)}
    fig = error_by_length(["1", "2-3", "10-12"], errors)
    ax = fig.axes[0]
    assert len(ax.collections) == 4  # one set of dots per seed and model
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.6, 0.15, 0.05])  # the ViT's median per length
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2-3", "10-12"]
    assert ax.get_ylabel() == "share of the images wrong"
    with pytest.raises(ValueError, match=r"\(seeds, 3\)"):
        error_by_length(["1", "2-3", "10-12"], {"ViT": torch.zeros(2, 4)})


def test_position_similarity_grid_draws_each_patch_map_on_the_image_grid():
    similarity = torch.arange(81.0).reshape(9, 9) / 81
    fig = position_similarity_grid({"one": similarity, "two": -similarity})
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 18 and len(fig.axes) == 19  # 9 small maps per table, and a colour bar
    np.testing.assert_allclose(maps[4].images[0].get_array(), similarity[4].reshape(3, 3).numpy())
    assert maps[0].images[0].get_clim() == (-1, 1)
    assert maps[0].get_ylabel() == "row 0" and maps[8].get_xlabel() == "column 2"
    with pytest.raises(ValueError, match="square grid"):
        position_similarity_grid({"bad": torch.zeros(8, 8)})
    with pytest.raises(ValueError, match="at least one table"):
        position_similarity_grid({})

