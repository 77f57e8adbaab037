"""Chapter 07's beam search against greedy decoding on the warm-up runs, over seeds.

``python -m stepbystep.experiments.beam_seeds`` trains the word model at a learning rate of 0.01 from
each of ``SEEDS`` (the warm-up study's fourteen), twice: with the warm-up, stopped after epoch 2 of its
three-epoch schedule (a model that mostly works), and without it, for all three epochs (a run that
often fails). Under each model it decodes the first ``N_WORDS`` validation words greedily and with a
beam of ``BEAM_WIDTH``, at one thread and at two, and writes ``beam_comparison``'s counts to
``results/beam_seeds.json``; ``beam_claims`` bounds what the chapter says about them.
"""
import json
import statistics
from pathlib import Path

from ..data import pad_collate
from ..devices import environment, torch_threads
from ..expect import Claim
from ..models import beam_search, greedy_decode, sequence_accuracy, sequence_log_probs
from .warmup_seeds import FAILED, SEEDS
from .word_reversal import word_data, word_trainer

__all__ = ["N_WORDS", "BEAM_WIDTH", "RESULTS", "beam_comparison", "beam_seed_runs", "load_beam_seeds",
           "load_beam_environment", "beam_lines", "beam_claims", "length_claims"]

N_WORDS = 250  # a beam costs BEAM_WIDTH times greedy's work: half the validation words
BEAM_WIDTH = 4
RESULTS = Path(__file__).parent / "results" / "beam_seeds.json"


def beam_comparison(model, n_words=N_WORDS, beam_width=BEAM_WIDTH):
    """Greedy decoding against a beam of ``beam_width`` under ``model``, on the first ``n_words``
    validation words (padded as in training): a dict of both exact matches and, over the words,
    how many outputs differ, on how many the beam's is the less likely under the model, and how
    many of each decoder's outputs are shorter than the right word (the length bias, against the
    length it should have)."""
    vocab, _, _, val_set = word_data()
    device = next(model.parameters()).device
    (source, _), target_out = pad_collate([val_set[i] for i in range(len(val_set))])  # (500, L_s), (500, L_t)
    source, target_out = source[:n_words].to(device), target_out[:n_words].to(device)  # (n_words, ...)
    greedy = greedy_decode(model, source, vocab.sos_id, vocab.eos_id, max_new_tokens=13)  # (n_words, L)
    beam = beam_search(model, source, vocab.sos_id, vocab.eos_id, max_new_tokens=13, beam_width=beam_width)
    greedy_scores, beam_scores = (sequence_log_probs(model, source, ids, vocab.sos_id, vocab.eos_id)
                                  for ids in (greedy, beam))  # (n_words,) each
    texts = [(vocab.decode(g), vocab.decode(b), vocab.decode(t)) for g, b, t in zip(greedy, beam, target_out)]
    return {"greedy": sequence_accuracy(greedy, target_out), "beam": sequence_accuracy(beam, target_out),
            "differ": sum(g != b for g, b, _ in texts), "beam_less_likely": int((beam_scores < greedy_scores - 1e-4).sum()),
            "greedy_too_short": sum(len(g) < len(t) for g, _, t in texts),
            "beam_too_short": sum(len(b) < len(t) for _, b, t in texts), "words": n_words}


def beam_seed_runs(seeds=SEEDS, threads=1, lr=1e-2):
    """Each seed's two models at ``threads`` threads: ``{"epoch 2 with warm-up" | "without warm-up":
    [{"seed", "exact", **beam_comparison}, ...]}`` and the environment they ran in."""
    runs = {"epoch 2 with warm-up": [], "without warm-up": []}
    with torch_threads(threads):
        for seed in seeds:
            for name, warmup, epochs in (("epoch 2 with warm-up", True, 2), ("without warm-up", False, 3)):
                trainer = word_trainer(lr=lr, warmup=warmup, seed=seed)  # a three-epoch schedule either way
                trainer.train(epochs, seed=seed, progress=False)
                runs[name].append({"seed": seed, **beam_comparison(trainer.model)})
        setting = environment()
    return {"environment": setting, "runs": runs}


def load_beam_seeds(path=RESULTS):
    """The stored study: ``{threads: {"epoch 2 with warm-up" | "without warm-up": [run dict, ...]}}``."""
    stored = json.loads(Path(path).read_text())
    return {int(threads): study["runs"] for threads, study in stored["threads"].items()}


def load_beam_environment(threads, path=RESULTS):
    """Where the stored runs at ``threads`` threads ran: ``environment()``'s dict."""
    return json.loads(Path(path).read_text())["threads"][str(threads)]["environment"]


def beam_lines(study):
    """Text lines: the stored comparisons summed up for each thread count (``load_beam_seeds``'s value)."""
    lines = []
    for threads, runs in study.items():
        half, unsure = runs["epoch 2 with warm-up"], runs["without warm-up"]
        gains = [100 * (run["beam"] - run["greedy"]) for run in half]  # points
        failed = [run for run in unsure if run["greedy"] < FAILED]
        models = half + unsure
        short = {name: [sum(run[f"{decoder}_too_short"] for run in group) for decoder in ("greedy", "beam")]
                 for name, group in (("half", half), ("failed", failed))}  # outputs shorter than the right word
        lines += [f"{threads} thread{'s' if threads > 1 else ''}, {len(half)} seeds. After epoch 2 with the warm-up: "
                  f"greedy {min(r['greedy'] for r in half):.1%} to {max(r['greedy'] for r in half):.1%}, the beam "
                  f"{min(gains):+.1f} to {max(gains):+.1f} points from it (median {statistics.median(gains):+.1f})",
                  f"  {len(failed)} runs without it failed: greedy at most {max(r['greedy'] for r in failed):.1%}, "
                  f"the beam at most {max(r['beam'] for r in failed):.1%}",
                  f"  over the {len(models)} models the outputs differ on {sum(r['differ'] for r in models)} words; "
                  f"the beam's is the less likely on {sum(r['beam_less_likely'] for r in models)} (at most "
                  f"{max(r['beam_less_likely'] for r in models)} of {models[0]['words']} under one model)",
                  f"  outputs shorter than the right word, greedy's and the beam's: {short['half'][0]} and "
                  f"{short['half'][1]} after epoch 2, {short['failed'][0]} and {short['failed'][1]} in the failed runs"]
    return lines


def beam_claims(half, unsure):
    """What chapter 07 says of beam search on these models: ``half``, ``beam_comparison``'s dicts for the
    runs with warm-up stopped after epoch 2; ``unsure``, those for runs without warm-up (each counted as
    failed when greedy gets under ``FAILED`` of the words right)."""
    greedy = [run["greedy"] for run in half]
    gains = [run["beam"] - run["greedy"] for run in half]
    failed = [run for run in unsure if run["greedy"] < FAILED]
    models = half + unsure
    less_likely, differ = sum(run["beam_less_likely"] for run in models), sum(run["differ"] for run in models)
    return [
        Claim(min(greedy) > 0.5 and statistics.median(greedy) < 0.99, "after epoch 2 the models get most words "
              "right (over half in every seed), not all (under 99% in the median)", greedy),
        Claim(all(-0.02 < gain < 0.05 for gain in gains), "in every seed, the beam's exact match is under 5 points "
              "above greedy's and under 2 points below", gains),
        Claim(all(run["beam"] < FAILED and run["beam"] - run["greedy"] < 0.05 for run in failed),
              "on every failed run, the beam fails too: under half of the words, under 5 points above greedy",
              [(run["greedy"], run["beam"]) for run in failed]),
        Claim(all(run["beam_less_likely"] < 0.05 * run["words"] for run in models), "under every model, the beam's "
              "output is less likely than greedy's on under 5% of the words",
              [run["beam_less_likely"] for run in models]),
        Claim(differ == 0 or less_likely < differ / 2, "over the models, where the outputs differ, the beam's is the "
              "more likely one on most words", (less_likely, differ)),
    ]


def length_claims(half, unsure):
    """The bias towards short outputs, against the right word's length, over many models (``beam_claims``'
    arguments): it shows where the model is unsure, not where it mostly works."""
    failed = [run for run in unsure if run["greedy"] < FAILED]
    gaps = [run["beam_too_short"] - run["greedy_too_short"] for run in failed]  # one per failed run
    return [
        Claim(min(gaps) >= 0 and sum(gap > 0 for gap in gaps) > len(gaps) / 2, "under the failed runs, the beam's "
              "outputs fall short of the right word more often than greedy's in most runs, less often in none",
              gaps),
        Claim(all(run["beam_too_short"] <= run["greedy_too_short"] < 0.05 * run["words"] for run in half),
              "under every epoch-2 copy, greedy's fall short on under 5% of the words, and the beam's on no more",
              [(run["greedy_too_short"], run["beam_too_short"]) for run in half]),
    ]


if __name__ == "__main__":
    RESULTS.parent.mkdir(exist_ok=True)
    study = {"command": "python -m stepbystep.experiments.beam_seeds", "seeds": list(SEEDS), "lr": 1e-2,
             "words": N_WORDS, "beam_width": BEAM_WIDTH,
             "threads": {str(threads): beam_seed_runs(threads=threads) for threads in (1, 2)}}
    RESULTS.write_text(json.dumps(study, indent=1) + "\n")
    print(f"wrote {RESULTS}")
