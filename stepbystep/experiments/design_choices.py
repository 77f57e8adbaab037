"""Chapter 09's two design studies over seeds: tied embeddings, and label smoothing's effect on
confidence, calibration and sampling."""
import copy
from dataclasses import dataclass, field

import torch
from torch.optim.lr_scheduler import LinearLR, SequentialLR
from torch.utils.data import DataLoader

from ..checks import check_instance, check_positive_int, check_positive_number
from ..data.date_completions import IGNORE_INDEX, CompletionDataset, completion_collate
from ..devices import evaluating, model_device
from ..models.gpt.model import DecoderOnlyTransformer, completion_loss
from ..seeding import set_seed

__all__ = ["SeedRun", "train_steps", "tied_embedding_study", "completion_calibration", "smoothing_study", "cap"]


@dataclass
class SeedRun:
    """One seeded run: the validation loss at ``steps`` (step 0 = before training), and the
    standard deviation of the initial logits."""
    seed: int
    steps: list = field(default_factory=list)
    val_losses: list = field(default_factory=list)
    initial_logit_std: float = float("nan")


def _loader(pairs, vocab, batch_size, seed, completion_only=True):
    data = CompletionDataset(pairs, vocab, completion_only=completion_only)
    return DataLoader(data, batch_size=batch_size, shuffle=True, collate_fn=completion_collate,
                      generator=torch.Generator().manual_seed(seed))


def _val_loss(model, val_batch):
    x, y = (t.to(model_device(model)) for t in val_batch)
    with evaluating(model), torch.no_grad():
        return completion_loss(model(x), y).item()


def train_steps(model, loader, n_steps, lr=7e-3, warmup_steps=20, loss_fn=completion_loss, val_batch=None,
                eval_every=None):
    """Adam for ``n_steps`` mini-batches (cycling ``loader``): linear warm-up, then linear decay to
    zero; gradients clipped at norm 1. Returns ``(steps, val_losses)``, measured every
    ``eval_every`` steps from step 0 (empty lists when ``val_batch`` is ``None``)."""
    check_positive_int("n_steps", n_steps)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    warmup_steps = min(warmup_steps, n_steps - 1) or 1
    scheduler = SequentialLR(optimizer, [
        LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps),
        LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=max(n_steps - warmup_steps, 1)),
    ], milestones=[warmup_steps])
    steps, val_losses = [], []

    def record(step):
        if val_batch is not None and eval_every and (step % eval_every == 0 or step == n_steps):
            steps.append(step)
            val_losses.append(_val_loss(model, val_batch))

    record(0)
    step = 0
    model.train()
    while step < n_steps:
        for x, y in loader:
            x, y = x.to(model_device(model)), y.to(model_device(model))
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            record(step)
            if step == n_steps:
                break
    model.eval()
    return steps, val_losses


def tied_embedding_study(vocab, train_pairs, val_pairs, seeds=(0, 1, 2), n_steps=200, eval_every=25,
                         batch_size=32, **model_kwargs):
    """Tied and untied ``DecoderOnlyTransformer``s trained alike, once per seed (same data order).

    ``model_kwargs`` build the model (``tie_weights`` is set here). Returns
    ``{"untied": [SeedRun, ...], "tied": [...]}``, each run's validation loss from step 0.
    """
    check_instance("seeds", seeds, (list, tuple), "a list of ints")
    val_batch = next(iter(DataLoader(CompletionDataset(val_pairs, vocab), batch_size=len(val_pairs),
                                     collate_fn=completion_collate)))
    runs = {"untied": [], "tied": []}
    for seed in seeds:
        for name in runs:
            set_seed(seed)
            model = DecoderOnlyTransformer(len(vocab), tie_weights=name == "tied", **model_kwargs)
            with evaluating(model), torch.no_grad():
                logit_std = model(val_batch[0]).std().item()  # (N, L, V) logits -> one number
            steps, losses = train_steps(model, _loader(train_pairs, vocab, batch_size, seed), n_steps,
                                        val_batch=val_batch, eval_every=eval_every)
            runs[name].append(SeedRun(seed, steps, losses, logit_std))
    return runs


def completion_calibration(model, vocab, pairs, n_bins=10):
    """How far the model's confidence on the completion tokens can be trusted, teacher-forced.

    Returns a dict: ``confidence`` (mean top probability), ``accuracy`` (the top token is the
    target), ``ece`` (expected calibration error over ``n_bins`` equal-width confidence bins),
    ``target_probability`` (mean probability of the target) and ``whole_answer`` (the mean over
    streams of the product of the targets' probabilities: the chance that sampling at T = 1
    writes the whole answer, ``<eos>`` included, right).
    """
    x, y = next(iter(DataLoader(CompletionDataset(pairs, vocab), batch_size=len(pairs),
                                collate_fn=completion_collate)))
    x, y = x.to(model_device(model)), y.to(model_device(model))
    with evaluating(model), torch.no_grad():
        probs = torch.softmax(model(x).float(), dim=-1)  # (N, L, V)
    counted = y != IGNORE_INDEX  # (N, L)
    top, predicted = probs.max(dim=-1)  # (N, L), (N, L)
    target_probs = probs.gather(-1, y.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (N, L)
    confidence, correct = top[counted], (predicted == y)[counted].float()  # (n,), (n,)
    bins = torch.clamp((confidence * n_bins).long(), max=n_bins - 1)  # (n,)
    ece = 0.0
    for b in range(n_bins):
        inside = bins == b
        if inside.any():
            ece += inside.float().mean().item() * abs(confidence[inside].mean().item() - correct[inside].mean().item())
    whole = torch.where(counted, target_probs.log(), torch.zeros_like(target_probs)).sum(dim=-1).exp()  # (N,)
    return {"confidence": confidence.mean().item(), "accuracy": correct.mean().item(), "ece": ece,
            "target_probability": target_probs[counted].mean().item(), "whole_answer": whole.mean().item()}


def smoothing_study(model, vocab, train_pairs, val_pairs, epsilons=(0.0, 0.1), seeds=(0, 1, 2), n_steps=40,
                    lr=1e-3, batch_size=32, score=None):
    """Continue copies of a trained ``model`` for ``n_steps`` with each label smoothing ``epsilon``,
    once per seed (the data order). Returns ``{epsilon: [dict, ...]}``, one dict per seed with
    ``completion_calibration``'s numbers and, when ``score(model) -> float`` is given, ``exact``."""
    check_instance("epsilons", epsilons, (list, tuple), "a list of numbers in [0, 1)")
    results = {epsilon: [] for epsilon in epsilons}
    for seed in seeds:
        for epsilon in epsilons:
            if epsilon:
                check_positive_number("epsilon", epsilon)
            set_seed(seed)
            candidate = copy.deepcopy(model)

            def loss_fn(logits, targets, epsilon=epsilon):
                return completion_loss(logits, targets, label_smoothing=epsilon)

            train_steps(candidate, _loader(train_pairs, vocab, batch_size, seed), n_steps, lr=lr,
                        warmup_steps=max(n_steps // 4, 1), loss_fn=loss_fn)
            numbers = completion_calibration(candidate, vocab, val_pairs)
            if score is not None:
                numbers["exact"] = score(candidate)
            numbers["seed"] = seed
            results[epsilon].append(numbers)
    return results


def cap(epsilon, vocab_size):
    """The target probability label smoothing asks for: ``1 - ε + ε/V``."""
    return 1 - epsilon + epsilon / vocab_size

