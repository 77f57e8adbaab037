"""Chapter 11's position experiments: does the ViT use where its patches are?

``shuffled_logits`` runs a trained ``ViT`` with its patch tokens put in another order before
the positions are added: a model that ignores positions gives the same answers. The
``position_models`` trains, over several seeds, the chapter's ViT, the same ViT that never
sees a patch's position (its patch tokens shuffled anew for every image, in training and in
test), and the chapter's CNN, on a task of our choice; ``position_runs`` returns their held-out
accuracies. ``top_bottom_similarity`` reads what a trained ViT's learned position table holds:
do the patches of the top row point away from those of the bottom row?
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import OneCycleLR

from ..checks import check_instance, check_positive_int, check_tensor
from ..devices import evaluating, model_device, move_to
from ..expect import Claim
from ..models import EncoderLayer, EncoderTransf, ViT
from ..seeding import get_rng_state
from ..training import StepByStep

__all__ = ["shuffled_logits", "ShuffledPatches", "small_vit", "small_cnn", "epochs_for_steps", "fit", "accuracy",
           "predicted_classes", "position_models", "position_runs", "POSITION_MODELS", "blind_ceiling",
           "position_claims", "position_similarity", "top_bottom_similarity", "table_claims"]

POSITION_MODELS = ("ViT", "ViT, patches shuffled", "CNN")


def _with_patches(model, images, order):
    """The logits of ``model`` when ``order`` ``(N, n_patches)`` rearranges each image's patch tokens
    before the CLS token and the positions are added."""
    patches = model.embed(images)  # (N, n_patches, d_model)
    index = order[..., None].expand_as(patches)  # (N, n_patches, d_model)
    patches = patches.gather(1, index)  # (N, n_patches, d_model): patch order[i, j] at place j
    cls_tokens = model.cls_token.expand(images.size(0), -1, -1)  # (N, 1, d_model)
    source = torch.cat((cls_tokens, patches), dim=1)  # (N, 1 + n_patches, d_model)
    if model.pos_embed is not None:
        source = source + model.pos_embed  # the positions of the places, not of the patches
    return model.mlp(model.pool(model.encode(source)))  # (N, n_outputs)


def shuffled_logits(model, images, permutation):
    """``model``'s logits ``(N, n_outputs)``, on the CPU, with every image's patch tokens in the order
    ``permutation`` (a 1-D permutation of ``0 .. n_patches - 1``), in eval mode, without gradients.
    ``images`` and ``permutation`` go to the model's device first."""
    check_instance("model", model, ViT)
    check_tensor("images", images)
    check_tensor("permutation", permutation)
    n_patches = model.embed.n_patches
    if permutation.dim() != 1 or not torch.equal(permutation.cpu().sort().values, torch.arange(n_patches)):
        raise ValueError(f"permutation must hold 0 .. {n_patches - 1} once each, got {permutation.tolist()}")
    images, permutation = move_to((images, permutation), model_device(model))
    with evaluating(model):
        return _with_patches(model, images, permutation.expand(images.size(0), -1)).cpu()  # (N, n_outputs)


class ShuffledPatches(nn.Module):
    """A ``ViT`` that never knows where a patch is: each call puts every image's patch tokens in a
    fresh random order (from its own ``generator``) before the positions are added."""

    def __init__(self, vit, seed=0):
        super().__init__()
        check_instance("vit", vit, ViT)
        self.vit = vit
        self.generator = torch.Generator().manual_seed(seed)

    def forward(self, images):
        noise = torch.rand(images.size(0), self.vit.embed.n_patches, generator=self.generator)  # (N, n_patches)
        return _with_patches(self.vit, images, noise.argsort(dim=1).to(images.device))  # (N, n_outputs)


def small_vit(seed, n_outputs, img_size=12, patch_size=4):
    """The chapter's ViT: d_model 16, 4 heads, 20 hidden units, one layer, no dropout, seeded."""
    torch.manual_seed(seed)
    layer = EncoderLayer(n_heads=4, d_model=16, ff_units=20, dropout=0.0)
    return ViT(EncoderTransf(layer, n_layers=1), img_size=img_size, in_channels=1, patch_size=patch_size,
               n_outputs=n_outputs)


def small_cnn(seed, n_outputs):
    """The chapter's CNN for 12×12 images: two 3×3 convolutions with ReLU and 2×2 pooling, a linear head."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 12, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (N, 12, 6, 6)
        nn.Conv2d(12, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (N, 16, 3, 3)
        nn.Flatten(), nn.Linear(16 * 3 * 3, n_outputs),  # (N, n_outputs)
    )


class _Shuffled:
    """Mini-batches ``(images, labels)`` of ``batch_size``, in a new order every pass, drawn by ``generator``."""

    def __init__(self, images, labels, batch_size, generator):
        self.images, self.labels, self.batch_size, self.generator = images, labels, batch_size, generator

    def __len__(self):
        return -(-len(self.labels) // self.batch_size)

    def __iter__(self):
        order = torch.randperm(len(self.labels), generator=self.generator)  # (n,)
        for batch in order.split(self.batch_size):
            batch = batch.to(self.labels.device)  # (B,)
            yield self.images[batch], self.labels[batch]


def epochs_for_steps(n_steps, n_train, batch_size=32):
    """The fewest epochs of ``n_train`` images in mini-batches of ``batch_size`` that make at least ``n_steps``
    steps: a fixed budget of steps for training sets of any size."""
    for name, value in (("n_steps", n_steps), ("n_train", n_train), ("batch_size", batch_size)):
        check_positive_int(name, value)
    batches = -(-n_train // batch_size)  # mini-batches per epoch, the last one partial
    return -(-n_steps // batches)


def fit(model, train_data, n_epochs=16, batch_size=32, lr=1e-2, seed=0, n_steps=None):
    """The chapter's recipe: cross-entropy, Adam, one-cycle schedule; batches drawn with ``seed``, through
    ``StepByStep.train``. Trains where the model lives (the data follows it); returns the model in eval mode.
    ``n_steps``, if given, replaces ``n_epochs`` by ``epochs_for_steps(n_steps, len(train_data), batch_size)``."""
    if n_steps is not None:
        n_epochs = epochs_for_steps(n_steps, len(train_data), batch_size)
    check_positive_int("n_epochs", n_epochs)
    check_positive_int("batch_size", batch_size)
    images, labels = move_to(train_data.tensors, model_device(model))  # (n, 1, s, s), (n,)
    batches = _Shuffled(images, labels, batch_size, torch.Generator().manual_seed(seed))
    trainer = StepByStep(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=lr),
                         device=model_device(model))
    trainer.set_lr_scheduler(OneCycleLR(trainer.optimizer, max_lr=lr, total_steps=n_epochs * len(batches)))
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state(batches)  # no seeding: the batches' own generator and the global streams go on
    trainer.train(n_epochs, progress=False)
    return model


def accuracy(model, data):
    """Held-out accuracy of ``model`` on a ``TensorDataset`` of images and labels (moved to the model's
    device), in eval mode, the model's mode restored."""
    images, labels = move_to(data.tensors, model_device(model))  # (n, 1, s, s), (n,)
    with evaluating(model):
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def predicted_classes(model, images):
    """``model``'s class for each image, ``(n,)`` on the CPU: the largest logit, in eval mode, the model's
    mode restored (``images`` go to the model's device)."""
    with evaluating(model):
        return model(images.to(model_device(model))).argmax(dim=1).cpu()  # (n,)


def position_models(train_data, n_outputs, seeds=(0, 1, 2), n_epochs=16, names=POSITION_MODELS, n_steps=None):
    """The models ``names`` (some of ``POSITION_MODELS``), each trained with ``fit`` once per seed:
    ``{name: [model per seed]}``, in eval mode. The seed fixes the initial weights and the order of
    the batches (and the blind ViT's orders); ``n_steps``, if given, fixes the steps instead of the epochs."""
    if len(seeds) < 1:
        raise ValueError("seeds must hold at least one seed")
    unknown = [name for name in names if name not in POSITION_MODELS]
    if unknown or not names:
        raise ValueError(f"names must be some of {POSITION_MODELS}, got {list(names)}")
    builders = {
        "ViT": lambda seed: small_vit(seed, n_outputs),
        "ViT, patches shuffled": lambda seed: ShuffledPatches(small_vit(seed, n_outputs), seed),
        "CNN": lambda seed: small_cnn(seed, n_outputs),
    }
    return {name: [fit(builders[name](seed), train_data, n_epochs, seed=seed, n_steps=n_steps) for seed in seeds]
            for name in names}


def position_runs(train_data, val_data, n_outputs, seeds=(0, 1, 2), n_epochs=16, n_steps=None):
    """Held-out accuracy of each of ``POSITION_MODELS`` for each seed: a dict of ``(len(seeds),)`` tensors.
    The seed fixes the initial weights and the order of the batches; ``n_steps``, if given, the steps
    each model trains for (``epochs_for_steps``), whatever the size of ``train_data``."""
    models = position_models(train_data, n_outputs, seeds, n_epochs, n_steps=n_steps)
    return {name: torch.tensor([accuracy(model, val_data) for model in trained]) for name, trained in models.items()}


def blind_ceiling(rows, labels, patch_size=4):
    """The best accuracy on ``labels`` ``(n,)`` of any rule that knows a bar's row ``rows`` ``(n,)``
    only within its patch (``row % patch_size``): for each such row, the majority label's share."""
    check_tensor("rows", rows)
    check_tensor("labels", labels)
    check_positive_int("patch_size", patch_size)
    if rows.shape != labels.shape or rows.dim() != 1:
        raise ValueError(f"rows and labels must be two (n,) tensors, got {tuple(rows.shape)} and {tuple(labels.shape)}")
    right = 0
    for within in range(patch_size):
        chosen = labels[rows % patch_size == within]  # the labels of the bars at this row inside their patch
        if len(chosen):
            right += int(torch.bincount(chosen).max())
    return right / len(labels)


def position_claims(results, ceiling):
    """The bar task's claims: the ViT and the CNN learn it, the ViT blind to positions cannot."""
    vit, blind, cnn = (results[name] for name in POSITION_MODELS)
    return [
        Claim(bool(vit.median() >= 0.95) and bool(vit.min() >= ceiling + 0.15),
              "the ViT's median is at least 95%, and every seed is at least 15 points above the blind ceiling",
              (vit, ceiling)),
        Claim(bool(blind.max() <= ceiling + 0.03) and bool(blind.max() < vit.min()),
              "the ViT blind to positions stays within 3 points of the best a blind rule can do, below every ViT seed",
              (blind, ceiling)),
        Claim(bool(cnn.min() >= 0.98) and bool(cnn.median() >= vit.median()),
              "the CNN gets at least 98% in every seed, its median at least the ViT's", (cnn, vit)),
    ]


def position_similarity(model):
    """The cosine similarity between the learned position vectors of every two patches,
    ``(n_patches, n_patches)`` on the CPU, the CLS token's row left out. ``model``: a ``ViT`` with
    ``pos_embed``, or a ``ShuffledPatches`` around one."""
    vit = model.vit if isinstance(model, ShuffledPatches) else model
    check_instance("model", vit, ViT, "a ViT or a ShuffledPatches")
    if vit.pos_embed is None:
        raise ValueError("this ViT has no learned position table (learned_positions=False)")
    rows = F.normalize(vit.pos_embed.detach()[0, 1:].cpu(), dim=-1)  # (n_patches, d_model): unit vectors
    return rows @ rows.T  # (n_patches, n_patches)


def top_bottom_similarity(model):
    """The mean cosine similarity between the position vector of a patch in the grid's top row and
    that of a patch in its bottom row: below 0 when the two rows point apart."""
    similarity = position_similarity(model)  # (n_patches, n_patches)
    grid = round(similarity.shape[0] ** 0.5)
    return similarity[:grid, -grid:].mean().item()  # top row's patches against the bottom row's


def table_claims(vit, blind):
    """The position tables' claim: ``vit`` and ``blind`` hold ``top_bottom_similarity`` per seed, of the
    ViT trained on the bar task and of its blind control."""
    vit, blind = torch.as_tensor(vit), torch.as_tensor(blind)
    return [
        Claim(bool(vit.max() < 0), "in every seed of the ViT, the top row's position vectors point away from the "
              "bottom row's (mean cosine below 0)", vit),
        Claim(bool(vit.max() < blind.min()), "every seed of the blind control lies above every seed of the ViT",
              (vit, blind)),
    ]
