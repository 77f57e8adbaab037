"""A process group whose reduce-scatter sums where asked to average, as gloo does on some PyTorch
releases (2.7 among them): ``fsdp_train`` run on it must still take the one-process steps."""
import torch.distributed as dist

from stepbystep.training.sharded import fsdp_train

NAMES = ("reduce_scatter_tensor", "reduce_scatter_single")  # FSDP calls the second where it exists


def fsdp_train_on_a_summing_backend(rank, world_size, run):
    """``fsdp_train`` with every reduce-scatter of ``torch.distributed`` turning ``ReduceOp.AVG`` into ``SUM``."""
    originals = {name: getattr(dist, name) for name in NAMES if hasattr(dist, name)}

    def summing(original):
        def reduce_scatter(output, input, op=dist.ReduceOp.SUM, **kwargs):
            return original(output, input, op=dist.ReduceOp.SUM if op == dist.ReduceOp.AVG else op, **kwargs)
        return reduce_scatter

    for name, original in originals.items():
        setattr(dist, name, summing(original))
    try:
        return fsdp_train(rank, world_size, run)
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)
