"""The same data-parallel run under ``lightning.Trainer(strategy="ddp")``: the course's model in a
``StepByStepModule``, each rank in a process that ``processes.run_ranks`` started.

Lightning launches its own processes unless it finds them launched (``LOCAL_RANK`` set, as
``torchrun`` sets it); here ``run_ranks`` has started them and joined the group, so each rank tells
Lightning who it is and Lightning wraps the model in ``DistributedDataParallel`` on that group.
"""
import logging
import os
import warnings

import lightning
import torch

from ..models.gpt.model import completion_loss
from .data_parallel import build_model, check_shards, flat_parameters, repeat_dataset
from .lightning import StepByStepModule

__all__ = ["lightning_train"]


class _Snapshots(lightning.Callback):
    """The model's parameters after every optimizer step."""

    def __init__(self):
        self.parameters = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.parameters.append(flat_parameters(module.model))


def lightning_train(rank, world_size, run):
    """``data_parallel.ddp_train``'s run, trained by ``lightning.Trainer(accelerator="cpu", devices=world_size,
    strategy="ddp")``, on the same ``DistributedSampler`` (Lightning calls its ``set_epoch``).
    Returns ``{"parameters": (steps, P) after every step, "losses": this rank's mean loss per epoch}``."""
    shard = check_shards(run.global_batch, world_size)
    os.environ.update(LOCAL_RANK=str(rank), NODE_RANK="0", WORLD_SIZE=str(world_size))  # launched already
    dataset = repeat_dataset(run)
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True,
                                                  seed=run.seed, drop_last=True)
    loader = torch.utils.data.DataLoader(dataset, batch_size=shard, sampler=sampler, drop_last=True)
    model = build_model(run)
    module = StepByStepModule(model, completion_loss, torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9))
    snapshots = _Snapshots()
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # this process's: no banner, no tips
    trainer = lightning.Trainer(accelerator="cpu", devices=world_size, strategy="ddp", max_steps=run.steps,
                                use_distributed_sampler=False, callbacks=[snapshots], logger=False,
                                enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    with warnings.catch_warnings():  # Lightning's advice (no validation loader, sync_dist) is not for this run
        warnings.simplefilter("ignore")
        trainer.fit(module, loader)
    return {"parameters": torch.stack(snapshots.parameters), "losses": torch.tensor(module.losses)}
