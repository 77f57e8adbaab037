"""A mixture of experts against dense blocks (chapter 17), on a task that mixes four clearly
different sub-tasks: a task token says whether to copy, reverse, sort or add one to (mod 10) the
``DIGITS`` digits that follow, and the model writes the answer after a separator.

Three blocks, all today's (RoPE, RMSNorm, SwiGLU): a mixture of ``N_EXPERTS`` SwiGLU experts, each
token sent to ``TOP_K`` (Shazeer et al., Outrageously Large Neural Networks, 2017; Fedus et al.,
Switch Transformers, 2021/2022), trained with the load-balancing loss; a dense block with as many
parameters per token as the mixture uses (the same ACTIVE parameters) and one with as many as the
mixture holds (the same TOTAL), their widths chosen by ``parameter_counts``. Over ``SEEDS``, the
loss and the exact-answer accuracy on fresh sequences; which expert each sub-task's tokens go to
(``routing_table``); and, trained without the balancing loss, how much of the load its busiest
expert takes (collapse) against the same runs with it.
"""
import sys

import torch

from ...data.special_tokens import IGNORE_INDEX
from ...expect import Claim
from ...models.gpt.config import DecoderConfig
from ...models.gpt.model import completion_loss
from ...models.gpt.parameter_counts import parameter_counts
from ...models.mixture_of_experts import MixtureOfExperts, with_load_balancing
from .recipe import load_study, median, run_at, spread, thread_count, train_decoder, write_study

__all__ = ["SEEDS", "SUB_TASKS", "PAIRS", "N_EXPERTS", "TOP_K", "BALANCE", "BLOCKS", "moe_config", "matched_dense",
           "block_configs", "mixed_batch", "routing_table", "initial_routing", "busiest_share", "pair_distances",
           "task_distance", "experts_run", "experts_study", "load_experts_study", "routing_distances",
           "routing_pairs_table", "experts_claims", "experts_live", "experts_table"]

SEEDS = tuple(range(3))
SUB_TASKS = ("copy", "reverse", "sort", "add one")
DIGITS, N_EXPERTS, TOP_K, EXPERT_UNITS, D_MODEL, STEPS, BATCH, LR = 6, 4, 1, 32, 32, 600, 32, 1e-2
BALANCE = 0.01  # Switch Transformer's coefficient of the load-balancing loss
SEP = 10 + len(SUB_TASKS)  # ids: digits 0-9, the task tokens 10-13, the separator 14
VOCAB = SEP + 1
LENGTH = 2 * DIGITS + 1  # the task token, the digits, the separator, the answer; minus the last as input
PAIRS = tuple((i, j) for i in range(len(SUB_TASKS)) for j in range(i + 1, len(SUB_TASKS)))  # sub-task pairs
BLOCKS = ("mixture", "dense, same active", "dense, same total", "mixture, no balancing loss")
NAME = "after_llama_experts"


def moe_config(n_experts=N_EXPERTS, top_k=TOP_K, expert_units=EXPERT_UNITS, d_model=D_MODEL):
    """Today's block with a mixture of ``n_experts`` SwiGLU experts of ``expert_units``, ``top_k`` per token,
    weighted by the router's probability as Switch Transformer weighs it, not renormalised: with one
    expert a renormalised weight is always 1, and the task's loss would give the router no gradient."""
    return DecoderConfig.llama(VOCAB, d_model=d_model, n_heads=4, n_layers=2, n_kv_heads=4, max_len=LENGTH,
                               ff_units=expert_units, n_experts=n_experts, experts_per_token=top_k,
                               norm_topk_prob=False)


def matched_dense(config, count="active"):
    """The dense block (``n_experts=None``) whose SwiGLU width makes its parameter count closest to
    ``config``'s ``count`` (``"active"`` or ``"total"``, from ``parameter_counts``)."""
    if count not in ("active", "total"):
        raise ValueError(f"count must be 'active' or 'total', got {count!r}")
    target = getattr(parameter_counts(config), count)
    dense = config.replace(n_experts=None, expert_ff_units=None)
    width = min(range(1, 64 * config.d_model), key=lambda f: abs(parameter_counts(dense.replace(ff_units=f)).total - target))
    return dense.replace(ff_units=width)


def block_configs():
    """``{block: DecoderConfig}`` for ``BLOCKS`` (the mixture with and without its loss share a config)."""
    moe = moe_config()
    return {"mixture": moe, "dense, same active": matched_dense(moe, "active"),
            "dense, same total": matched_dense(moe, "total"), "mixture, no balancing loss": moe}


def _answers(task, digits):
    """The answer to sub-task ``task`` (an index of ``SUB_TASKS``) for ``digits`` ``(n, DIGITS)``."""
    if task == 0:
        return digits
    if task == 1:
        return digits.flip(1)
    if task == 2:
        return digits.sort(dim=1).values
    return (digits + 1) % 10


def mixed_batch(n, generator, tasks=None):
    """``n`` sequences ``[task token, digits, separator, answer]``: ids ``(n, LENGTH)`` (the last
    token left out) and targets ``(n, LENGTH)`` (the answer's tokens; the rest ``IGNORE_INDEX``), and the
    sub-task of each ``(n,)``. ``tasks``: ``(n,)`` sub-task indices, drawn if ``None``."""
    if tasks is None:
        tasks = torch.randint(0, len(SUB_TASKS), (n,), generator=generator)  # (n,)
    digits = torch.randint(0, 10, (n, DIGITS), generator=generator)  # (n, D)
    answers = torch.empty_like(digits)  # (n, D)
    for task in range(len(SUB_TASKS)):
        rows = tasks == task
        answers[rows] = _answers(task, digits[rows])
    sequence = torch.cat([(10 + tasks)[:, None], digits, torch.full((n, 1), SEP), answers], dim=1)  # (n, LENGTH + 1)
    targets = sequence[:, 1:].clone()  # (n, LENGTH)
    targets[:, :DIGITS + 1] = IGNORE_INDEX  # only the answer is scored
    return sequence[:, :-1], targets, tasks


def _moe_layers(model):
    return [m for m in model.modules() if isinstance(m, MixtureOfExperts)]


def routing_table(model, generator, n=256):
    """Which experts each sub-task's tokens go to: ``(layers, sub-tasks, experts)``, the share of the
    sub-task's routing choices (every token of its sequences, ``TOP_K`` each) per expert, each row summing to 1."""
    tables = []
    with torch.no_grad():
        for task in range(len(SUB_TASKS)):
            ids, _, _ = mixed_batch(n, generator, torch.full((n,), task))
            model(ids)
            tables.append(torch.stack([layer.fraction / layer.fraction.sum() for layer in _moe_layers(model)]))
    return torch.stack(tables, dim=1)  # (layers, tasks, experts)


def busiest_share(table):
    """The busiest expert's share of all the routing choices, per layer, from a ``routing_table``
    ``(layers, tasks, experts)`` (the sub-tasks weighed equally): ``(layers,)``; ``1 / E``: balanced, 1: collapsed."""
    return table.mean(dim=1).max(dim=-1).values  # (layers,)


def _distance(a, b):
    """Total-variation distance between routing rows ``(..., E)``: half the summed absolute difference."""
    return (a - b).abs().sum(dim=-1) / 2


def pair_distances(table):
    """The total-variation distance between every two sub-tasks' rows of a ``routing_table``
    ``(layers, tasks, experts)``, in the order of ``PAIRS``: ``(layers, pairs)``."""
    return torch.stack([_distance(table[:, i], table[:, j]) for i, j in PAIRS], dim=-1)  # (layers, pairs)


def task_distance(table):
    """How differently the sub-tasks are routed, per layer: the mean of ``pair_distances``: ``(layers,)``
    (0: every sub-task routed alike; 1: to disjoint experts)."""
    return pair_distances(table).mean(dim=-1)  # (layers,)


def _scores(model, generator, n=512):
    """Loss and exact-answer accuracy (every answer digit right) on ``n`` fresh sequences."""
    ids, targets, _ = mixed_batch(n, generator)
    with torch.no_grad():
        logits = model(ids)  # (n, L, V)
    scored = targets != IGNORE_INDEX  # (n, L)
    right = (logits.argmax(dim=-1) == targets) | ~scored  # (n, L)
    return completion_loss(logits, targets).item(), right.all(dim=1).float().mean().item()


def initial_routing(config, seed):
    """The ``routing_table`` of ``config``'s model untrained, built under ``seed`` as ``train_decoder``
    builds it: the control for what training does to the routing (the task token alone already sets
    the sub-tasks apart, even through a random router)."""
    torch.manual_seed(seed)
    return routing_table(config.build().eval(), torch.Generator().manual_seed(98))  # (layers, tasks, experts)


def experts_run(block, seed, steps=STEPS):
    """One run of ``block`` (one of ``BLOCKS``): ``{"loss", "accuracy", "diverged", "losses"}``, and for
    mixtures the routing table, its busiest share and task distance, the table's own noise (two
    samples of each sub-task's) and the same seed's table at initialisation (``initial_routing``)."""
    config = block_configs()[block]
    generator = torch.Generator().manual_seed(3000 + seed)
    batches = [mixed_batch(BATCH, generator)[:2] for _ in range(steps)]
    balance = None
    if block == "mixture":
        def balance(model):
            return with_load_balancing(completion_loss, model, BALANCE)
    model, losses, diverged = train_decoder(config, batches, seed, LR, loss_fn=balance)
    loss, accuracy = _scores(model, torch.Generator().manual_seed(99))
    run = {"loss": loss, "accuracy": accuracy, "diverged": diverged, "losses": [round(x, 4) for x in losses]}
    if config.n_experts is not None:
        table = routing_table(model, torch.Generator().manual_seed(98))
        again = routing_table(model, torch.Generator().manual_seed(97))  # other sequences: the table's own noise
        run.update(routing=table.tolist(), busiest=busiest_share(table).tolist(),
                   task_distance=task_distance(table).tolist(),
                   noise_distance=_distance(table, again).tolist(),
                   initial_routing=initial_routing(config, seed).tolist())
    return run


def experts_study(seeds=SEEDS, default_threads=False, steps=STEPS):
    """Every block of ``BLOCKS`` for ``seeds``: ``{"seeds", "steps", "parameters": {block: [total,
    active]}, "torch", "runs": {block: [run, ...]}}``."""
    runs = run_at(thread_count(default_threads),
                  lambda: {block: [experts_run(block, seed, steps) for seed in seeds] for block in BLOCKS})
    return {"seeds": list(seeds), "steps": steps, "n_experts": N_EXPERTS, "top_k": TOP_K, "balance": BALANCE,
            "parameters": {block: list(parameter_counts(config)) for block, config in block_configs().items()},
            "torch": torch.__version__, "threads": "default" if default_threads else 1, "runs": runs}


def load_experts_study(default_threads=False):
    """The stored study (``python -m stepbystep.experiments.after_llama.experts``)."""
    return load_study(NAME, default_threads)


def experts_table(study):
    """One line per block: parameters (total, active), loss and accuracy, median (min-max)."""
    lines = [f"{'block':>27} {'total':>6} {'active':>6} {'loss':>20} {'accuracy':>20} {'busiest expert':>20}"]
    for block, runs in study["runs"].items():
        total, active = study["parameters"][block]
        cells = []
        for values in ([r["loss"] for r in runs], [r["accuracy"] for r in runs]):
            m, lo, hi = spread(values)
            cells.append(f"{m:.3f} ({lo:.3f}-{hi:.3f})")
        busiest = ""
        if "busiest" in runs[0]:
            m, lo, hi = spread([max(r["busiest"]) for r in runs])
            busiest = f"{m:.2f} ({lo:.2f}-{hi:.2f})"
        lines.append(f"{block:>27} {total:>6} {active:>6} {cells[0]:>20} {cells[1]:>20} {busiest:>20}")
    return "\n".join(lines)


def _runs(study, block, key):
    return [run[key] for run in study["runs"][block]]


def routing_distances(study, block="mixture"):
    """Per layer, each seed's task distance after training and at initialisation (the same seed's
    untrained model): ``(trained, initial)``, each ``(layers, seeds)``."""
    trained = torch.tensor(_runs(study, block, "task_distance")).T  # (layers, seeds)
    initial = torch.stack([task_distance(torch.tensor(t)) for t in _runs(study, block, "initial_routing")], dim=1)
    return trained, initial  # (layers, seeds) each


def routing_pairs_table(study, block="mixture"):
    """One line per pair of sub-tasks: its routing distance in each layer after training and at
    initialisation, median (min-max) over the seeds."""
    def cells(tables):
        distances = torch.stack([pair_distances(torch.tensor(t)) for t in tables])  # (seeds, layers, pairs)
        return [[f"{m:.2f} ({lo:.2f}-{hi:.2f})" for m, lo, hi in (spread(distances[:, layer, pair])
                                                                 for layer in range(distances.shape[1]))]
                for pair in range(len(PAIRS))]
    trained, initial = cells(_runs(study, block, "routing")), cells(_runs(study, block, "initial_routing"))
    n_layers = len(trained[0])
    header = "".join(f"{f'layer {layer + 1} trained':>18} {'untrained':>17}" for layer in range(n_layers))
    lines = [f"{'sub-tasks':>19}{header}"]
    for (i, j), after, before in zip(PAIRS, trained, initial):
        row = "".join(f"{a:>18} {b:>17}" for a, b in zip(after, before))
        lines.append(f"{SUB_TASKS[i] + ' / ' + SUB_TASKS[j]:>19}{row}")
    return "\n".join(lines)


def experts_claims(study):
    """What the chapter says, as the seeds show it. The control for the routing is the same seed's
    router at initialisation (the task token is an input, so even a random router sends the
    sub-tasks a little apart): in every layer training separates them beyond any untrained seed,
    and in the first layer so does training on the task's loss alone (the mixture without the
    balancing loss, whose untrained router is the same). The balancing loss keeps the load spread and without it the
    busiest expert takes more; the accuracy ranges of the mixture and of the dense block of the same
    active parameters overlap (three seeds cannot order them, nor the mixture against the same-total
    block: no claim is made there)."""
    trained, initial = routing_distances(study)  # (layers, seeds) each
    task_only, _ = routing_distances(study, "mixture, no balancing loss")  # (layers, seeds): the same routers untrained
    balanced = torch.tensor([max(b) for b in _runs(study, "mixture", "busiest")])  # (seeds,)
    free = torch.tensor([max(b) for b in _runs(study, "mixture, no balancing loss", "busiest")])
    accuracy = {block: torch.tensor(_runs(study, block, "accuracy")) for block in study["runs"]}
    params = study["parameters"]
    return [
        Claim(abs(params["mixture"][1] - params["dense, same active"][0]) < 0.01 * params["mixture"][1]
              and abs(params["mixture"][0] - params["dense, same total"][0]) < 0.01 * params["mixture"][0],
              "the dense blocks match the mixture's active and total parameters to 1%", params),
        Claim(bool((trained.min(dim=1).values > initial.max(dim=1).values).all()), "in every layer training routes "
              "the sub-tasks apart beyond the untrained router: every trained seed's distance is above every seed's "
              "at initialisation", (trained, initial)),
        Claim(bool(task_only[0].min() > initial[0].max()), "trained on the task's loss only (no balancing loss), "
              "the router still routes the sub-tasks apart in the first layer: every seed's distance is above every "
              "seed's at initialisation", (task_only[0], initial[0])),
        Claim(bool(balanced.max() < 0.4), f"with the balancing loss no expert takes 40% of the load in any seed or "
              f"layer (balanced: {1 / study['n_experts']:.0%})", balanced),
        Claim(median(free) > median(balanced), "without the balancing loss the busiest expert's median share is "
              "higher", (free, balanced)),
        Claim(bool(accuracy["dense, same active"].max() > accuracy["mixture"].min()),
              "but the seeds do not separate the mixture from the same-active dense block: their accuracy ranges "
              "overlap", (accuracy["mixture"], accuracy["dense, same active"])),
    ]


def experts_live(seed=0, steps=200):
    """The chapter's live run: the mixture for ``steps`` steps at one thread: its run (losses,
    routing table) as ``experts_run`` returns it."""
    return run_at(1, lambda: experts_run("mixture", seed, steps))


if __name__ == "__main__":
    default = sys.argv[1:] == ["default_threads"]
    print(f"wrote {write_study(experts_study(default_threads=default), NAME, default)}")
