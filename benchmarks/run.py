"""Run every benchmark and write benchmarks/RESULTS.md: ``python -m benchmarks.run [--quick]``.

Benchmarks report; they never fail a build. ``--quick`` runs each at a toy size (what the test
suite does so they cannot rot) and writes to the path given by ``--output`` instead.
"""
import argparse
import os
import platform
from datetime import date
from pathlib import Path

import torch

from stepbystep.devices import default_device

from . import attention, bpe, converted, course, data_parallel, generation, layers, tiled, trainer_overhead

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _machine():
    device = default_device()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    return (f"{date.today().isoformat()}: {os.cpu_count()} cores, {name}, device {device.type}, "
            f"torch {torch.__version__}, {torch.get_num_threads()} torch threads, Python {platform.python_version()}")


def _mark(met):
    return "✓" if met else "✗ missed"


def _ratio_table(rows):
    lines = ["| case | ours | reference | ours (ms) | reference (ms) | ratio | goal |",
             "|---|---|---|---:|---:|---:|---|"]
    for row in rows:
        goal = "" if "goal" not in row else f"≤ {row['goal']:.2f} {_mark(row['met'])}"
        lines.append(f"| {row['case']} | {row['ours']} | {row['reference']} | {row['ours_ms']:.2f} "
                     f"| {row['reference_ms']:.2f} | {row['ratio']:.3f} | {goal} |")
    return "\n".join(lines)


def _cpu_seconds_table(rows):
    lines = ["| case | ours (CPU s) | tokenizers (CPU s) | ratio | goal |", "|---|---:|---:|---:|---|"]
    for row in rows:
        lines.append(f"| {row['case']} | {row['ours_s']:.2f} | {row['reference_s']:.2f} | {row['ratio']:.2f} "
                     f"| ours ≤ {row['goal_s']:.0f} s {_mark(row['met'])} |")
    return "\n".join(lines)


def _scaling_table(rows):
    lines = ["| case | ours | reference | ours (ms) | reference (ms) | ratio | scaling efficiency |",
             "|---|---|---|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['case']} | {row['ours']} | {row['reference']} | {row['ours_ms']:.2f} "
                     f"| {row['reference_ms']:.2f} | {row['ratio']:.3f} | {row['efficiency']:.2f} |")
    return "\n".join(lines)


def _course_table(rows):
    lines = ["| chapter | default threads (s) | goal | one thread (s) | goal | of which training (s) | training goal |",
             "|---|---:|---|---:|---|---:|---|"]
    for row in rows:
        training_goal = (f"≤ {row['training_goal']:.0f} s {_mark(row['training_met'])}"
                         if "training_goal" in row else "")
        lines.append(f"| {row['case']} | {row['seconds']:.1f} | ≤ {row['goal']:.0f} s {_mark(row['met'])} "
                     f"| {row['one_thread_seconds']:.1f} | ≤ {row['goal']:.0f} s {_mark(row['one_thread_met'])} "
                     f"| {row['training_seconds']:.1f} | {training_goal} |")
    total, one_thread = (sum(row[key] for row in rows) for key in ("seconds", "one_thread_seconds"))
    lines.append(f"| **whole course** | **{total:.1f}** | ≤ 300 s {_mark(total <= 300)} | **{one_thread:.1f}** "
                 f"| ≤ 300 s {_mark(one_thread <= 300)} | | |")
    return "\n".join(lines)


SECTIONS = [
    ("Trainer overhead", trainer_overhead, _ratio_table,
     "`StepByStep.train` (progress bar on) against a hand-written loop doing the same work."),
    ("Attention", attention, _ratio_table,
     "Forward + backward of self-attention, ours against `nn.MultiheadAttention`. "
     "The fused path (`store_alphas=False`) should match PyTorch; the teaching path pays for "
     "materialising the weights."),
    ("Layers", layers, _ratio_table,
     "Forward + backward in training mode, ours (fused attention path) against PyTorch's layers."),
    ("Generation", generation, _ratio_table,
     "Greedy generation of 256 tokens after 16 with the KV cache (4 heads, ff 4·d_model, 2 layers, CPU, "
     "one thread), against recomputing the whole stream at every step (goal: at least 2.5× faster at "
     "d_model 64, 10× at 256) and against Hugging Face `transformers`' cached `generate` on a GPT-2 of "
     "the same shape (goal ≤ 0.70)."),
    ("Generation on converted models", converted, _ratio_table,
     "Chapter 12's `from_transformers`: a `transformers` GPT-2 and a grouped-query Llama (4 heads, 2 KV heads), "
     "2 layers, random weights, converted; greedy generation of 256 tokens after 16 (the same tokens, checked), "
     "the course's cached `generate` against `transformers`' cached `generate` on the same weights "
     "(CPU, one thread; goal ≤ 0.70)."),
    ("Tiled attention", tiled, _ratio_table,
     "Chapter 14's `tiled_attention` (a Python loop over tiles) and the written-out `attend`, forward only, "
     "against `F.scaled_dot_product_attention`. No goal: the loop is expected to be slower than the fused kernel."),
    ("BPE training", bpe, _cpu_seconds_table,
     "Chapter 15's `BytePairTokenizer.train` (Python) against Hugging Face `tokenizers`' BPE trainer (Rust, "
     "`ByteLevel` pre-tokenizer) on the same 1 MB of Shakespeare, to 1,024 ids, one thread. In CPU seconds of "
     "the process (`time.process_time`), not wall time, so a busy machine does not inflate them; medians of "
     "3 alternating runs."),
    ("Data parallelism", data_parallel, _scaling_table,
     "Chapter 16: one training step (forward, backward, optimizer) of the decoder-only model on one global "
     "batch, on 2 `gloo` processes under `DistributedDataParallel` (one thread each, half the batch each) "
     "against 1 process with 1 thread and 1 process with 2 threads (the whole batch). Wall time of the "
     "slowest rank, medians over alternating starts. Scaling efficiency: reference / (2 × ours), 1 when two "
     "processes halve the step."),
    ("Course", course, _course_table,
     "Each chapter executed top to bottom in a clean kernel, at PyTorch's default thread count (as JupyterLab "
     "and `pytest --nbval notebooks/` run it; training time from this run) and at one thread (the strict pass)."),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="toy sizes, one repeat (a smoke test)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the Markdown report")
    args = parser.parse_args(argv)
    parts = ["# Benchmarks", "", f"Measured by `make bench` on {_machine()}.", "",
             "Ratios are ours / reference (below 1 means ours is faster): medians of alternating runs, "
             "side by side in one process, so they compare fairly on whatever machine runs them."]
    # The course runs first: executing notebooks from a process that has already done heavy
    # torch work once stalled a kernel for minutes; a fresh process has never shown it.
    rows = {}
    for title, module, _, _ in sorted(SECTIONS, key=lambda section: section[1] is not course):
        print(f"running {title.lower()} ...", flush=True)
        rows[title] = module.run(quick=args.quick)
    for title, _, table, description in SECTIONS:
        parts += ["", f"## {title}", "", description, "", table(rows[title])]
    args.output.write_text("\n".join(parts) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
