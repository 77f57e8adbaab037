"""The callback protocol: how clipping, schedulers and logging join the training loop.

``StepByStep.train`` calls these hooks on every callback, in the order they were added::

    on_train_start(trainer)
    for every epoch:
        for every batch:   forward, loss, backward
            on_after_backward(trainer)                   # gradients ready, step not taken
                                                          # optimizer step
            on_batch_end(trainer, epoch, batch_index, loss)
        validation
        on_epoch_end(trainer, epoch, loss, val_loss)      # val_loss None without a val_loader
    on_train_end(trainer)                                 # always, even after an error

Epochs and batches count from 1; ``loss`` is a float. Setting ``trainer.should_stop = True``
in a hook ends training after the current epoch. Subclass ``Callback`` and override only the
hooks you need.
"""

__all__ = ["Callback"]


class Callback:
    """Does nothing at every hook; override the ones you need."""

    def on_train_start(self, trainer):
        pass

    def on_after_backward(self, trainer):
        pass

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        pass

    def on_epoch_end(self, trainer, epoch, loss, val_loss):
        pass

    def on_train_end(self, trainer):
        pass
