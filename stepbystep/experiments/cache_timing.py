"""Chapter 12's timings: prefill (a prompt in one pass) against decode (one new token), the same
matrix products without the model's modules, one large matrix against batches of vectors, and
the course's cached generation against ``transformers``' on the same converted model."""
import statistics
import time

import torch

from ..checks import check_positive_int
from ..devices import evaluating, model_device
from ..models.gpt.generation import generate

__all__ = ["prefill_decode_times", "weight_products_ms", "decode_step_parts_ms", "steady_decode_step_parts_ms",
           "matrix_vector_times", "generation_times"]


def _ms(run):
    """Milliseconds one call of ``run`` takes, waiting for a GPU, if there is one, to finish its work."""
    start = time.perf_counter()
    run()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - start)


def _median_ms(run, repeats):
    return statistics.median(_ms(run) for _ in range(repeats))


def prefill_decode_times(model, lengths, repeats=5, steps=7, seed=0, per_round=False):
    """Fastest milliseconds of prefill (a prompt of each length in ``lengths``, one pass that fills a
    new cache), over ``repeats``, and of decode (one next token after that prompt, cached), over
    ``repeats`` x ``steps``: two lists. After one warm-up of each, the lengths take turns, one
    prefill and ``steps`` decode steps of each per repeat (``_round_fastest_ms``), so that a busy moment
    of the machine or a cold start does not fall on one length alone; a decode step is short, so it
    gets more tries. ``per_round``: each time is instead a list, the fastest within each repeat
    (``(repeats,)``), to compare lengths within one round, where a busy spell slows them alike.
    One sequence; eval mode, no gradients; the prompts are random ids from ``seed``."""
    check_positive_int("repeats", repeats)
    check_positive_int("steps", steps)
    generator = torch.Generator().manual_seed(seed)
    runs = {}
    for length in lengths:
        prompt = torch.randint(0, model.vocab_size, (1, length), generator=generator)  # (1, L)
        runs[("prefill", length)] = (_prefill(model, prompt), 1)
        runs[("decode", length)] = (_decode_step(model, prompt, repeats * steps), steps)
    with evaluating(model):
        rounds = _round_fastest_ms(runs, repeats)
    times = rounds if per_round else {name: min(ms) for name, ms in rounds.items()}
    return [times[("prefill", length)] for length in lengths], [times[("decode", length)] for length in lengths]


def _round_fastest_ms(runs, repeats):
    """The fastest milliseconds of each function of ``runs`` (``{name: (function, calls)}``) in each
    round: ``{name: [ms per round]}``. After one warm-up call of each, the functions take turns,
    ``calls`` calls of each in a row per round (a short one gets more tries, and its later calls find
    the processor's caches holding what it reads), ``repeats`` rounds. No gradients."""
    times = {name: [] for name in runs}
    with torch.inference_mode():
        for run, _ in runs.values():
            run()  # warm-up
        for _ in range(repeats):
            for name, (run, calls) in runs.items():
                times[name].append(min(_ms(run) for _ in range(calls)))
    return times


def _weight_products(model, seed):
    """A function multiplying one vector by each of ``model``'s weight matrices (every 2-D parameter
    but the embedding) in a bare loop, where the model lives."""
    weights = [p.detach() for name, p in model.named_parameters() if p.ndim == 2 and not name.startswith("embed")]
    widest = max(w.shape[1] for w in weights)
    vector = torch.randn(widest, generator=torch.Generator().manual_seed(seed)).to(weights[0])  # (widest,)

    def products():
        for weight in weights:  # (out, in): nn.Linear's layout
            weight @ vector[:weight.shape[1]]  # (out,)

    return products


def weight_products_ms(model, repeats=20, seed=0):
    """Median milliseconds, over ``repeats``, of multiplying one vector by each of ``model``'s weight
    matrices (every 2-D parameter but the embedding) in a bare loop: a decode step's matrix products
    without its modules, its cache or its attention. Where the model lives, no gradients."""
    check_positive_int("repeats", repeats)
    products = _weight_products(model, seed)
    with torch.inference_mode():
        products()  # warm-up
        return _median_ms(products, repeats)


def decode_step_parts_ms(model, narrow, length=256, repeats=51, steps=1, seed=0):
    """Milliseconds of one cached decode step of ``model`` and of ``narrow`` (a model with the same
    layers and modules, much narrower), each after a prompt of ``length`` random ids, of ``model``'s
    bare weight products for one vector (as in ``weight_products_ms``) and of ``model``'s prefill of
    that prompt: ``{"step": ms, "narrow step": ms, "products": ms, "prefill": ms}``, each the fastest
    of its runs. The four take turns (``_round_fastest_ms``), ``repeats`` times: one prefill and ``steps``
    runs of each of the others per turn, so that a busy moment of the machine slows all four rather
    than one; the fastest run is the one the rest of the machine disturbed least.
    Eval mode, no gradients."""
    check_positive_int("length", length)
    check_positive_int("repeats", repeats)
    check_positive_int("steps", steps)
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, min(model.vocab_size, narrow.vocab_size), (1, length), generator=generator)  # (1, L)
    runs = {"step": (_decode_step(model, prompt, repeats * steps), steps),
            "narrow step": (_decode_step(narrow, prompt, repeats * steps), steps),
            "products": (_weight_products(model, seed), steps), "prefill": (_prefill(model, prompt), 1)}
    with evaluating(model), evaluating(narrow):
        rounds = _round_fastest_ms(runs, repeats)
    return {name: min(ms) for name, ms in rounds.items()}


def steady_decode_step_parts_ms(model, narrow, alone, tries=3, stall=5, **kwargs):
    """``decode_step_parts_ms(model, narrow, **kwargs)``, measured again while the machine stalls:
    while the narrow step takes more than ``stall`` times its time in ``alone`` (the same parts
    measured at one thread), up to ``tries`` measurements in all. A stall that slows both models
    through every turn makes the wide step and the narrow one a toss-up; a later measurement may
    find the machine quiet. Returns the fastest of each part over the measurements made."""
    check_positive_int("tries", tries)
    if not isinstance(alone, dict) or "narrow step" not in alone:
        raise TypeError(f"alone must be the dict decode_step_parts_ms returns, with a 'narrow step' time, "
                        f"got {alone!r}")
    if not stall > 1:
        raise ValueError(f"stall must be a number above 1 (how many times slower counts as stalled), got {stall!r}")
    parts = decode_step_parts_ms(model, narrow, **kwargs)
    for _ in range(tries - 1):
        if parts["narrow step"] <= stall * alone["narrow step"]:
            break
        again = decode_step_parts_ms(model, narrow, **kwargs)
        parts = {name: min(ms, again[name]) for name, ms in parts.items()}
    return parts


def _prefill(model, prompt):
    """A function running ``model`` on ``prompt`` ``(1, L)`` into a new cache of room ``L``: one prefill."""
    prompt = prompt.to(model_device(model))  # (1, L)
    return lambda: model(prompt, cache=model.new_cache(capacity=prompt.shape[1]))


def _decode_step(model, prompt, repeats):
    """A function running one cached decode step of ``model`` after ``prompt`` ``(1, L)``, its cache
    filled by a prefill here; it has room for ``repeats`` + 1 steps."""
    prompt = prompt.to(model_device(model))  # (1, L)
    with evaluating(model), torch.inference_mode():
        cache = model.new_cache(capacity=prompt.shape[1] + repeats + 1)
        model(prompt, cache=cache)  # the prefill; each step adds one token at the next position
    new = prompt[:, -1:]  # (1, 1)
    return lambda: model(new, cache=cache)


def matrix_vector_times(d=4096, batch_sizes=(1, 16, 256), repeats=5, seed=0, device="cpu", fastest=False):
    """Median milliseconds per vector, over ``repeats``, of one ``(d, d)`` float32 matrix times a batch
    of ``B`` vectors ``(d, B)``, for each ``B`` in ``batch_sizes``: one call each, nothing around it
    (``fastest``: the fastest call instead, what the machine can do when nothing else gets in the way).
    Every weight loaded serves ``B`` multiply-adds; ``d = 4096`` is 64 MiB, more than most CPUs' caches
    hold, ``d = 8192`` 256 MiB, more than almost any; ``d = 1024`` 4 MiB, which fits in the last-level cache
    of most current CPUs. Returns a list, one time per batch size."""
    check_positive_int("d", d)
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(d, d, generator=generator).to(device)  # (d, d)
    times = []
    for batch_size in batch_sizes:
        check_positive_int("each batch size", batch_size)
        vectors = torch.randn(d, batch_size, generator=generator).to(device)  # (d, B)
        weight @ vectors  # warm-up

        def product():
            (weight @ vectors).sum().item()  # (d, B); .item() waits for an accelerator to finish

        calls = [_ms(product) for _ in range(repeats)]
        times.append((min(calls) if fastest else statistics.median(calls)) / batch_size)
    return times


def generation_times(ours, theirs, prompt, max_new_tokens, repeats=5):
    """Median seconds of greedy generation of ``max_new_tokens`` after ``prompt`` ``(1, L)``, over
    ``repeats`` runs of each, alternating: the course's cached ``generate`` on ``ours``, and
    ``theirs.generate(do_sample=False)`` (a ``transformers`` model, its cache on). Returns
    ``{"ours": s, "transformers": s}`` and whether both wrote the same tokens. Each model reads the
    prompt where it lives."""
    prompt = prompt.to(model_device(theirs))  # (1, L); ``generate`` moves it for ours
    mask = torch.ones_like(prompt)
    runs = {
        "ours": lambda: generate(ours, prompt, max_new_tokens, temperature=0),
        "transformers": lambda: theirs.generate(prompt, attention_mask=mask, max_new_tokens=max_new_tokens,
                                                min_new_tokens=max_new_tokens, do_sample=False, use_cache=True),
    }
    times = {name: [] for name in runs}
    with torch.inference_mode():
        same = torch.equal(runs["ours"]().cpu(), runs["transformers"]().cpu())  # also the warm-up
        for _ in range(repeats):  # alternating, so that a busy moment slows both
            for name, run in runs.items():
                times[name].append(_ms(run) / 1000)
    return {name: statistics.median(seconds) for name, seconds in times.items()}, same
