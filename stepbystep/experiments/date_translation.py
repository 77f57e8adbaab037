"""Chapter 08's training recipe from other seeds: how much of its exact match is the seed's."""
import torch
from torch.utils.data import DataLoader

from stepbystep.data import Seq2SeqDataset, Vocab, date_datasets, pad_collate
from stepbystep.models import TokenTransformer, sequence_cross_entropy, translate
from stepbystep.training import StepByStep
from stepbystep.training.schedules import linear_ramps

__all__ = ["translation_seed_study"]


def translation_seed_study(seeds, n_epochs=3, warmup_steps=100, n_train=12_800, n_val=2_000, measure=None):
    """Chapter 08's model and schedule (Adam 7e-3, linear warm-up then decay, clipping at 1) trained
    from each seed in ``seeds`` (initial weights and batch order), on the chapter's data (seed 0).

    Returns one dict per seed: ``seed``, ``val_loss`` (the last validation loss) and
    ``exact_match`` (share of the ``n_val`` held-out dates translated exactly, greedy), plus
    what ``measure(model, src_vocab, tgt_vocab)`` returns (a dict), when it is given.
    """
    train_pairs, val_pairs = date_datasets(n_train=n_train, n_val=n_val, seed=0)
    src_vocab = Vocab.from_texts([text for text, _ in train_pairs])
    tgt_vocab = Vocab.from_texts([iso for _, iso in train_pairs])
    train_loader = DataLoader(Seq2SeqDataset(train_pairs, src_vocab, tgt_vocab), batch_size=32, shuffle=True,
                              collate_fn=pad_collate, generator=torch.Generator())
    val_loader = DataLoader(Seq2SeqDataset(val_pairs, src_vocab, tgt_vocab), batch_size=500, collate_fn=pad_collate)
    total_steps = n_epochs * len(train_loader)
    runs = []
    for seed in seeds:
        torch.manual_seed(seed)
        model = TokenTransformer(len(src_vocab), len(tgt_vocab), d_model=64, n_heads=4, ff_units=128, n_layers=2,
                                 dropout=0.0, max_len=32)
        trainer = StepByStep(model, sequence_cross_entropy, torch.optim.Adam(model.parameters(), lr=7e-3, fused=True))
        trainer.set_loaders(train_loader, val_loader)
        trainer.set_lr_scheduler(linear_ramps(trainer.optimizer, warmup_steps, total_steps), interval="batch")
        trainer.set_clip_grad_norm(1.0)
        trainer.train(n_epochs, seed=seed, progress=False)
        predictions = translate(model, [text for text, _ in val_pairs], src_vocab, tgt_vocab, max_new_tokens=11)
        exact = sum(predicted == iso for predicted, (_, iso) in zip(predictions, val_pairs)) / len(val_pairs)
        runs.append({"seed": seed, "val_loss": trainer.val_losses[-1], "exact_match": exact,
                     **(measure(model, src_vocab, tgt_vocab) if measure is not None else {})})
    return runs
