"""Chapter 05's claims about the Transformer's test MSE against simple predictions of the corners."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from stepbystep.data import square_splits
from stepbystep.expect import Claim
from stepbystep.models import build_transformer
from stepbystep.training import StepByStep

__all__ = ["baseline_claims", "score_gaps", "square_seed_spread"]


def baseline_claims(zeros, mirror, transformer, last_val_loss, noise_floor):
    """The test MSE of predicting zeros, of mirroring the source and of the Transformer, bounded.

    ``noise_floor`` is the targets' noise variance (0.1² for the squares); ``last_val_loss`` the
    Transformer's last validation loss. Returns the claims the text makes, for ``expect_all``.
    """
    return [
        Claim(0.9 < zeros < 1.1, "predicting zeros costs about the targets' variance, 1.01 (0.9 to 1.1)", zeros),
        Claim(0.015 < mirror < 0.025, "the mirror costs about 2 · 0.1² = 0.02 (0.015 to 0.025)", mirror),
        Claim(transformer < zeros / 20, "the Transformer is more than 20 times better than predicting zeros",
              transformer),
        Claim(transformer < 1.5 * mirror, "the Transformer's MSE is under 1.5 times the mirror's (it beats the mirror "
              "in most runs, not all)", transformer / mirror),
        Claim(transformer > noise_floor, "the Transformer stays above the noise floor", transformer),
        Claim(0.7 < transformer / last_val_loss < 1.4, "the test MSE is within 0.7 to 1.4 times the last validation loss",
              transformer / last_val_loss),
    ]


def score_gaps(alphas):
    """The gap between the two scaled scores of every row of two-key weights ``(..., 2)``: the
    softmax of ``(s_0, s_1)`` is ``α_0 / α_1 = e^(s_0 - s_1)``, so the gap is ``|log α_0 - log α_1|``.
    Returns a tensor of the rows' shape ``(...)``."""
    if alphas.shape[-1] != 2:
        raise ValueError(f"score_gaps reads rows of two weights (..., 2), got shape {tuple(alphas.shape)}")
    logs = alphas.double().clamp_min(1e-300).log()  # (..., 2)
    return (logs[..., 0] - logs[..., 1]).abs()  # (...)


def square_seed_spread(seeds, epochs=50, batch_size=16, n_draws=20):
    """Chapter 05's run again from each seed in ``seeds`` (initial weights, batch order, dropout masks).

    Trains ``build_transformer(seed=s)`` on the chapter's squares with Adam (lr 0.01) for
    ``epochs`` epochs and measures what the chapter claims about its run. Returns one dict per
    seed: ``first_val`` and ``final_val`` (the first and the last epoch's validation loss),
    ``below`` (epochs whose validation loss is below the training loss), ``mode_ratio`` (training
    mode's mean loss over ``n_draws`` dropout draws on the first 16 training sequences, over the
    eval-mode loss on them), ``draws_above``, ``teacher_forced_ratio`` (the teacher-forced loss
    with dropout off, over the eval-mode loss), ``weakest_head`` (the smallest mean cross-attention
    weight on the matching source corner over the validation squares, across layers, heads and
    target positions), ``matching`` (that weight's mean over all of them), ``cross_decided`` and
    ``encoder_decided`` (the mean of each row's largest weight, over the cross-attention and the
    encoder self-attention heads), and ``cross_gap`` and ``encoder_gap`` (the median gap between a
    row's two scaled scores, read from its weights: ``|log α_0 - log α_1|``), ``largest_jump`` (the
    largest factor by which the validation loss rose from one epoch to the next) and
    ``jumps_over_2`` (how many epochs it more than doubled), and on the test set, once:
    ``test_mse``, ``test_to_mirror`` (over the MSE of mirroring the source, ``-x_0, -x_1``) and
    ``test_to_val`` (over the last validation loss).
    """
    train_data, val_data, test_data = square_splits(train_seed=13, val_seed=19, test_seed=17)
    val_source, _ = val_data.tensors  # (128, 2, 2)
    test_source, test_target = test_data.tensors  # (128, 2, 2), (128, 2, 2)
    mirror = F.mse_loss(-test_source, test_target).item()  # the same for every seed
    full, target = train_data[:16]  # (16, 4, 2), (16, 2, 2)
    runs = []
    for seed in seeds:
        model = build_transformer(seed=seed)
        trainer = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01))
        trainer.set_loaders(DataLoader(train_data, batch_size=batch_size, shuffle=True, generator=torch.Generator()),
                            DataLoader(val_data, batch_size=len(val_data)))
        trainer.train(epochs, seed=seed, progress=False)
        model.cpu()
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(0)
            model.train()
            train_mode = torch.tensor([F.mse_loss(model(full), target).item() for _ in range(n_draws)])  # (n_draws,)
            model.eval()
            eval_mode = F.mse_loss(model(full[:, :2]), target).item()  # greedy
            model.encode(full[:, :2])
            teacher_forced = F.mse_loss(model.decode(full[:, 1:3], target_mask=model.trg_masks), target).item()
            model.predict(val_source)  # fills every cross-attention's alphas
            cross = torch.stack([layer.cross_attn_heads.alphas for layer in model.decoder.layers])  # (2, 128, 3, 2, 2)
            matching = cross.diagonal(dim1=-2, dim2=-1).mean(dim=1)  # (2, 3, 2): layers, heads, positions
            encoder_self = torch.stack([layer.self_attn_heads.alphas for layer in model.encoder.layers])  # (2, 128, 3, 2, 2)
            test_mse = F.mse_loss(torch.as_tensor(model.predict(test_source)), test_target).item()
        val = torch.tensor(trainer.val_losses)  # (epochs,)
        jumps = val[1:] / val[:-1]  # (epochs - 1,): each epoch's validation loss over the one before
        runs.append({
            "seed": seed,
            "first_val": trainer.val_losses[0],
            "final_val": trainer.val_losses[-1],
            "below": sum(val < train for train, val in zip(trainer.losses, trainer.val_losses)),
            "mode_ratio": train_mode.mean().item() / eval_mode,
            "draws_above": int((train_mode > eval_mode).sum()),
            "teacher_forced_ratio": teacher_forced / eval_mode,
            "weakest_head": matching.min().item(),
            "matching": matching.mean().item(),
            "cross_decided": cross.max(dim=-1).values.mean().item(),
            "encoder_decided": encoder_self.max(dim=-1).values.mean().item(),
            "cross_gap": score_gaps(cross).median().item(),
            "encoder_gap": score_gaps(encoder_self).median().item(),
            "largest_jump": jumps.max().item(),
            "jumps_over_2": int((jumps > 2).sum()),
            "test_mse": test_mse,
            "test_to_mirror": test_mse / mirror,
            "test_to_val": test_mse / trainer.val_losses[-1],
        })
    return runs
