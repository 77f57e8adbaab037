# %% [markdown]
# # Chapter 07: tokens, padding and decoding
#
# Until now our Transformer read and wrote points in the plane. Language models read and write
# *symbols*: characters, words, pieces of words. This chapter makes the Transformer work on
# symbols, on two small tasks: reversing a string of 16 digits, then reversing words of
# different lengths, which brings padding with it.
#
# By the end of this chapter you will be able to:
#
# - turn text into **token ids** with a vocabulary and its **special tokens** (`<pad>`,
#   `<sos>`, `<eos>`, `<unk>`), and ids into vectors with an **embedding**;
# - train a token-level Transformer with the **cross-entropy** loss, and read its
#   **cross-attention** to see *how* it reverses a sequence;
# - say why the size of the embeddings against the positional encoding matters, with
#   numbers from three short runs;
# - **pad** a batch of sequences of different lengths, build its **padding masks**, and show
#   what goes wrong without them;
# - use a **warm-up** learning-rate schedule from `torch.optim.lr_scheduler` with `StepByStep`;
# - decode with **greedy decoding** and **beam search**, and score the results with
#   **masked (token) accuracy** and **exact match**.

# %%
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR
from torch.utils.data import DataLoader

from stepbystep import StepByStep
from stepbystep import plots
from stepbystep.data import (
    Seq2SeqDataset,
    Vocab,
    pad_collate,
    reverse_digits_dataset,
    reverse_words_dataset,
    train_val_split,
)
from stepbystep.exercises import ch07
from stepbystep.models import (
    SequenceCrossEntropy,
    TokenTransformer,
    beam_search,
    greedy_decode,
    masked_accuracy,
    sequence_accuracy,
    sequence_cross_entropy,
    sequence_log_probs,
    sinusoidal_table,
    subsequent_mask,
    translate,
)

torch.set_num_threads(1)  # the tensors here are tiny: one thread beats coordinating several

# %% [markdown]
# ## From symbols to ids
#
# A **vocabulary** gives every symbol an integer id. Ours starts with four **special tokens**
# that are not symbols of the text:
#
# - `<pad>` (id 0) fills the end of short sequences so a batch is a rectangle;
# - `<sos>` (id 1), "start of sequence", is the decoder's first input: it has to read
#   *something* before it has written anything;
# - `<eos>` (id 2), "end of sequence", is the decoder's last output: the model says itself
#   when it is done, so outputs can have any length;
# - `<unk>` (id 3), "unknown", replaces any symbol the vocabulary has never seen.
#
# For the digits task the symbols are the ten digits, ids 4 to 13.

# %%
# NBVAL_CHECK_OUTPUT
digit_vocab = Vocab("0123456789")
print(digit_vocab)
print(f"itos: {digit_vocab.itos}")
ids = digit_vocab.encode("2024", add_sos=True, add_eos=True)
print(f"'2024' -> {ids} -> {digit_vocab.decode(ids)!r}")
print(f"'20x4' -> {digit_vocab.encode('20x4')}: 'x' is not in the vocabulary")
print(f"decoded without stripping the specials: {digit_vocab.decode(ids + [0, 0], strip_specials=False)!r}")

# %% [markdown]
# ## From ids to vectors: embeddings
#
# An id is a name, not a quantity: digit 9 is not "more" than digit 1. So ids are not fed to
# the model as numbers. Each id picks a row of a learned matrix $E$ of shape
# $(V, d_{model})$, the **embedding** of that token. `nn.Embedding` does exactly this
# lookup; it is the same as multiplying the one-hot vector of the id by $E$, without building
# the one-hot vectors.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
embedding = nn.Embedding(len(digit_vocab), 8)
batch_ids = torch.tensor([digit_vocab.encode("2024"), digit_vocab.encode("1999")])  # (2, 4)
vectors = embedding(batch_ids)  # (2, 4, 8): one row of E per id
one_hot = F.one_hot(batch_ids, len(digit_vocab)).float()  # (2, 4, 14)
print(f"ids {tuple(batch_ids.shape)} -> vectors {tuple(vectors.shape)}")
print(f"lookup equals one-hot @ E: {torch.allclose(vectors, one_hot @ embedding.weight)}")
print(f"the embeddings start as N(0, 1): std of E = {embedding.weight.std():.2f}")

# %% [markdown]
# Remember that standard deviation of 1: it comes back when we add the positional encoding.

# %% [markdown]
# ## Task 1: reversing digits
#
# The source is a string of 16 random digits, the target the same string reversed. Every
# output symbol is in the input; the model "only" has to find the right position, which makes
# it a clean test of attention. We draw 3,000 pairs and keep 10% apart for validation;
# `train_val_split` makes sure no source is in both.

# %%
# NBVAL_CHECK_OUTPUT
digit_pairs = reverse_digits_dataset(3000, length=16, seed=0)
digit_train, digit_val = train_val_split(digit_pairs, val_fraction=0.1, seed=0)
print(f"{len(digit_train)} training pairs, {len(digit_val)} validation pairs")
for source, target in digit_train[:3]:
    print(f"{source} -> {target}")

# %% [markdown]
# `Seq2SeqDataset` encodes the pairs; the target gets `<sos>` in front and `<eos>` at the end.
# `pad_collate` stacks a batch and, from each target, makes the two tensors of teacher forcing
# (chapter 02): the decoder reads `target_in` = `<sos> y_1 ... y_n` and must predict, at every
# position, the next token: `target_out` = `y_1 ... y_n <eos>`. The batch is the `(x, y)` pair
# `StepByStep` expects, with `x = (source, target_in)` called as `model(source, target_in)`.
# All digit strings have the same length, so there is no padding yet.

# %%
# NBVAL_CHECK_OUTPUT
digit_train_set = Seq2SeqDataset(digit_train, digit_vocab, digit_vocab)
digit_val_set = Seq2SeqDataset(digit_val, digit_vocab, digit_vocab)
digit_train_loader = DataLoader(digit_train_set, batch_size=64, shuffle=True, collate_fn=pad_collate,
                                generator=torch.Generator())
digit_val_loader = DataLoader(digit_val_set, batch_size=len(digit_val_set), collate_fn=pad_collate)

(source, target_in), target_out = next(iter(digit_val_loader))  # (300, 16), (300, 17), (300, 17)
print(f"source {tuple(source.shape)}, target_in {tuple(target_in.shape)}, target_out {tuple(target_out.shape)}")
print(f"source:     {digit_vocab.decode(source[0], strip_specials=False)}")
print(f"target_in:  {digit_vocab.decode(target_in[0], strip_specials=False)}")
print(f"target_out: {digit_vocab.decode(target_out[0], strip_specials=False)}")

# %% [markdown]
# ## A Transformer for tokens
#
# `TokenTransformer` wraps the course's own encoder and decoder stacks (`EncoderTransf`,
# `DecoderTransf` of chapter 05, built from `EncoderLayer` and `DecoderLayer`) with what
# tokens need: an embedding for the source and one for the target, the masks built from the
# ids, and a final linear layer, the **generator**, that turns each decoder output into $V$
# scores (**logits**), one per token of the target vocabulary. A small one is enough here:
# $d_{model} = 32$, 2 heads, one layer in each stack, no dropout.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(42)
digit_model = TokenTransformer(len(digit_vocab), len(digit_vocab), d_model=32, n_heads=2, ff_units=64,
                               n_layers=1, dropout=0.0, max_len=17)
logits = digit_model(source, target_in)  # (300, 17, 14)
print(f"logits {tuple(logits.shape)}: one score per target token, at every position")
print(f"{sum(p.numel() for p in digit_model.parameters()):,} parameters")

# %% [markdown]
# **The loss.** At every position the logits go through a softmax to give a distribution over
# the $V$ tokens, and the loss is the **cross-entropy**, minus the log-probability of the right
# token, averaged over the positions. `F.cross_entropy` expects `(samples, V)` logits, so we
# flatten batch and positions together. Its `ignore_index` leaves out positions whose target
# is `<pad>`: padding is not something to predict. (Here there is none yet; the words will
# have some.) An untrained model spreads its bets, so the loss starts near $\ln V$.

# %%
# NBVAL_CHECK_OUTPUT
V = logits.shape[-1]
by_hand = F.cross_entropy(logits.reshape(-1, V), target_out.reshape(-1),  # (300·17, 14), (300·17,)
                          ignore_index=digit_vocab.pad_id)
print(f"loss by hand {by_hand:.4f}; ln V = {torch.log(torch.tensor(float(V))):.4f}")
print(f"same as sequence_cross_entropy: {torch.allclose(by_hand, sequence_cross_entropy(logits, target_out))}")

# %% [markdown]
# `SequenceCrossEntropy` is the same loss as a module, ready to be the trainer's `loss_fn`.
# Adam, learning rate 0.005, four epochs:

# %%
digit_trainer = StepByStep(digit_model, SequenceCrossEntropy(pad_id=digit_vocab.pad_id),
                           torch.optim.Adam(digit_model.parameters(), lr=5e-3))
digit_trainer.set_loaders(digit_train_loader, digit_val_loader)
digit_trainer.train(4, progress=False)
for epoch, (loss, val_loss) in enumerate(zip(digit_trainer.losses, digit_trainer.val_losses), start=1):
    print(f"epoch {epoch}: training loss {loss:.4f}, validation loss {val_loss:.4f}")

# %% [markdown]
# ## Greedy decoding
#
# A low loss is measured with teacher forcing: the decoder always reads the *true* previous
# digits. To use the model we must let it write on its own. **Greedy decoding** starts from
# `<sos>`, takes the most likely token, appends it to the decoder's input, and repeats, until
# `<eos>` or a maximum length. Written out for the whole validation batch at once:

# %%
device = digit_trainer.device
val_source, val_target_out = source.to(device), target_out.to(device)  # (300, 16), (300, 17)
with torch.no_grad():
    memory, source_mask = digit_model.encode(val_source)  # (300, 16, 32): encoded once, read at every step
    generated = torch.full((len(val_source), 1), digit_vocab.sos_id, device=device)  # (300, 1)
    for step in range(17):  # 16 digits and <eos>
        logits = digit_model.decode(generated, memory, source_mask)  # (300, step + 1, 14)
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (300, 1): the most likely token
        generated = torch.cat([generated, next_token], dim=1)  # (300, step + 2)
by_hand = generated[:, 1:]  # (300, 17): without <sos>
print(f"{digit_val[0][0]} -> {digit_vocab.decode(by_hand[0])}")

# %% [markdown]
# `greedy_decode` does the same, plus the care a batch needs: each sequence stops at its own
# `<eos>` (the finished ones get `<pad>` afterwards), the loop ends when all are finished, and
# the model runs in eval mode without gradients. The **exact match** (`sequence_accuracy`)
# counts the outputs that are right up to and including their `<eos>`:

# %%
greedy = greedy_decode(digit_model, val_source, digit_vocab.sos_id, digit_vocab.eos_id, max_len=17)  # (300, 17)
print(f"greedy_decode equals the loop: {torch.equal(greedy, by_hand)}")
digit_exact = sequence_accuracy(greedy, val_target_out)
print(f"exact match on {len(digit_val)} validation strings: {digit_exact:.1%}")

# %% [markdown]
# ## How the model reverses: cross-attention
#
# To write output $t$ (counting from 0), the decoder must read source digit $15 - t$. If its
# cross-attention does the reading, the weights should lie on the **anti-diagonal**. The last
# call of `greedy_decode` ran the decoder on `<sos>` and all 16 digits, so the weights it
# left behind in `model.decoder.layers[-1].cross_attn_heads.alphas`, $(N, h, L_t, L_s)$,
# cover every output position. Rows are labelled with the token each position wrote.

# %%
cross = digit_model.decoder.layers[-1].cross_attn_heads.alphas  # (300, 2, 17, 16)
fig = plots.reversal_attention(cross[0], digit_val[0][0], digit_vocab.decode(greedy[0]) + "⏎",
                               title="cross-attention while reversing (⏎ = <eos>)")

# %% [markdown]
# The weight each head puts exactly on the anti-diagonal, averaged over the 16 digit positions
# and the validation set (1 would be pure reading of the right digit):

# %%
anti_diagonal = cross[:, :, torch.arange(16), 15 - torch.arange(16)]  # (300, 2, 16)
for head, weight in enumerate(anti_diagonal.mean(dim=(0, 2)).tolist()):
    print(f"head {head}: {weight:.2f}")

# %% [markdown]
# The weights follow the anti-diagonal: each output position reads the digit it has to
# copy, and what strays from it lands mostly on that digit's neighbours. The model learned
# the reversal as a *lookup by position*. (The last row, where the model writes `<eos>`,
# reads the first source digit: the copying has reached the start of the source.)

# %% [markdown]
# ## A pitfall: the size of the embeddings
#
# Both stacks add the positional encoding of chapter 02 to the embeddings. The paper
# multiplies the embeddings by $\sqrt{d_{model}}$ first, and many implementations copy it.
# But in the original implementation the embeddings start small (standard deviation
# $1/\sqrt{d_{model}}$), so the product has entries of about 1, like the sinusoids. `nn.Embedding` starts at standard
# deviation 1: multiplied by $\sqrt{d_{model}}$, a token's vector is several times larger
# than the encoding of its position, and the position, the one thing the reversal is about,
# is hard to hear. Compare the root-mean-square size of the entries:

# %%
# NBVAL_CHECK_OUTPUT
d_model = 32
positions = sinusoidal_table(17, d_model)  # (17, 32)
print(f"positional encoding: {positions.pow(2).mean().sqrt():.2f}")
for name, std in [("N(0, 1) embedding × √d_model", d_model**0.5), ("N(0, 1) embedding", 1.0),
                  ("N(0, 0.3²) embedding", 0.3)]:
    print(f"{name:>29}: {std:.2f}")

# %% [markdown]
# `TokenTransformer` therefore does **not** scale its embeddings (`scale_embeddings=False`).
# Three short runs, the same model and seed as above, tell the difference:
# `scale_embeddings=True` (the pitfall), our default, and embeddings that start smaller,
# `embedding_std=0.3`, so that positions are the louder signal at the start.

# %%
def digit_run(**kwargs):
    """Train the digits model of this chapter with other embedding settings; return the trainer."""
    torch.manual_seed(42)
    model = TokenTransformer(len(digit_vocab), len(digit_vocab), d_model=32, n_heads=2, ff_units=64,
                             n_layers=1, dropout=0.0, max_len=17, **kwargs)
    trainer = StepByStep(model, SequenceCrossEntropy(), torch.optim.Adam(model.parameters(), lr=5e-3))
    trainer.set_loaders(digit_train_loader, digit_val_loader)
    trainer.train(4, progress=False)
    return trainer


runs = {"× √d_model": digit_run(scale_embeddings=True), "default": digit_trainer,
        "std 0.3": digit_run(embedding_std=0.3)}
for name, trainer in runs.items():
    predicted = greedy_decode(trainer.model, val_source, digit_vocab.sos_id, digit_vocab.eos_id, max_len=17)
    print(f"{name:>10}: validation loss by epoch " + ", ".join(f"{v:.3f}" for v in trainer.val_losses)
          + f"; exact match {sequence_accuracy(predicted, val_target_out):.1%}")

# %%
fig = plots.compare_runs({name: (t.losses, t.val_losses) for name, t in runs.items()}, test_label="validation")

# %% [markdown]
# With the $\sqrt{d_{model}}$ scaling the model lags far behind in the same four epochs; the
# smaller start learns fastest. (The course measured the same effect on the dates of chapter 08
# with a larger model.) Rule of thumb: make the token vectors and the position vectors
# comparable in size, or smaller tokens when order is what matters.

# %% [markdown]
# ## Task 2: reversing words, and padding
#
# Now the sequences have different lengths. The "words" are random strings of 4 to 12
# lowercase letters: not dictionary words, so the model cannot guess a letter from the
# spelling and must really read and reverse each one. The vocabulary is built from the
# training words: 26 letters and the four specials.

# %%
# NBVAL_CHECK_OUTPUT
word_pairs = reverse_words_dataset(5000, min_len=4, max_len=12, seed=0)
word_train, word_val = train_val_split(word_pairs, val_fraction=0.1, seed=0)
vocab = Vocab.from_texts([source for source, _ in word_train])
print(f"{len(word_train)} training words, {len(word_val)} validation words; {vocab}")
for source, target in word_train[:3]:
    print(f"{source} -> {target}")

# %% [markdown]
# **Padding.** A batch is a rectangle, so `pad_collate` pads every sequence with `<pad>` up to
# the longest in the batch (`torch.nn.utils.rnn.pad_sequence`). Four words of different
# lengths:

# %%
# NBVAL_CHECK_OUTPUT
word_train_set = Seq2SeqDataset(word_train, vocab, vocab)
word_val_set = Seq2SeqDataset(word_val, vocab, vocab)
(small_source, small_target_in), small_target_out = pad_collate([word_train_set[i] for i in range(4)])
print(f"source {tuple(small_source.shape)}:\n{small_source}")
print(f"target_in {tuple(small_target_in.shape)}:\n{small_target_in}")

# %% [markdown]
# The zeros must not change what the model computes for a word: a word's reversal is the same
# whether its neighbours in the batch are short or long. Attention is where they could leak
# in: every query attends to every key, pads included. **Padding masks** (`True` = may
# attend, as in chapter 02) remove them:
#
# - the **source mask** $(N, 1, L_s)$ is `True` where the source is not `<pad>`; it masks the
#   keys of the encoder's self-attention and of the decoder's cross-attention;
# - the **target mask** $(N, L_t, L_t)$ is the causal mask of chapter 02 AND the target's own
#   padding mask: position $i$ may read position $j \le i$ if $j$ is not `<pad>`.
#
# By hand, and checked against the model's:

# %%
# NBVAL_CHECK_OUTPUT
pad = vocab.pad_id
source_mask = (small_source != pad).unsqueeze(1)  # (4, 1, L_s)
target_mask = subsequent_mask(small_target_in.shape[1]) & (small_target_in != pad).unsqueeze(1)  # (4, L_t, L_t)
checker = TokenTransformer(len(vocab), len(vocab), max_len=16)
print(f"source mask {tuple(source_mask.shape)}, same as the model's: "
      f"{torch.equal(source_mask, checker.source_mask(small_source))}")
print(f"target mask {tuple(target_mask.shape)}, same as the model's: "
      f"{torch.equal(target_mask, checker.target_mask(small_target_in))}")

# %% [markdown]
# The batch and its masks; grey cells are padding (left) or blocked (right). The
# target mask on the right is the one of the shortest word: the causal triangle, with the
# padded columns removed.

# %%
shortest = int((small_target_in != pad).sum(dim=1).argmin())
fig = plots.padded_batch(small_source, small_target_in, small_target_out, vocab, source_mask, target_mask,
                         index=shortest)

# %% [markdown]
# The loss already ignores padded *targets* (`ignore_index`); padded *queries* compute
# something, but nobody reads it: no loss, no later position attends to them. What the
# masks add is that real positions never read padded *keys*.

# %% [markdown]
# ## Warm-up
#
# The word model is larger: $d_{model} = 64$, 4 heads, two layers in each stack, and
# embeddings that start at standard deviation 0.3, as the pitfall suggested. Its first updates
# are the riskiest: Adam divides each step by a running estimate of the gradient's size, and
# after a handful of batches that estimate is poor. A **warm-up** starts the learning rate
# small and raises it over the first steps. Here it rises linearly over 30 steps
# (`LinearLR`), then decays along a cosine to zero by the end of training
# (`CosineAnnealingLR`); `SequentialLR` chains the two. These schedules count optimizer steps,
# not epochs, so the trainer must step them after every batch: `interval='batch'`.

# %%
word_train_loader = DataLoader(word_train_set, batch_size=64, shuffle=True, collate_fn=pad_collate,
                               generator=torch.Generator())
word_val_loader = DataLoader(word_val_set, batch_size=len(word_val_set), collate_fn=pad_collate)
n_epochs, warmup_steps = 3, 30
total_steps = n_epochs * len(word_train_loader)


def word_trainer(pad_id):
    """The word model (padding masks on, or off with pad_id=None) and its trainer, warm-up set."""
    torch.manual_seed(42)
    model = TokenTransformer(len(vocab), len(vocab), d_model=64, n_heads=4, ff_units=128, n_layers=2,
                             dropout=0.0, max_len=16, pad_id=pad_id, embedding_std=0.3)
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-3)
    warmup = LinearLR(optimizer, start_factor=0.01, total_iters=warmup_steps)
    decay = CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    trainer = StepByStep(model, SequenceCrossEntropy(pad_id=vocab.pad_id), optimizer)
    trainer.set_lr_scheduler(SequentialLR(optimizer, [warmup, decay], milestones=[warmup_steps]), interval="batch")
    trainer.set_loaders(word_train_loader, word_val_loader)
    return trainer


words = word_trainer(pad_id=vocab.pad_id)
word_model = words.model
print(f"{len(word_train_loader)} steps an epoch, {total_steps} in all; "
      f"{sum(p.numel() for p in word_model.parameters()):,} parameters")

# %% [markdown]
# Two epochs first; we stop half-way on purpose, to look at the metrics and the decoders on a
# model that still makes mistakes.

# %%
words.train(2, progress=False)
print(f"validation loss after {words.total_epochs} epochs: {words.val_losses[-1]:.4f}")

# %% [markdown]
# ## Masked accuracy and exact match
#
# Two accuracies answer two questions:
#
# - the **masked (token) accuracy**: with teacher forcing, the share of real target tokens
#   (not `<pad>`) whose most likely token is right. Counting padded positions too would
#   score guesses the model was never trained to make (the loss ignores them);
# - the **exact match**: the share of words the model writes entirely right, decoding on its
#   own. One wrong letter, or an `<eos>` too early or too late, and the word counts as wrong.

# %%
(val_source, val_target_in), val_target_out = next(iter(word_val_loader))  # (500, 12), (500, 13), (500, 13)
val_source, val_target_in, val_target_out = (t.to(words.device) for t in (val_source, val_target_in, val_target_out))
with torch.no_grad():  # the trainer left the model in eval mode
    val_logits = word_model(val_source, val_target_in)  # (500, 13, 30)
counting_pads = (val_logits.argmax(-1) == val_target_out).float().mean().item()
print(f"padding in the targets: {(val_target_out == pad).float().mean():.1%} of the positions")
print(f"token accuracy counting the padded positions too: {counting_pads:.2%}")
print(f"masked accuracy: {masked_accuracy(val_logits, val_target_out, pad):.2%}")
halfway_greedy = greedy_decode(word_model, val_source, vocab.sos_id, vocab.eos_id, max_len=13)
print(f"exact match (greedy): {sequence_accuracy(halfway_greedy, val_target_out):.2%}")

# %% [markdown]
# The masked accuracy is the higher number: it grades each letter separately, and with the
# true previous letters in hand. The exact match is what a user of the model sees.

# %% [markdown]
# ## Greedy decoding vs beam search
#
# Greedy decoding commits to the best token at each step. But the most likely *sequence* need
# not start with the most likely token: a first letter at 60% followed by an unsure second
# one can lose to a first letter at 40% followed by a sure one. **Beam search** keeps the
# $B$ best partial outputs (the beam) instead of one: at each step it extends each of them by
# every token and keeps the $B$ best of these $B \cdot V$ candidates, scored by the sum of
# their log-probabilities. An output that writes `<eos>` is finished and keeps its score.
# `beam_search` runs all sources and all beams as one batch; with $B = 1$ it is greedy
# decoding. A sum of log-probabilities favours short outputs (every token adds a negative
# term): its `length_penalty` $\alpha$ divides the score by $\text{length}^\alpha$; we keep
# $\alpha = 0$ here, since the right length is never in doubt in this task.

# %%
halfway_beam = beam_search(word_model, val_source, vocab.sos_id, vocab.eos_id, max_len=13, beam_width=4)
greedy_scores = sequence_log_probs(word_model, val_source, halfway_greedy, vocab.sos_id, vocab.eos_id)  # (500,)
beam_scores = sequence_log_probs(word_model, val_source, halfway_beam, vocab.sos_id, vocab.eos_id)  # (500,)
print(f"exact match: greedy {sequence_accuracy(halfway_greedy, val_target_out):.2%}, "
      f"beam search (B=4) {sequence_accuracy(halfway_beam, val_target_out):.2%}")
print(f"beam output at least as likely as greedy's: {(beam_scores >= greedy_scores - 1e-4).float().mean():.1%}")
differ = [i for i in range(len(word_val)) if vocab.decode(halfway_greedy[i]) != vocab.decode(halfway_beam[i])]
print(f"words where the two decoders disagree: {len(differ)}")
for i in differ[:6]:
    print(f"  {word_val[i][0]:>12}: greedy {vocab.decode(halfway_greedy[i]):>12} ({greedy_scores[i]:6.2f}), "
          f"beam {vocab.decode(halfway_beam[i]):>12} ({beam_scores[i]:6.2f}), right: {word_val[i][1]}")

# %% [markdown]
# The numbers in brackets are each output's log-probability under the model. Where the two
# disagree, the beam found an output the model itself scores higher, which is the point of
# searching (in general beam search is not guaranteed to beat greedy, but it rarely loses). Whether that output is also *right* depends on the model: a search can
# only find what the model scores highest. Beam search pays for it with $B$ times the work.
#
# Now the last epoch, which finishes the learning-rate schedule:

# %%
words.train(1, progress=False)
final_greedy = greedy_decode(word_model, val_source, vocab.sos_id, vocab.eos_id, max_len=13)
final_beam = beam_search(word_model, val_source, vocab.sos_id, vocab.eos_id, max_len=13, beam_width=4)
word_exact = sequence_accuracy(final_greedy, val_target_out)
print(f"after {words.total_epochs} epochs: validation loss {words.val_losses[-1]:.4f}")
print(f"exact match on {len(word_val)} validation words: greedy {word_exact:.2%}, "
      f"beam search {sequence_accuracy(final_beam, val_target_out):.2%}")

# %% [markdown]
# The learning rate of every step, as the trainer recorded it (`sbs.learning_rates`): the
# linear warm-up, then the cosine decay, with the epochs' ends dotted.

# %%
fig = plots.learning_rate_schedule(words.learning_rates, steps_per_epoch=len(word_train_loader),
                                   warmup_steps=warmup_steps)

# %% [markdown]
# ## What goes wrong without padding masks
#
# The same model, the same seed, the same data and schedule, but `pad_id=None`: no padding
# masks, only the causal one. Pads are then tokens like any other, which attention reads.

# %%
unmasked = word_trainer(pad_id=None)
unmasked.train(n_epochs, progress=False)
print(f"without padding masks, after {unmasked.total_epochs} epochs: validation loss {unmasked.val_losses[-1]:.4f}")

# %% [markdown]
# To compare the two models fairly, we decode the validation words under three paddings:
#
# - **as in training**: all 500 words in one batch, padded to the longest;
# - **alone**: each word with no padding at all (words of one length batched together);
# - **extra padding**: the batch with 3 more pads at the end of every source.
#
# A word's reversal should not depend on any of this.

# %%
def exact_match(model, padding):
    """Greedy exact match on the validation words, with their sources padded as ``padding`` says."""
    lengths = [len(source) for source, _ in word_val]
    if padding == "alone":
        groups = [[i for i, length in enumerate(lengths) if length == n] for n in sorted(set(lengths))]
    else:
        groups = [list(range(len(word_val)))]
    correct = 0.0
    for indices in groups:
        (source, _), target_out = pad_collate([word_val_set[i] for i in indices])  # (n, L_s), (n, L_t)
        if padding == "extra":
            source = F.pad(source, (0, 3), value=vocab.pad_id)  # (n, L_s + 3)
        predicted = greedy_decode(model, source.to(words.device), vocab.sos_id, vocab.eos_id, max_len=13)
        correct += sequence_accuracy(predicted, target_out) * len(indices)
    return correct / len(word_val)


for name, model in [("with padding masks", word_model), ("without", unmasked.model)]:
    scores = {padding: exact_match(model, padding) for padding in ("as in training", "alone", "extra")}
    print(f"{name:>18}: " + ", ".join(f"{padding} {score:.1%}" for padding, score in scores.items()))

# %% [markdown]
# Read the table. Judged only the usual way, in one padded batch, the unmasked model can look
# as good as the masked one: padding is a token it has learned to read, and it may even use
# where the pads start as an end-of-word marker. But its answers depend on the padding, that
# is on *which other words share the batch*: alone or with extra pads, the same words come
# out different. The masked model gives the same answers in all three cases: with the masks,
# a word's computation never touches a pad. That is what padding masks are for, and why a
# validation set padded exactly like the training batches can hide their absence.

# %% [markdown]
# ## Using the model
#
# `translate` wraps the steps: encode each text with the vocabulary, pad, decode (greedy, or a
# beam with `beam_width`), and turn the ids back into text. Characters outside the vocabulary
# become `<unk>`: here the capital letter and the digits. The training words never contained
# an `<unk>`, so the model has no idea what to write for one; look at the last two lines.
# Whatever a symbol was, `<unk>` has forgotten it: a vocabulary should cover the texts the
# model will meet.

# %%
for text in ["stressed", "drawer", "straw", "Stressed", "room101"]:
    print(f"{text:>9} -> {translate(word_model, text, vocab, vocab)}")

# %% [markdown]
# An empty text and a text longer than the model's maximum length (16 tokens) are refused
# with a `ValueError` that says why, before the model sees them:

# %%
# NBVAL_CHECK_OUTPUT
for text in ["", "a" * 20]:
    try:
        translate(word_model, text, vocab, vocab)
    except ValueError as error:
        print(f"ValueError: {error}")

# %% [markdown]
# ## Recap
#
# - A **vocabulary** maps symbols to ids, with special tokens: `<pad>` fills batches,
#   `<sos>` starts the decoder, `<eos>` ends an output, `<unk>` stands for unknown symbols.
#   An **embedding** turns each id into a learned vector.
# - The decoder reads `<sos> y` and predicts `y <eos>` (teacher forcing); the loss is the
#   **cross-entropy** over the non-padded positions (`ignore_index`).
# - The model that reverses digits reads the source along the **anti-diagonal** of its
#   cross-attention: reversal as a lookup by position.
# - Token embeddings start at standard deviation 1 in PyTorch: scaling them by
#   $\sqrt{d_{model}}$ **drowns the positional encoding**. Keep them comparable to it, or
#   smaller when order matters.
# - **Padding masks** keep real positions from reading pads (source mask $(N, 1, L_s)$, target
#   mask = causal AND padding, $(N, L_t, L_t)$). Without them, outputs depend on the batch.
# - **Warm-up** with torch's own schedulers (`LinearLR`, `SequentialLR`) stepped with
#   `set_lr_scheduler(..., interval='batch')`.
# - **Greedy decoding** takes the best token at each step; **beam search** keeps the $B$ best
#   partial outputs and finds outputs the model scores at least as high.
# - **Masked accuracy** grades tokens under teacher forcing; **exact match** grades whole
#   outputs as the model writes them.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: call `.check(...)` on your answer to get a verdict, or a hint
# when something is off; `.solution()` prints a worked solution. The cells below run the
# checkers on placeholders, so they fail until you fill them in.
#
# **1. Masked accuracy by hand.** Write `my_masked_accuracy(logits, targets, pad_id)` that
# returns, as a float, the share of positions whose target is not `pad_id` where the most
# likely token is the target. Logits are `(N, L, V)`, targets `(N, L)`.

# %%
def my_masked_accuracy(logits, targets, pad_id):
    return (logits.argmax(-1) == targets).float().mean().item()  # replace: this counts the padding too


ch07.masked_accuracy.check(my_masked_accuracy)

# %% [markdown]
# **2. Exact match up to `<eos>`.** Write `my_exact_match(predicted, targets, eos_id)` for two
# `(N, L)` id tensors of the same shape that returns the share of rows that agree on every
# token up to and including the first `eos_id` of the target; what follows in either row does
# not count.

# %%
def my_exact_match(predicted, targets, eos_id):
    return (predicted == targets).all(dim=1).float().mean().item()  # replace: this also compares after <eos>


ch07.exact_match.check(my_exact_match)

# %% [markdown]
# **3. Ranking finished outputs.** Beam search ends with several finished outputs, each with
# a total log-probability and a length. Write `my_best_output(log_probs, lengths,
# length_penalty)` that returns the index of the output with the best score
# $\log p / \text{length}^\alpha$. With $\alpha = 0$, which one wins: a short or a long one?

# %%
def my_best_output(log_probs, lengths, length_penalty):
    return 0  # replace: compute each output's score and return the index of the best


ch07.best_output.check(my_best_output)

# %% [markdown]
# **4. No warm-up, larger steps.** Build the word model with `word_trainer`, but replace its
# scheduler by a constant learning rate (call `set_lr_scheduler` with
# `LambdaLR(optimizer, lambda step: 1.0)`), and train it for three epochs at learning rates
# 0.004 and 0.01. Compare the exact match and the loss curves with the warmed-up run
# (`plots.compare_runs`). (No checker: the runs speak for themselves.)
