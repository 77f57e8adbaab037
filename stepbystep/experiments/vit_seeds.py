"""Chapter 11's first ViT over five more seeds, too long to train in the chapter.

``clean_run`` measures one trained ViT on the clean line task: its held-out accuracy, its accuracy
with the patch tokens in five other orders, and the share of each head's CLS attention that goes to
the line's patches, next to the same shares of the untrained model. ``clean_seed_study`` trains
``small_vit`` with ``fit`` (the chapter's recipe) for ``SEEDS``;
``python -m stepbystep.experiments.vit_seeds`` writes it to ``results/vit_seeds.json`` on one
thread, and ``load_clean_seed_study`` reads it back. ``clean_claims`` is what chapter 11 says of
every run: ``accuracy_claims``, ``shuffle_claims`` and ``attention_claims``.
"""
import copy
import json
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

from ..checks import check_instance, check_tensor
from ..data import line_datasets
from ..devices import environment
from ..expect import Claim
from ..models import ViT, cls_attention
from .vit_positions import accuracy, fit, shuffled_logits, small_vit

__all__ = ["SEEDS", "RESULTS", "N_ORDERS", "line_patches", "line_shares", "shuffled_accuracies", "clean_run",
           "clean_seed_study", "load_clean_seed_study", "accuracy_claims", "shuffle_claims",
           "attention_claims", "clean_claims"]

SEEDS = (0, 1, 2, 3, 4)
N_ORDERS = 5  # patch orders tried on each trained model
RESULTS = Path(__file__).parent / "results" / "vit_seeds.json"


def line_patches(images, patch_size=4):
    """Which patches the line passes through (hold a pixel of value 1): ``(N, n_patches)`` of 0 and 1."""
    check_tensor("images", images)
    return F.max_pool2d((images == 1.0).float(), kernel_size=patch_size).flatten(1)  # (N, n_patches)


def line_shares(model, images):
    """For each head: the mean share of the CLS token's patch attention that goes to the line's patches, ``(h,)``."""
    patch_weights = cls_attention(model, images)[1].flatten(2)  # (N, h, n_patches)
    on_line = line_patches(images, model.embed.patch_size)[:, None]  # (N, 1, n_patches)
    return ((patch_weights * on_line).sum(dim=-1) / patch_weights.sum(dim=-1)).mean(dim=0)  # (h,)


def shuffled_accuracies(model, data, n_orders=N_ORDERS, seed=0):
    """Held-out accuracy with the patch tokens in ``n_orders`` random orders (drawn from ``seed``): a list."""
    images, labels = data.tensors  # (N, 1, s, s), (N,)
    orders = torch.Generator().manual_seed(seed)
    results = []
    for _ in range(n_orders):
        permutation = torch.randperm(model.embed.n_patches, generator=orders)  # place j gets patch permutation[j]
        results.append((shuffled_logits(model, images, permutation).argmax(dim=1) == labels).float().mean().item())
    return results


def clean_run(trained, untrained, val_data, seed):
    """One run's numbers, a dict ready for JSON: ``trained`` and ``untrained`` ViTs, the held-out ``val_data``."""
    check_instance("trained", trained, ViT)
    check_instance("untrained", untrained, ViT)
    images = val_data.tensors[0]
    return {"seed": seed, "accuracy": accuracy(trained, val_data),
            "shuffled": shuffled_accuracies(trained, val_data),
            "head_shares": line_shares(trained, images).tolist(),
            "untrained_shares": line_shares(untrained, images).tolist()}


def _rounded(run):
    return {key: [round(v, 6) for v in value] if isinstance(value, list) else
            (round(value, 6) if isinstance(value, float) else value) for key, value in run.items()}


def clean_seed_study(seeds=SEEDS, n_epochs=16):
    """The chapter's ViT trained on the clean line task for each of ``seeds``, measured by ``clean_run``."""
    train_data, val_data = line_datasets(n_train=800, n_val=500)
    runs = []
    for seed in seeds:
        untrained = small_vit(seed, n_outputs=3)
        trained = fit(copy.deepcopy(untrained), train_data, n_epochs, seed=seed)
        runs.append(_rounded(clean_run(trained, untrained, val_data, seed)))
    return {"command": "python -m stepbystep.experiments.vit_seeds", "n_epochs": n_epochs,
            "environment": environment(), "runs": runs}


def load_clean_seed_study(path=RESULTS):
    """The stored study: ``{"command", "n_epochs", "environment", "runs": [one dict per seed]}``."""
    return json.loads(Path(path).read_text())


def accuracy_claims(runs):
    """The held-out accuracy of every run (``clean_run``'s dicts), for ``expect_all``."""
    accuracies = [run["accuracy"] for run in runs]
    return [Claim(min(accuracies) >= 0.98, f"the ViT's held-out accuracy is at least 98% in every run "
                  f"({len(runs)} seeds)", accuracies)]


def shuffle_claims(runs):
    """Every run's accuracy with its patches in other orders, for ``expect_all``."""
    shuffled = [min(run["shuffled"]) for run in runs]
    return [Claim(min(shuffled) >= 0.9, f"with its patches in any of the {N_ORDERS} orders, every run still gets "
                  f"at least 90% ({len(runs)} seeds)", shuffled)]


def attention_claims(runs):
    """Where every run's CLS token looks, against the untrained models of the same seeds, for ``expect_all``."""
    weakest = [min(run["head_shares"]) for run in runs]
    strongest = [max(run["head_shares"]) for run in runs]
    untrained = max(max(run["untrained_shares"]) for run in runs)
    return [
        Claim(min(strongest) > 0.5, "in every run, at least one head gives more than half its patch attention to the "
              "line's patches", strongest),
        Claim(min(weakest) > untrained, "in every run, every trained head puts a larger share on the line than any "
              "untrained head", (weakest, untrained)),
        Claim(statistics.median(weakest) > untrained + 0.1, "in the median run, even the weakest trained head is more "
              "than 10 points above every untrained head", (weakest, untrained)),
        Claim(untrained < 0.45, "no untrained head puts more than 45% on the line's patches", untrained),
    ]


def clean_claims(runs):
    """What chapter 11 says of every run on the clean line task: the three groups of claims above."""
    return accuracy_claims(runs) + shuffle_claims(runs) + attention_claims(runs)


if __name__ == "__main__":
    torch.set_num_threads(1)
    RESULTS.parent.mkdir(exist_ok=True)
    study = clean_seed_study()
    head = json.dumps({key: value for key, value in study.items() if key != "runs"})[:-1]
    RESULTS.write_text(head + ', "runs": [\n' + ",\n".join(json.dumps(run) for run in study["runs"]) + "\n]}\n")
    print(f"wrote {RESULTS}")
