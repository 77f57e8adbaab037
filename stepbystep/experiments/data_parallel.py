"""Train the course's decoder-only model on N gloo processes with a fixed global batch, and save the
weights: the same run on 1 process or on 2 gives the same model.

    python -m stepbystep.experiments.data_parallel --processes 2 --steps 20 --seed 0 --out weights.pt

Each process holds the whole model and takes ``global_batch / N`` of every batch
(``DistributedDataParallel`` with a ``DistributedSampler``, ``training.data_parallel.ddp_train``);
rank 0's ``state_dict`` goes to ``--out``, written atomically.
"""
import argparse
import os

from ..serialization import atomic_save
from ..checks import check_instance, check_positive_int
from ..training.data_parallel import DataParallelRun, check_shards, ddp_train
from ..training.processes import run_ranks

__all__ = ["COMMAND_RUN", "train_on_processes", "main"]

# the command's model and data: 2 layers of 32 on 128 sequences of 8 random tokens (of 16), repeated
COMMAND_RUN = DataParallelRun(global_batch=16, n_samples=128, vocab_size=16, length=8, d_model=32, n_layers=2)


def train_on_processes(processes, steps, seed, out, global_batch=COMMAND_RUN.global_batch):
    """Train ``COMMAND_RUN`` for ``steps`` steps from ``seed`` on ``processes`` gloo processes, each on
    ``global_batch / processes`` streams of every batch; save rank 0's ``state_dict`` to ``out`` and return it."""
    check_positive_int("processes", processes)
    check_positive_int("steps", steps)
    check_instance("out", out, (str, os.PathLike), "a file path")
    check_shards(global_batch, processes)
    run = COMMAND_RUN.replace(steps=steps, seed=seed, global_batch=global_batch)
    state = run_ranks(ddp_train, processes, run, False)[0]["state_dict"]
    atomic_save(state, out)
    return state


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, required=True, help="how many gloo processes (ranks)")
    parser.add_argument("--steps", type=int, required=True, help="optimizer steps")
    parser.add_argument("--seed", type=int, default=0, help="seeds the model, the data and the shuffles")
    parser.add_argument("--out", required=True, help="where rank 0's state_dict goes")
    parser.add_argument("--global-batch", type=int, default=COMMAND_RUN.global_batch,
                        help="streams per step, over all processes together (a multiple of --processes)")
    args = parser.parse_args(argv)
    train_on_processes(args.processes, args.steps, args.seed, args.out, args.global_batch)
    print(f"{args.processes} process(es), {args.steps} steps: rank 0's weights in {args.out}")


if __name__ == "__main__":
    main()
