# %% [markdown]
# # Chapter 08: translating dates
#
# People write dates in a hundred ways: "Tue 10 Jul 2007", "March 3rd 2001", "21th of August
# 2016", "5 APRIL 09". Computers want one: the ISO form `YYYY-MM-DD`. In this chapter a
# character-level Transformer learns to translate the first into the second, from generated
# examples only, with a model small enough to train on a laptop CPU while you read.
#
# By the end of this chapter you will be able to:
#
# - generate a **translation data set** with rules that keep every input unambiguous, and split
#   it so that validation dates were never seen in training;
# - build **character vocabularies** and batches of padded token ids for a sequence-to-sequence
#   task;
# - train the chapter 07 `TokenTransformer` with `StepByStep`, a **warm-up then decay**
#   learning-rate schedule, and a progress bar;
# - measure **exact-match accuracy** on held-out dates and run an **error analysis** on what
#   the model still gets wrong;
# - read **alignment maps**: which source characters the decoder reads while writing each
#   output character;
# - wrap the model as `translate(text) -> str` and try your own dates in a live text box.

# %%
import time
from datetime import date

import torch
from torch.optim.lr_scheduler import LinearLR, SequentialLR
from torch.utils.data import DataLoader

from stepbystep import StepByStep, models, plots
from stepbystep.data import (
    DATE_PATTERNS,
    FIRST_DATE,
    LAST_DATE,
    N_DAYS,
    REFERENCE_DATES,
    Seq2SeqDataset,
    Vocab,
    date_datasets,
    pad_collate,
    render_date,
    wrong_fields,
)
from stepbystep.exercises import ch08
from stepbystep.models import TokenTransformer, check_text, sequence_cross_entropy, translate_with_alignment
from stepbystep.widgets import date_translator

torch.set_num_threads(1)  # the tensors here are tiny: one thread beats coordinating several

# %% [markdown]
# ## Writing dates like people do
#
# The package writes a date with **Babel**'s `format_date`, which follows the Unicode (CLDR)
# date patterns: `d` is the day, `dd` the day on two digits, `MMM` the short month name,
# `MMMM` the full one, `MM` the month number, `EEE` and `EEEE` the day of the week, `y` the year
# and `yy` its last two digits; text in single quotes is written as it is. On top of Babel,
# `{ord}` writes the day's English ordinal suffix (1st, 2nd, 3rd, 11th, 22nd). Here is one day
# in every pattern the data set uses:

# %%
# NBVAL_CHECK_OUTPUT
day = date(2007, 7, 10)
print(f"{len(DATE_PATTERNS)} patterns for {day.isoformat()}:")
for pattern in DATE_PATTERNS:
    print(f"  {pattern:<20} {render_date(day, pattern)}")

# %% [markdown]
# The generator also picks a **case** for each text: mostly as Babel writes it, sometimes all
# lower case, all upper case, or every word capitalised. A few rules keep every text
# unambiguous, so that one right answer exists:
#
# - **two-digit years** follow the century rule 00-49 → 20xx, 50-99 → 19xx, and every date lies
#   between 1950-01-01 and 2049-12-31, exactly the century the rule covers;
# - **numeric dates** come in two orders only: year first with slashes or dashes, day first
#   with dots. "03/05/1979" is left out: is it the 3rd of May or March 5th? It depends on the
#   writer's country;
# - one pattern writes "th" after every day, as people sloppily do ("21th", "1th"), and some
#   texts name the **wrong day of the week**. The weekday never changes the answer.
#
# The last rule comes from the reference material itself. Its eight test dates are our
# reference examples too, and one of them names a weekday that the date does not have:

# %%
# NBVAL_CHECK_OUTPUT
for text, iso in REFERENCE_DATES.items():
    print(f"{text:>22} -> {iso}")
may_9 = date.fromisoformat(REFERENCE_DATES["Saturday May 9 2018"])
print(f"\n9 May 2018 was a {render_date(may_9, 'EEEE')}; the text says Saturday")

# %% [markdown]
# A model that must get "Saturday May 9 2018" right has to learn to read the day, month and
# year and to ignore the weekday. So about one weekday text in ten names a random weekday.

# %% [markdown]
# ## The data set
#
# `date_datasets` first splits the days of the range into training days and validation days
# (10% of them, seeded). Then it draws 32,000 training pairs from the training days and 2,000
# validation pairs from the validation days, each with a random day, pattern and case. The
# validation dates were never seen in training, in any pattern: a correct translation cannot
# be a memory.

# %%
# NBVAL_CHECK_OUTPUT
train_pairs, val_pairs = date_datasets(n_train=32_000, n_val=2_000, seed=0)
train_dates = {iso for _, iso in train_pairs}
val_dates = {iso for _, iso in val_pairs}
print(f"{N_DAYS:,} days from {FIRST_DATE} to {LAST_DATE}")
print(f"{len(train_pairs):,} training pairs on {len(train_dates):,} days, "
      f"{len(val_pairs):,} validation pairs on {len(val_dates):,} days")
print(f"no validation day in the training set: {train_dates.isdisjoint(val_dates)}")
lengths = [len(text) for text, _ in train_pairs]
print(f"source length: {min(lengths)} to {max(lengths)} characters, mean {sum(lengths) / len(lengths):.1f}")
for text, iso in train_pairs[:10]:
    print(f"{text!r:>34} -> {iso}")

# %% [markdown]
# ## Vocabularies
#
# The model reads and writes **characters**. The source vocabulary holds every character of
# the training texts, the target vocabulary the eleven characters of ISO dates (ten digits and
# the dash); both start with the four special tokens of chapter 07: `<pad>` = 0, `<sos>` = 1,
# `<eos>` = 2, `<unk>` = 3.

# %%
# NBVAL_CHECK_OUTPUT
src_vocab = Vocab.from_texts([text for text, _ in train_pairs])
tgt_vocab = Vocab.from_texts([iso for _, iso in train_pairs])
print(src_vocab)
print(tgt_vocab)

# %% [markdown]
# A text becomes a list of ids, one per character. A character the vocabulary does not know
# (an emoji, an accent, or a letter that no month or weekday name uses, such as "k" or "x")
# becomes `<unk>`, id 3: the model still gets an input of the right length, with a hole where
# the unknown character was. The target gets `<sos>` (1) in front and `<eos>` (2) at the end.

# %%
# NBVAL_CHECK_OUTPUT
print(src_vocab.encode("Tue 10 Jul 2007"))
print(src_vocab.encode("Tue 10 Jul 2007 ☺"))
print(f"letters no date uses: {sorted(set('abcdefghijklmnopqrstuvwxyz') - set(src_vocab.stoi))}")
print(tgt_vocab.encode("2007-07-10", add_sos=True, add_eos=True))

# %% [markdown]
# `Seq2SeqDataset` turns the pairs into id tensors (the targets get `<sos>` and `<eos>`), and
# `pad_collate` pads each mini-batch to its longest text and splits the target into the
# decoder's input (`<sos>` + the date) and what it must predict (the date + `<eos>`), as in
# chapter 07.

# %%
# NBVAL_CHECK_OUTPUT
train_data = Seq2SeqDataset(train_pairs, src_vocab, tgt_vocab)
val_data = Seq2SeqDataset(val_pairs, src_vocab, tgt_vocab)
train_loader = DataLoader(train_data, batch_size=64, shuffle=True, collate_fn=pad_collate,
                          generator=torch.Generator())
val_loader = DataLoader(val_data, batch_size=500, collate_fn=pad_collate)

(source_ids, target_in), target_out = next(iter(val_loader))
print(f"source {tuple(source_ids.shape)}, target_in {tuple(target_in.shape)}, "
      f"target_out {tuple(target_out.shape)}")
print(f"{len(train_loader)} mini-batches of 64 per epoch")

# %% [markdown]
# ## The model
#
# The `TokenTransformer` of chapter 07: embeddings, 2 encoder and 2 decoder layers of our own
# (norm-first), $d_{model} = 64$, 4 heads, 128 hidden units in the feed-forward networks, and
# a linear layer giving one logit per target character. Two choices matter for speed:
#
# - **no √d_model scaling** of the embeddings (the default): chapter 07 showed how it drowns
#   the positional encoding;
# - **no dropout**: the training pairs spread over more than twenty thousand days (printed
#   above), written in many ways, and the model sees each pair only twice: there is little to
#   memorise. On a CPU, drawing dropout's random masks is a noticeable share of the training
#   time.
#
# The longest text has 29 characters, so `max_len=32` positions are enough.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
model = TokenTransformer(len(src_vocab), len(tgt_vocab), d_model=64, n_heads=4, ff_units=128, n_layers=2,
                         dropout=0.0, max_len=32)
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# ## Training
#
# Adam, with a learning rate that **warms up** linearly from almost zero to $3 \cdot 10^{-3}$
# over the first 200 steps, then **decays** linearly to zero at the end of the second epoch.
# The warm-up lets Adam gather its gradient statistics before it takes big steps; the decay
# lets the last steps settle. Both are PyTorch's own `LinearLR` schedulers, one after the
# other (`SequentialLR`), stepped after every mini-batch. The loss is the cross-entropy over
# the target characters (padding excluded).

# %%
n_epochs, warmup_steps = 2, 200
total_steps = n_epochs * len(train_loader)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = SequentialLR(optimizer, [LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps),
                                     LinearLR(optimizer, start_factor=1.0, end_factor=0.0,
                                              total_iters=total_steps - warmup_steps)],
                         milestones=[warmup_steps])
sbs = StepByStep(model, sequence_cross_entropy, optimizer)
sbs.set_loaders(train_loader, val_loader)
sbs.set_lr_scheduler(scheduler, interval="batch")

# %% [markdown]
# The progress bar shows the epochs and the latest losses; the cell prints how long training
# took on your machine.

# %%
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
sbs.train(n_epochs)
print(f"training took {time.perf_counter() - start:.0f} s on {sbs.device}")

# %%
for epoch, (loss, val_loss) in enumerate(zip(sbs.losses, sbs.val_losses), start=1):
    print(f"epoch {epoch}: training loss {loss:.4f}, validation loss {val_loss:.4f}")

# %%
fig = plots.learning_rate_schedule(sbs.learning_rates, steps_per_epoch=len(train_loader), warmup_steps=warmup_steps)

# %% [markdown]
# ## Exact match on held-out dates
#
# A loss is an average over characters. What a user cares about is whether the whole date is
# right: **exact match**, the share of texts whose translation equals the ISO date in every
# one of its ten characters. `models.translate` (chapter 07) decodes greedily, batched: it
# encodes the texts, writes the output one character at a time (at most 11: the date and
# `<eos>`) and turns the ids back into text.

# %%
val_texts = [text for text, _ in val_pairs]
val_targets = [iso for _, iso in val_pairs]
predictions = models.translate(model, val_texts, src_vocab, tgt_vocab, max_len=11)
correct = [predicted == target for predicted, target in zip(predictions, val_targets)]
accuracy = sum(correct) / len(correct)
print(f"exact match on {len(val_pairs):,} held-out dates: {accuracy:.2%} ({len(correct) - sum(correct)} wrong)")
print(f"at least 99.5%: {accuracy >= 0.995}")

# %% [markdown]
# And the eight reference dates, including "5 April 09" (which the reference model read as
# 1990) and the Saturday that was a Wednesday:

# %%
reference = models.translate(model, list(REFERENCE_DATES), src_vocab, tgt_vocab, max_len=11)
for (text, iso), predicted in zip(REFERENCE_DATES.items(), reference):
    print(f"{text:>22} -> {predicted}  {'right' if predicted == iso else 'WRONG, expected ' + iso}")
print(f"{sum(p == iso for p, iso in zip(reference, REFERENCE_DATES.values()))} of {len(REFERENCE_DATES)} right")

# %% [markdown]
# ## What does it still get wrong?
#
# A high accuracy hides *which* inputs fail. First the wrong translations themselves, with
# the part of the date that is wrong (`wrong_fields`):

# %%
wrong = [(text, target, predicted) for text, target, predicted in zip(val_texts, val_targets, predictions)
         if predicted != target]
for text, target, predicted in wrong:
    print(f"{text!r:>34}: {predicted} instead of {target}, wrong {', '.join(wrong_fields(target, predicted))}")
if wrong:
    mean_wrong = sum(len(text) for text, _, _ in wrong) / len(wrong)
    print(f"\nmean length of the wrong texts: {mean_wrong:.1f} characters, of all: "
          f"{sum(map(len, val_texts)) / len(val_texts):.1f}")

# %% [markdown]
# The same as a figure: the error rate for every source length (how many validation texts
# have that length is written above each bar), and the wrong field of each error.

# %%
fig = plots.date_errors(val_texts, val_targets, predictions)

# %% [markdown]
# Long texts are rare: they need a long pattern (a full weekday and month name, commas) *and*
# long names (Wednesday, September). The last positions of the source are therefore the ones
# the model saw least. Look at the wrong characters too: a near miss, such as two digits
# swapped, says that the model found the right part of the text but not the order within it.
#
# A good way to find the weak spots of a generated data set is to test every pattern on its
# own, here on 200 validation days each:

# %%
val_days = [date.fromisoformat(iso) for iso in sorted(val_dates)[:200]]
by_pattern = {}
for pattern in DATE_PATTERNS:
    texts = [render_date(day, pattern) for day in val_days]
    outputs = models.translate(model, texts, src_vocab, tgt_vocab, max_len=11)
    by_pattern[pattern] = sum(out == day.isoformat() for out, day in zip(outputs, val_days)) / len(val_days)
perfect = [pattern for pattern, pattern_accuracy in by_pattern.items() if pattern_accuracy == 1]
print(f"{len(perfect)} of {len(DATE_PATTERNS)} patterns translated without a mistake; the others:")
for pattern, pattern_accuracy in sorted(by_pattern.items(), key=lambda item: item[1]):
    if pattern_accuracy < 1:
        print(f"  {pattern:<20} e.g. {render_date(val_days[0], pattern)!r:<32} exact match {pattern_accuracy:.1%}")

# %% [markdown]
# ## Where the decoder looks: alignment maps
#
# Every output character is written by a decoder position that attends to the encoder's
# states of the source characters (cross-attention). `translate_with_alignment` translates one
# text and returns, with the translation, the cross-attention weights of the last decoder
# layer, `(n_heads, L_out, L_s)`: row $i$ says how much the position that wrote output
# character $i$ read each source character. We average the four heads.

# %%
examples = ["Tue 10 Jul 2007", "March 3rd 2001", "5 April 09", "21th of August 2016"]
translations = [translate_with_alignment(model, text, src_vocab, tgt_vocab, max_len=11) for text in examples]
print([t.translation for t in translations])
fig = plots.alignment_maps(translations)

# %% [markdown]
# Read a map row by row, from the top. The ISO date is written in a fixed order (year, month,
# day) while the text puts these parts anywhere, so the bright cells do not follow the
# diagonal of a translation between similar languages: they jump to wherever the text keeps
# the part being written. Things to look for in the maps above:
#
# - the **last two digits of the year**: do their rows pick out the year's last digits in the
#   text, wherever the year is?
# - the **first two digits** ("19" or "20"): there are only two choices, and for a two-digit
#   year the century rule decides from the last two digits; their rows may spread out;
# - the **month** rows, which must turn a name ("Jul", "August") into two digits: which
#   letters of the name do they read?
# - the **day** rows, and the dashes and `<eos>`, which need little reading.
#
# Remember from chapter 05 that the keys are encoder *states*: after two layers of
# self-attention each state also carries its neighbours, so a row may read a part of the text
# from the character next to it. Exercise 3 turns each row into one number: the position it
# reads most.
#
# The alignment of a wrong translation (when there is one) shows where the model looked when
# it went wrong:

# %%
if wrong:
    fig = plots.alignment_map(translate_with_alignment(model, wrong[0][0], src_vocab, tgt_vocab, max_len=11))

# %% [markdown]
# ## `translate(text)`
#
# Everything a user needs, in one function: check the text, translate it, return a string.

# %%
def translate(text):
    """A human-written date -> its ISO form ``YYYY-MM-DD``, by the trained model."""
    check_text(text, model.max_len)  # empty or too long: a clear ValueError
    return models.translate(model, text, src_vocab, tgt_vocab, max_len=11)


print(translate("3 May 1979"), translate("July 4th, 1976"), translate("FRIDAY, 13 OCTOBER 2017"))

# %% [markdown]
# Texts the model cannot read are refused with a message saying why, before anything reaches
# the model:

# %%
# NBVAL_CHECK_OUTPUT
for text in ["", "the seventh of July in the year two thousand and seven"]:
    try:
        translate(text)
    except ValueError as error:
        print(f"ValueError: {error}")

# %% [markdown]
# Unknown characters are not an error: they become `<unk>` and the model translates what it
# reads. But a character where the training texts never had one, known or not, is a text
# from outside the training distribution, and the model may or may not cope:

# %%
for text in ["3 May 1979", "3 May 1979 ☺", "3 May, 1979!", "3 Mai 1979"]:
    print(f"{text!r:>16} -> {translate(text)}")

# %% [markdown]
# ## Try it
#
# Type a date and press Enter: the translation appears with its alignment map. Try the
# patterns of the data set in new cases ("MARCH 3RD 2001"), patterns it never saw ("3/5/1979",
# "the third of March"), and texts that are not dates at all. A model trained on one
# distribution answers confidently outside it too: it always writes *some* date.

# %%
# NBVAL_IGNORE_OUTPUT
date_translator(model, src_vocab, tgt_vocab)

# %% [markdown]
# ## Recap
#
# - A **generated data set** can teach a real task when its rules keep every input
#   unambiguous (a century rule for two-digit years, one numeric order per separator) and when
#   it mixes the ways people write (names, abbreviations, ordinals, cases, wrong weekdays).
# - **Split by date**, not by text: validation dates unseen in any pattern make exact match a
#   test of reading, not of memory.
# - A character-level `TokenTransformer`, trained with **warm-up then linear decay** for two
#   epochs, translates held-out dates almost perfectly; **exact match** is the metric the user
#   feels.
# - **Error analysis** finds the weak spots that an average hides: the rare long texts, and
#   single patterns tested on their own.
# - **Alignment maps** (cross-attention, output characters by source characters) show which
#   part of the text each output character was read from.
# - `translate(text)` refuses empty and too-long texts with a `ValueError` and maps unknown
#   characters to `<unk>`.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: call `.check(...)` on your answer to get a verdict, or a hint
# when something is off. When you are stuck, `.solution()` prints a worked solution. The
# cells below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. A new pattern.** Write the Babel pattern `my_pattern` that renders a date as "the 3rd
# of March, 2001" (with the right suffix for every day). Then translate a few dates written
# with it: does the model cope with a pattern it never saw? Which parts does it get right?

# %%
my_pattern = "d MMMM y"  # replace: this writes "3 March 2001"

ch08.new_pattern.check(my_pattern)

# %% [markdown]
# **2. The century rule.** Write `my_full_year(two_digits)` that turns the last two digits of
# a year into the year, following the data set's rule (00-49 → 20xx, 50-99 → 19xx). Then ask
# the model for "5 April 49" and "5 April 50".

# %%
def my_full_year(two_digits):
    return 1900 + two_digits  # replace: this is how the reference model read "09"


ch08.century_rule.check(my_full_year)

# %% [markdown]
# **3. Reading the maps as numbers.** Write `my_reading_positions(translation)` that returns,
# for every output token of a `Translation`, the source position it reads most (the heads
# averaged). Apply it to `translations[0]` and print, for each output character, the source
# character it reads: do the year digits read the year?

# %%
def my_reading_positions(translation):
    return []  # replace: one source position per output token


ch08.reading_positions.check(my_reading_positions)

# %% [markdown]
# **4. Fewer examples, or beam search.** Train the same model on 8,000 pairs instead of
# 32,000 for the same number of steps (8 epochs): how does exact match change, and which
# patterns suffer most? Or, with the model of this chapter, decode the wrong validation texts
# with `models.translate(..., beam_width=4)`: does a beam fix any of them? (No checker:
# compare the numbers.)
