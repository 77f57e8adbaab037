"""Chapter 02's experiment: does the encoder need positions to tell a square's direction?

The decoder starts from a fixed start vector (the origin, the squares' centre), not from the
last source corner, so everything it knows about the order of the two source corners has to
come through the encoder. Three models, built after the same seed, are compared over seeds:

- ``"no PE"``: ``EncoderSelfAttn`` / ``DecoderSelfAttn``, blind to the order of the source;
- ``"scale only"``: ``EncoderPe`` / ``DecoderPe`` with the table zeroed, so only the input's
  ``×√2`` remains: still blind to the order, the control for the scaling;
- ``"PE"``: ``EncoderPe`` / ``DecoderPe``, the table added.
"""
import statistics

import torch
from torch import nn, optim
from torch.utils.data import DataLoader

from stepbystep.checks import check_positive_int
from stepbystep.expect import Claim
from stepbystep.models import DecoderPe, DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderPe, EncoderSelfAttn
from stepbystep.training import StepByStep

__all__ = ["FixedStartSeq2Seq", "ORDER_VARIANTS", "order_model", "train_order_model", "order_study", "order_claims",
           "hedging_share", "hedging_claims"]

ORDER_VARIANTS = ("no PE", "scale only", "PE")


class FixedStartSeq2Seq(EncoderDecoderSelfAttn):
    """``EncoderDecoderSelfAttn`` whose decoder reads a fixed start vector (zeros) first.

    Teacher forcing reads ``[start, target[:-1]]`` and greedy decoding starts from ``start``
    (``first_input``). The decoder never sees a source corner, so the source's order reaches it
    only through the encoder's states.
    """

    def __init__(self, encoder, decoder, input_len=2, target_len=2):
        super().__init__(encoder, decoder, input_len, target_len)
        self.register_buffer("start", torch.zeros(1, 1, self.n_features), persistent=False)  # (1, 1, F)

    def first_input(self, source_seq):
        return self.start.expand(len(source_seq), 1, self.n_features)  # (N, 1, F)


def order_model(variant, n_heads=3, d_model=2, ff_units=10):
    """A ``FixedStartSeq2Seq`` for the squares (2 features, 2 + 2 corners), one of ``ORDER_VARIANTS``."""
    if variant not in ORDER_VARIANTS:
        raise ValueError(f"variant must be one of {ORDER_VARIANTS}, got {variant!r}")
    if variant == "no PE":
        encoder = EncoderSelfAttn(n_heads, d_model, ff_units, n_features=2)
        decoder = DecoderSelfAttn(n_heads, d_model, ff_units, n_features=2)
    else:
        encoder = EncoderPe(n_heads, d_model, ff_units, n_features=2, max_len=2)
        decoder = DecoderPe(n_heads, d_model, ff_units, n_features=2, max_len=2)
        if variant == "scale only":
            encoder.pe.pe.zero_()  # the ×√2 stays, the positions go
            decoder.pe.pe.zero_()
    return FixedStartSeq2Seq(encoder, decoder)


def train_order_model(variant, train_data, test_data, seed, n_epochs=20, lr=0.01, batch_size=16):
    """Seed, build ``order_model(variant)`` and train it with MSE and Adam; returns the trainer.

    ``seed`` sets both the initial weights and the order of the mini-batches, so each seed is a
    full repeat of the run.

    The test loss (``val_losses``) is measured in eval mode: greedy, from the test sources alone.
    """
    check_positive_int("n_epochs", n_epochs)
    torch.manual_seed(seed)
    model = order_model(variant)
    sbs = StepByStep(model, nn.MSELoss(), optim.Adam(model.parameters(), lr=lr))
    sbs.set_loaders(DataLoader(train_data, batch_size=batch_size, shuffle=True),
                    DataLoader(test_data, batch_size=len(test_data)))
    sbs.train(n_epochs, seed=seed, progress=False)  # the batch order follows the seed too
    return sbs


def order_study(train_data, test_data, seeds, n_epochs=20):
    """Train every variant at every seed; returns ``{variant: [trainer per seed]}``."""
    if len(seeds) < 1:
        raise ValueError("seeds must name at least one seed")
    return {variant: [train_order_model(variant, train_data, test_data, seed, n_epochs) for seed in seeds]
            for variant in ORDER_VARIANTS}


def order_claims(losses):
    """The claims chapter 02 makes about the final test losses ``{variant: [loss per seed]}``, for ``expect_all``."""
    median = {variant: statistics.median(losses[variant]) for variant in ORDER_VARIANTS}
    blind = min(median["no PE"], median["scale only"])
    wins = sum(pe < min(plain, scaled) for pe, plain, scaled in
               zip(losses["PE"], losses["no PE"], losses["scale only"]))
    lowest_blind = min(losses["no PE"] + losses["scale only"])
    return [
        Claim(median["PE"] < 0.75 * blind, "the median test loss with positions is under three quarters of either "
              "order-blind model's", median),
        Claim(wins == len(losses["PE"]), "at every seed the model with positions beats both order-blind models",
              f"{wins} of {len(losses['PE'])} seeds"),
        Claim(lowest_blind > 0.45, "neither order-blind model gets below a test loss of 0.45 at any seed",
              lowest_blind),
        Claim(1 / 1.5 < median["scale only"] / median["no PE"] < 1.5, "the ×√2 alone moves the median test loss "
              "by less than a factor 1.5", median["scale only"] / median["no PE"]),
    ]


def hedging_share(source, predicted):
    """The share of squares whose first predicted corner lies nearer the midpoint of the two corners
    it could be than to either of them.

    ``source`` ``(N, 2, 2)`` and ``predicted`` ``(N, 2, 2)``. Corner 2 is opposite corner 0, so it
    is ``-x_0`` in the square's own direction and ``-x_1`` in the other (the source read backwards):
    a model blind to the order of the source cannot tell the two apart and does best between them.
    """
    source, predicted = torch.as_tensor(source), torch.as_tensor(predicted)
    if source.dim() != 3 or source.shape[1:] != (2, 2) or predicted.shape != source.shape:
        raise ValueError(f"source and predicted must both be (N, 2, 2), got {tuple(source.shape)} and "
                         f"{tuple(predicted.shape)}")
    first = predicted[:, 0]  # (N, 2): the predicted corner 2
    as_given, reversed_ = -source[:, 0], -source[:, 1]  # (N, 2) each: corner 2 in either direction
    to_middle = (first - (as_given + reversed_) / 2).norm(dim=-1)  # (N,)
    between = (to_middle < (first - as_given).norm(dim=-1)) & (to_middle < (first - reversed_).norm(dim=-1))  # (N,)
    return between.float().mean().item()


def hedging_claims(shares):
    """The claims chapter 02 makes about ``{variant: [hedging_share per seed]}``, for ``expect_all``."""
    blind = shares["no PE"] + shares["scale only"]
    median_pe = statistics.median(shares["PE"])
    return [
        Claim(min(blind) >= 0.9, "in every order-blind run, at least 90% of the first predicted corners lie nearer "
              "the midpoint of the two possible corners than to either", min(blind)),
        Claim(median_pe < 0.5, "with positions, under half of them do, in the median over the seeds", median_pe),
    ]
