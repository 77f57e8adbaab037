"""Chapter 09's two design studies over seeds: tied embeddings, and label smoothing's effect on
confidence, calibration and sampling."""
import copy
from dataclasses import dataclass, field

import torch
from torch.utils.data import DataLoader

from ..checks import check_instance, check_positive_int, check_positive_number
from ..data.date_completions import IGNORE_INDEX, CompletionDataset, completion_collate
from ..devices import evaluating, model_device
from ..models.gpt.model import DecoderOnlyTransformer, completion_loss
from ..seeding import get_rng_state, set_seed
from ..training import Callback, StepByStep
from ..training.schedules import linear_ramps

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


class _Evaluate(Callback):
    """The validation loss on ``val_batch`` every ``eval_every`` steps and after the last of ``n_steps``."""

    def __init__(self, val_batch, eval_every, n_steps):
        self.val_batch, self.eval_every, self.n_steps = val_batch, eval_every, n_steps
        self.steps, self.val_losses = [], []

    def record(self, trainer):
        step = trainer.total_steps
        if self.val_batch is not None and self.eval_every and (step % self.eval_every == 0 or step == self.n_steps):
            self.steps.append(step)
            self.val_losses.append(_val_loss(trainer.model, self.val_batch))

    def on_train_start(self, trainer):
        self.record(trainer)  # step 0: before training

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        self.record(trainer)


def train_steps(model, loader, n_steps, lr=7e-3, warmup_steps=20, loss_fn=completion_loss, val_batch=None,
                eval_every=None):
    """Adam for ``n_steps`` mini-batches (cycling ``loader``) through ``StepByStep.train_steps``:
    chapter 08's warm-up then linear decay to zero (``linear_ramps``), gradients clipped at norm 1,
    where the model lives, continuing the random streams as they are. Returns ``(steps, val_losses)``,
    measured every ``eval_every`` steps from step 0 (empty lists when ``val_batch`` is ``None``)."""
    check_positive_int("n_steps", n_steps)
    evaluate = _Evaluate(val_batch, eval_every, n_steps)
    trainer = StepByStep(model, loss_fn, torch.optim.Adam(model.parameters(), lr=lr), device=model_device(model),
                         callbacks=[evaluate])
    trainer.set_lr_scheduler(linear_ramps(trainer.optimizer, min(warmup_steps, n_steps - 1) or 1, n_steps),
                             interval="batch")
    trainer.set_clip_grad_norm(1.0)
    trainer.set_loaders(loader)
    trainer.rng_state = get_rng_state(loader)  # no seeding: the loader's own generator and the global streams go on
    trainer.train_steps(n_steps, progress=False)
    return evaluate.steps, evaluate.val_losses


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

