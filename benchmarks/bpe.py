"""Chapter 15's BPE training against the Rust trainer of Hugging Face ``tokenizers``.

Both learn a byte-level vocabulary of 1,024 ids (256 bytes + 768 merges) from the first 1 MB of
Shakespeare's plays, pre-split by GPT-2's pattern (ours: ``GPT2_PATTERN``; theirs: the
``ByteLevel`` pre-tokenizer, which applies the same pattern), on one thread
(``TOKENIZERS_PARALLELISM=false``). Timed in CPU seconds of this process (``time.process_time``),
not wall time: a busy machine stretches wall time, while CPU time counts only the work done, on
every thread. Runs alternate, ours then theirs, and each side reports its median.
"""
import os
import statistics
import time

from stepbystep.data import BytePairTokenizer, shakespeare_text

GOAL_SECONDS = 10.0  # ours, on one core
VOCAB_SIZE, N_BYTES = 1024, 1_000_000
QUICK_VOCAB_SIZE, QUICK_N_BYTES = 300, 20_000


def corpus(n_bytes=N_BYTES):
    """The first ``n_bytes`` of the plays (cut back to a whole character)."""
    return shakespeare_text().encode("utf-8")[:n_bytes].decode("utf-8", errors="ignore")


def _theirs(text, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer)
    return tokenizer


def cpu_seconds(text, vocab_size=VOCAB_SIZE, repeats=3):
    """Median CPU seconds of one training each way: ``{"ours": s, "tokenizers": s}``, and the two
    vocabulary sizes reached (both must be ``vocab_size``: the same work)."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread
    contenders = {"ours": lambda: BytePairTokenizer.train(text, vocab_size).vocab_size,
                  "tokenizers": lambda: _theirs(text, vocab_size).get_vocab_size()}
    times, sizes = {name: [] for name in contenders}, {}
    for _ in range(repeats):
        for name, train in contenders.items():
            start = time.process_time()
            sizes[name] = train()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in times.items()}, sizes


def run(quick=False):
    """One row: both medians (CPU seconds), their ratio and the goal on ours."""
    vocab_size, n_bytes = (QUICK_VOCAB_SIZE, QUICK_N_BYTES) if quick else (VOCAB_SIZE, N_BYTES)
    text = corpus(n_bytes)
    medians, sizes = cpu_seconds(text, vocab_size, repeats=1 if quick else 3)
    if sizes != {"ours": vocab_size, "tokenizers": vocab_size}:
        raise RuntimeError(f"both trainers must reach {vocab_size} ids, got {sizes}")
    return [{"case": f"{len(text.encode('utf-8')):,} bytes of Shakespeare to {vocab_size:,} ids, GPT-2 pre-split, 1 thread",
             "ours_s": medians["ours"], "reference_s": medians["tokenizers"],
             "ratio": medians["ours"] / medians["tokenizers"], "goal_s": GOAL_SECONDS,
             "met": medians["ours"] <= GOAL_SECONDS}]


if __name__ == "__main__":
    for row in run():
        print(f"{row['case']}: ours {row['ours_s']:.2f} CPU s, tokenizers {row['reference_s']:.2f} CPU s, "
              f"ratio {row['ratio']:.1f} (goal: ours <= {row['goal_s']:.0f} s)")
