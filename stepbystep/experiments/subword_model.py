"""Chapter 15's study: the same small GPT-2 block trained on Shakespeare's plays read as BPE tokens
and, as the control, as bytes, compared by held-out bits per byte.

The two runs differ only in the tokenizer: bytes are ``BytePairTokenizer`` with no merges, BPE the
first ``vocab_size - 256`` merges learned from the training plays. Both take the same number of
optimizer steps on batches of the same number of **tokens** (``batch_size`` windows of ``context``
tokens): the transformer does the same work per step, while a BPE batch holds more text. The
measure is fair across tokenizers: the held-out play's total negative log-likelihood, in bits,
divided by its UTF-8 bytes (``bits_per_byte``).

Each model is read against its own tokenizer's unigram and bigram count tables
(``count_bits_per_byte``): a table of token frequencies and a table of token pairs, for BPE and for
bytes alike, each scored the same way.

A second, smaller study asks what the live BPE model writes: the share of its words that are words
of the training plays, beside two controls sampled like the model (temperature, top-k): the same
model untrained, and a sampler drawing tokens by their frequency alone, ``writing_study``.

``python -m stepbystep.experiments.subword_model`` runs both and writes ``results/subword_model.json``;
``load_subword_study`` reads it back.
"""
import itertools
import json
import math
import time
from pathlib import Path

import regex
import torch

from ..checks import check_instance, check_positive_int, check_positive_number
from ..data import BytePairTokenizer, shakespeare_plays
from ..devices import torch_threads
from ..expect import Claim
from ..models.gpt.config import DecoderConfig
from ..models.gpt.generation import generate, sampling_distribution
from ..models.metrics import repeat_share, sequence_cross_entropy
from ..seeding import get_rng_state
from ..training import StepByStep
from ..training.schedules import warmup_cosine

__all__ = ["ARMS", "HELD_OUT", "RECIPE", "RESULTS", "SEEDS", "WRITING", "baseline_claims", "bits_per_byte",
           "count_bits_per_byte", "known_pair_share", "known_share", "load_subword_study", "lm_config", "model_writes",
           "random_windows", "repeat_shares", "split_plays", "subword_claims", "subword_study", "train_lm",
           "unigram_writes", "writing_claims", "writing_study"]

HELD_OUT = "the-tempest"
SEEDS = (0, 1, 2)
RECIPE = dict(steps=400, batch_size=16, context=64, lr=3e-3, warmup=40)
ARMS = {"bpe": ("bpe", 1), "bytes": ("bytes", 1), "bytes, 2x steps": ("bytes", 2)}  # arm: (tokenizer, steps x)
RESULTS = Path(__file__).parent / "results" / "subword_model.json"
WRITING = dict(prompt="**HAMLET**\n", samples=16, length=64, temperature=0.8, top_k=40, steps=300, seeds=(0, 1, 2, 3, 4))


def split_plays():
    """``(train_text, held_out_text)``: the other 37 plays joined by blank lines, and *The Tempest*."""
    plays = shakespeare_plays()
    held_out = plays.pop(HELD_OUT)
    return "\n\n".join(plays.values()), held_out


def lm_config(vocab_size, context=64, d_model=64, n_heads=4, n_layers=2):
    """GPT-2's block (``DecoderConfig.gpt2``) at a small size: learned positions, tied output,
    embeddings drawn with GPT-2's std 0.02, no dropout, ``context`` tokens at most."""
    return DecoderConfig.gpt2(vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers, max_len=context,
                              dropout=0.0, embedding_std=0.02)


def random_windows(ids, steps, batch_size, context, generator):
    """``steps`` batches ``(x, y)`` of ``batch_size`` windows each, ``(B, context)``: windows of
    ``ids`` (1-D long tensor) starting at offsets drawn by ``generator``; ``y`` is ``x`` one token on."""
    if len(ids) <= context:
        raise ValueError(f"ids must be longer than context={context}, got {len(ids)} ids")
    starts = torch.randint(0, len(ids) - context, (steps, batch_size), generator=generator)  # (steps, B)
    offsets = torch.arange(context + 1)  # (context + 1,)
    windows = ids[starts[..., None] + offsets]  # (steps, B, context + 1)
    return [(w[:, :-1], w[:, 1:]) for w in windows]


def train_lm(config, ids, seed, steps=400, batch_size=16, context=64, lr=3e-3, warmup=40):
    """The recipe: ``config.build()`` under ``torch.manual_seed(seed)``; AdamW, a warm-up over
    ``warmup`` steps to ``lr`` then a cosine down to zero (``warmup_cosine``), ``steps`` batches of
    ``random_windows`` (generator seeded with ``100 + seed``) through ``StepByStep.train_steps`` on
    the CPU. Returns ``(model, losses)``: the trained model (eval mode) and the loss of every step
    in nats per token, ``(steps,)``."""
    check_instance("ids", ids, torch.Tensor)
    check_positive_int("steps", steps)
    check_positive_number("lr", lr)
    torch.manual_seed(seed)
    model = config.build()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    losses = []

    def loss_fn(logits, y):  # (B, context, V), (B, context)
        loss = sequence_cross_entropy(logits, y, ignore_index=-100)
        losses.append(loss.item())
        return loss

    trainer = StepByStep(model, loss_fn, optimizer, device="cpu")
    trainer.set_lr_scheduler(warmup_cosine(optimizer, warmup, steps), interval="batch")
    batches = random_windows(ids, steps, batch_size, context, torch.Generator().manual_seed(100 + seed))
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state()  # no seeding: the streams go on from the model's seed
    trainer.train_steps(steps, progress=False)
    return model.eval(), torch.tensor(losses)


def bits_per_byte(model, tokenizer, text, context=64):
    """The model's total negative log-likelihood of ``text`` encoded by ``tokenizer``, in bits,
    over the UTF-8 bytes of the tokens it predicts: every token but the first, each once, in
    consecutive windows of ``context`` tokens (each window starts with the previous one's last
    token)."""
    ids = torch.tensor(tokenizer.encode(text))  # (T,)
    total, device = 0.0, next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(ids) - 1, context):
            window = ids[start:start + context + 1].to(device)  # (<= context + 1,)
            logits = model(window[None, :-1])  # (1, l, V)
            nll = torch.nn.functional.cross_entropy(logits[0], window[1:], reduction="sum")  # nats
            total += nll.item()
    n_bytes = sum(len(tokenizer.vocab[i]) for i in ids[1:].tolist())
    return total / math.log(2) / n_bytes


def count_bits_per_byte(tokenizer, train_ids, held_out, order=1):
    """A count model's bits per byte on ``held_out``, scored as ``bits_per_byte`` scores a model (every
    token but the first, over those tokens' bytes): ``order=1``, a unigram table (each id by its
    frequency in ``train_ids``, 1-D long tensor); ``order=2``, a bigram table (each id by its
    frequency after the id before it). Add-one smoothing over the tokenizer's ids. The baseline a
    model must beat to show that it learned more than these counts."""
    check_instance("train_ids", train_ids, torch.Tensor)
    if order not in (1, 2):
        raise ValueError(f"order must be 1 (unigram) or 2 (bigram), got {order!r}")
    V = tokenizer.vocab_size
    ids = torch.tensor(tokenizer.encode(held_out))  # (T,)
    if order == 1:
        counts = torch.bincount(train_ids, minlength=V).double() + 1  # (V,)
        log_p = (counts / counts.sum()).log()[ids[1:]]  # (T - 1,)
    else:
        counts = torch.bincount(train_ids[:-1] * V + train_ids[1:], minlength=V * V).double().view(V, V) + 1  # (V, V)
        log_p = (counts / counts.sum(1, keepdim=True)).log()[ids[:-1], ids[1:]]  # (T - 1,)
    n_bytes = sum(len(tokenizer.vocab[i]) for i in ids[1:].tolist())
    return -log_p.sum().item() / math.log(2) / n_bytes


def subword_study(seeds=SEEDS, vocab_size=1024, text=None, held_out=None, arms=ARMS, **recipe):
    """Train three arms for ``seeds`` on ``text`` (default: the 37 training plays) and measure bits
    per byte on ``held_out`` (default: *The Tempest*), on one thread: ``"bpe"`` (``vocab_size``
    ids), ``"bytes"`` (the control: the same steps and tokens per batch) and ``"bytes, 2x steps"``
    (the control given twice the steps: at least the BPE model's compute, whose output layer is
    larger); ``arms`` picks some of them. A dict ready for JSON: the recipe, the vocabularies, the
    bytes per token of each on the training text, the CPU seconds of each run (training and
    measuring) and ``{arm: [bits per byte per seed]}``."""
    recipe = {**RECIPE, **recipe}
    if text is None or held_out is None:
        text, held_out = split_plays()
    needed = {ARMS[arm][0] for arm in arms}
    tokenizers = {"bytes": BytePairTokenizer(), "bpe": BytePairTokenizer.train(text, vocab_size) if "bpe" in needed else None}
    results, seconds, per_token = {}, {}, {}
    with torch_threads(1):
        for arm in arms:
            name, times = ARMS[arm]
            tokenizer = tokenizers[name]
            ids = torch.tensor(tokenizer.encode(text))  # (T,)
            per_token[name] = len(text.encode("utf-8")) / len(ids)
            config = lm_config(tokenizer.vocab_size, context=recipe["context"])
            results[arm], seconds[arm] = [], []
            for seed in seeds:
                start = time.process_time()
                model, _ = train_lm(config, ids, seed, **{**recipe, "steps": times * recipe["steps"]})
                results[arm].append(bits_per_byte(model, tokenizer, held_out, recipe["context"]))
                seconds[arm].append(time.process_time() - start)
    return {"seeds": list(seeds), "recipe": recipe, "vocab_size": {"bytes": 256, "bpe": vocab_size},
            "bytes_per_token": per_token, "torch": torch.__version__, "cpu_seconds": seconds, "bits_per_byte": results}


def load_subword_study(path=RESULTS):
    """The stored study: ``{arm: tensor (seeds,)}`` of bits per byte, and the whole dict (its
    ``"writing"``: ``writing_study``'s)."""
    stored = json.loads(Path(path).read_text())
    return {name: torch.tensor(runs) for name, runs in stored["bits_per_byte"].items()}, stored


def subword_claims(bpb):
    """What the chapter says: the BPE model's held-out bits per byte are below the byte model's in
    every seed, seed for seed, by more than any arm's spread over the seeds, and below the byte
    model's given twice the steps in every seed too."""
    gap = bpb["bytes"] - bpb["bpe"]  # (seeds,): same seeds, paired
    longer = bpb["bytes, 2x steps"] - bpb["bpe"]  # (seeds,)
    spread = max((runs.max() - runs.min()).item() for runs in bpb.values())
    return [
        Claim(bool((gap > 0).all()), "the BPE model's held-out bits per byte are below the byte model's in every seed",
              gap),
        Claim(gap.min().item() > spread, "the gap is larger, in every seed, than any arm's spread over the seeds",
              (gap, spread)),
        Claim(bool((longer > 0).all()), "the byte model given twice the steps stays above the BPE model in every seed",
              longer),
    ]


def baseline_claims(bpb, tables, live):
    """What the chapter says against the count tables, ``tables[tokenizer] = (unigram, bigram)``
    (``count_bits_per_byte`` of order 1 and 2): every model, stored and the ``live`` BPE one, is below
    its tokenizer's unigram table; no BPE model reaches the BPE bigram table; the byte model is within
    0.1 of the byte bigram table in every seed, and given twice the steps below it; and the BPE bigram
    table is below the byte bigram table by more than half a bit per byte."""
    (bpe_unigram, bpe_bigram), (byte_unigram, byte_bigram) = tables["bpe"], tables["bytes"]
    bpe = torch.cat([bpb["bpe"], torch.tensor([live])])  # (seeds + 1,)
    return [
        Claim(bool((bpe < bpe_unigram).all() and (bpb["bytes"] < byte_unigram).all()),
              "every model is below its tokenizer's table of token frequencies", (bpe - bpe_unigram, bpb["bytes"])),
        Claim(bool((bpe > bpe_bigram).all()), "no BPE model, stored or live, reaches the table of BPE pairs",
              bpe - bpe_bigram),
        Claim(bool(((bpb["bytes"] - byte_bigram).abs() < 0.1).all()),
              "the byte model is within 0.1 bits per byte of the table of byte pairs in every seed",
              bpb["bytes"] - byte_bigram),
        Claim(bool((bpb["bytes, 2x steps"] < byte_bigram).all()),
              "given twice the steps, the byte model is below the table of byte pairs in every seed",
              bpb["bytes, 2x steps"] - byte_bigram),
        Claim(byte_bigram - bpe_bigram > 0.5,
              "the table of BPE pairs is below the table of byte pairs by more than half a bit per byte",
              byte_bigram - bpe_bigram),
    ]


def model_writes(model, tokenizer, seed, prompt=WRITING["prompt"], samples=WRITING["samples"],
                 length=WRITING["length"]):
    """``samples`` texts: ``prompt`` continued by ``model`` to ``length`` tokens in all, at the chapter's
    temperature among its top-k ids, drawn by a generator seeded with ``seed``."""
    return [tokenizer.decode(row) for row in _sampled_ids(model, tokenizer, seed, prompt, samples, length)]


def _sampled_ids(model, tokenizer, seed, prompt, samples, length):
    ids = tokenizer.encode(prompt)
    written = generate(model, [ids] * samples, length - len(ids), temperature=WRITING["temperature"],
                       top_k=WRITING["top_k"], generator=torch.Generator().manual_seed(seed))  # (samples, length)
    return written.tolist()


def repeat_shares(model, tokenizer, prompt, seeds, n=4, length=WRITING["length"]):
    """How much ``model`` repeats itself after ``prompt``, ``length`` tokens in all: the share of
    repeated ``n``-grams of the new tokens (``repeat_share``), decoded greedily (temperature 0) and
    sampled as ``model_writes`` samples for each of ``seeds``.
    ``(greedy text, greedy share, sampled shares (len(seeds) · samples,))``."""
    start = len(tokenizer.encode(prompt))
    greedy = generate(model, tokenizer.encode(prompt), length - start, temperature=0).tolist()  # (length,)
    sampled = [repeat_share(row[start:], n) for seed in seeds
               for row in _sampled_ids(model, tokenizer, seed, prompt, WRITING["samples"], length)]
    return tokenizer.decode(greedy), repeat_share(greedy[start:], n), torch.tensor(sampled)


def unigram_writes(ids, tokenizer, seed, prompt=WRITING["prompt"], samples=WRITING["samples"],
                   length=WRITING["length"], temperature=WRITING["temperature"], top_k=WRITING["top_k"]):
    """The control with no context: ``model_writes``' texts, each new token drawn from its frequency
    in ``ids`` (1-D long tensor, the training text), whatever came before, through the same sampler
    as the model (log-frequencies as logits, ``temperature``, ``top_k``; ``1.0`` and ``None`` draw by
    frequency alone)."""
    frequency = torch.bincount(ids, minlength=tokenizer.vocab_size).double()  # (V,)
    probs = sampling_distribution(frequency.log()[None], temperature, top_k)[0]  # (V,)
    start = tokenizer.encode(prompt)
    new = torch.multinomial(probs, samples * (length - len(start)), replacement=True,
                            generator=torch.Generator().manual_seed(seed)).view(samples, -1)  # (samples, length - L)
    return [tokenizer.decode(start + row) for row in new.tolist()]


def known_share(texts, known, prompt=WRITING["prompt"]):
    """The share of the words (runs of letters) that ``texts`` write after ``prompt`` that are in ``known``."""
    words = [word for text in texts for word in regex.findall(r"\p{L}+", text[len(prompt):])]
    return sum(word in known for word in words) / len(words)


def known_pair_share(texts, known_pairs, prompt=WRITING["prompt"]):
    """The share of the pairs of consecutive words (runs of letters) that ``texts`` write after
    ``prompt`` that are in ``known_pairs`` (a set of ``(word, next word)``): a writer that strings
    words by their frequencies alone, whatever came before, rarely writes a pair the plays use."""
    pairs = [pair for text in texts for pair in itertools.pairwise(regex.findall(r"\p{L}+", text[len(prompt):]))]
    return sum(pair in known_pairs for pair in pairs) / len(pairs)


def writing_study(seeds=WRITING["seeds"], steps=WRITING["steps"], vocab_size=1024, text=None, **recipe):
    """The share of known words (the training text's words) written by the chapter's live BPE model
    (``steps`` steps) for each of ``seeds``, beside two controls on the same prompt and generator seed
    (``seed + 1``, as the chapter's): the same model untrained, and the ``unigram_writes`` sampler,
    both sampled like the model.
    A dict ready for JSON: ``{"seeds", "steps", "trained": [...], "untrained": [...], "unigram": [...]}``."""
    recipe = {**RECIPE, **recipe, "steps": steps}
    text = split_plays()[0] if text is None else text
    tokenizer = BytePairTokenizer.train(text, vocab_size)
    ids = torch.tensor(tokenizer.encode(text))  # (T,)
    known, config = set(regex.findall(r"\p{L}+", text)), lm_config(vocab_size, context=recipe["context"])
    shares = {"trained": [], "untrained": [], "unigram": []}
    with torch_threads(1):
        for seed in seeds:
            torch.manual_seed(seed)
            untrained = config.build().eval()
            trained, _ = train_lm(config, ids, seed, **recipe)
            shares["trained"].append(known_share(model_writes(trained, tokenizer, seed + 1), known))
            shares["untrained"].append(known_share(model_writes(untrained, tokenizer, seed + 1), known))
            shares["unigram"].append(known_share(unigram_writes(ids, tokenizer, seed + 1), known))
    return {"seeds": list(seeds), "steps": steps, **shares}


def writing_claims(writing):
    """What the chapter says of the live model's writing, over the stored seeds (``writing_study``'s
    dict): in every seed it writes a larger share of known words than the untrained model, and a
    smaller one than the unigram sampler sampled the same way (so the share cannot show context)."""
    trained, unigram, untrained = (torch.tensor(writing[name]) for name in ("trained", "unigram", "untrained"))
    return [
        Claim(bool((unigram > trained).all()),
              "in every seed the frequency sampler, sampled like the model, writes more words of the plays than the model",
              unigram - trained),
        Claim(bool((trained > untrained).all()),
              "in every seed the trained model writes more words of the plays than the same model untrained",
              trained - untrained),
    ]


if __name__ == "__main__":
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({**subword_study(), "writing": writing_study()}, indent=1) + "\n")
    print(f"wrote {RESULTS}")
