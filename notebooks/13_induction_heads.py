# %% [markdown]
# # Chapter 13: what did it learn? Induction heads, found, measured and switched off
#
# We can now build and train a Transformer. The next question is what its heads compute. An
# attention map is a picture, and a picture can mislead; this chapter finds two heads that work
# together, measures what each one does with a number, and then **switches them off** to show
# that the model needs them.
#
# The two heads form an **induction circuit**, described by Elhage et al., "A Mathematical
# Framework for Transformer Circuits" (2021), and studied during training by Olsson et al.,
# "In-context Learning and Induction Heads" (2022). Given a sequence `… A B … A`, the circuit
# predicts `B`: it finds the earlier `A`, and copies the token that came after it. It is the
# simplest form of learning from the context: nothing about `A` and `B` is in the parameters, the
# model reads it from the sequence in front of it.
#
# We train a model just deep enough for the circuit (two layers), in a few seconds, on a task
# where only the circuit gets far: random tokens, then the same tokens again.
#
# By the end of this chapter you will be able to:
#
# - build an **attention-only** decoder (chapter 09's model without its feed-forward layers);
# - see the **phase change**: the loss on the repeat falls suddenly, far below $\ln V$, while the
#   first half stays a little above $\ln V$ (within 0.6 of it);
# - point at the **previous-token head** and the **induction head** with two scores computed
#   from the attention weights, and read their maps;
# - explain **K-composition**: the second head's keys read what the first head wrote, and read
#   it from the parameters too;
# - give **causal evidence**: switch heads off (ablation) and watch the loss on the repeat, find
#   the heads the model needs that way, and train a one-layer model that cannot form the circuit;
# - check that the circuit forms in every seed, in whichever heads, over twelve seeds.

# %%
import math
import statistics

import torch

from stepbystep import plots
from stepbystep.data import repeated_sequences
from stepbystep.exercises import ch13
from stepbystep.expect import expect, expect_all
from stepbystep.experiments.induction import (
    VOCAB_SIZE,
    ablation_claims,
    build_model,
    circuit_claims,
    composition_claims,
    copying_claims,
    drop_step,
    first_half_claims,
    first_half_loss,
    first_half_losses,
    first_token_claims,
    fixed_length_claims,
    fixed_length_scores,
    group_claims,
    key_weight,
    one_layer_claims,
    phase_change_claims,
    position_claims,
    previous_token_heads,
    repeat_loss,
    seen_bet_claims,
    seen_token_mass,
    train_on_repeats,
)
from stepbystep.experiments.induction_seeds import (
    both_thread_counts,
    early_rise_claims,
    fade_claims,
    history_bests,
    k_composition_claims,
    dependence_claims,
    written_claims,
    load_induction_seeds,
    other_length_sequences,
    previous_key_weight,
    qk_diagonal,
    selection_sequences,
    study_claims,
    test_sequences,
    train_with_layer0_probe,
)
from stepbystep.interpret import (
    ablate_heads,
    ablate_path,
    attention_weights,
    composition_scores,
    copying_score,
    half_losses,
    head_scores,
    induction_score,
    ov_circuit,
    per_position_loss,
    previous_token_score,
    qk_circuit,
)
from stepbystep.models import generate
from stepbystep.widgets import head_explorer

# %% [markdown]
# ## The task: random tokens, then the same again
#
# `repeated_sequences(n, length, vocab_size, seed)` draws `length` random tokens and writes them
# twice. Each sequence comes from its own seeded generator, so the same seed gives the same
# sequences on any machine:

# %%
ids = repeated_sequences(2, 8, VOCAB_SIZE, seed=0)  # (2, 16)
print(ids)
print("second half == first half:", torch.equal(ids[:, :8], ids[:, 8:]))

# %% [markdown]
# A model predicts each next token from the ones before it. In the **first half** nothing can be
# predicted: each token is drawn uniformly from $V = 32$, so the best possible loss there is
# $\ln V = \ln 32 \approx 3.47$ (chapter 07: a uniform guess over $V$ tokens). In the **repeat**
# every token can be predicted exactly, except the first one (nothing tells where the repeat
# starts): a model that looks up the current token's earlier occurrence and copies its successor
# gets them right (all of them, unless a token occurs twice in the first half: then two
# successors compete).
#
# One trap: if every sequence had the same length, a head could simply read the key that sits
# `length - 1` positions back, and predict the repeat **from positions alone**, without reading
# any token (the end of the chapter shows it happen). So each training batch draws its own
# half-length, from 4 to 16 tokens: the distance to the earlier occurrence changes from batch to
# batch, and only reading the tokens works.
#
# ## An attention-only model
#
# Elhage et al. study Transformers **without feed-forward layers**: each layer only adds what
# its heads write to the residual stream. Every path from the input to the logits then goes
# through zero, one or two heads, and a head's contribution can be read (and removed) on its
# own, up to the LayerNorms, which rescale the stream as a whole (Elhage et al. set them aside
# in their analysis). `AttentionOnlyTransformer` is chapter 09's `DecoderOnlyTransformer` whose
# layers keep their self-attention sublayer (norm-first, residual) and drop the feed-forward
# one. We use 2 layers of 4 heads, $d_{model} = 64$, RoPE positions (chapter 10), no dropout:

# %% tags=["nbval-ignore-output"]
model = build_model(n_layers=2, seed=0)
print(model.layers[0])

# %%
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")
expect(all(len(layer.sublayers) == 1 and layer.sublayers[0].norm_first for layer in model.layers),
       "each layer wraps one sublayer, its self-attention (norm-first), and no feed-forward one")

# %% [markdown]
# ## The phase change
#
# We train 3 seeds for 300 steps of 32 sequences each, Adam at $10^{-2}$. For every batch
# `train_on_repeats` records the loss on each half before the update; every 10 steps it also
# measures the heads' scores (defined in the next section) on 32 probe sequences.
# `train_with_layer0_probe` adds one more measurement, which we will need to read the figure: the
# layer-1 score with all of layer 0 switched off. The test sequences have a half-length of 12 and
# a data seed that no training batch uses; `test_sequences` also draws the prompts and the
# unrepeated sequences that later sections use.

# %% tags=["nbval-ignore-output"]
SEEDS, STEPS, TEST_LENGTH = (0, 1, 2), 300, 12
LOG_V = math.log(VOCAB_SIZE)
test_ids, prompts, unrepeated = test_sequences()  # (256, 24), (200, 20), (256, 24): data seeds no batch uses
probe = test_ids[:32]  # (32, 24)

models, histories = [], []
for seed in SEEDS:
    trained, history = train_with_layer0_probe(seed, probe, steps=STEPS)  # train_on_repeats(n_layers=2, ...) and more
    models.append(trained)
    histories.append(history)
drops = [drop_step(history["repeat"], LOG_V / 2) for history in histories]
print("step where the repeat's loss (mean of 10 steps) falls below ln V / 2:", drops)

# %% tags=["nbval-ignore-output"]
fig = plots.phase_change(histories, drops, LOG_V)

# %%
expect_all(phase_change_claims(histories, drops, STEPS) + early_rise_claims(*history_bests(histories), drops))

# %% [markdown]
# For more than a hundred steps little happens: the first half sits near $\ln V$, and the repeat
# creeps down slowly (the one-layer model at the end of the chapter shows how far that goes
# without the circuit: only tokens already seen can come next). Then, within a few dozen steps,
# the loss on the repeat falls far below $\ln V$ while the first half stays near it. The step
# differs from seed to seed (the dots); the shape does not. At the same steps two scores jump: a
# head in layer 0 starts to read the **previous token** (middle), and a head in layer 1 starts to
# read the token **after the earlier occurrence** of its own (right). The next sections measure
# those heads.
#
# The right panel holds a puzzle: the induction score creeps up long before the drop, before any
# layer-0 head reads the previous token, and the induction head, we will see, needs one. The
# dashed curves answer part of it. With all of layer 0 switched off, the induction score stays
# low all through training (below 0.35 in every seed): that much layer 1 finds alone (with
# RoPE a head can favour keys at some distance, and on the probe sequences, all repeated after 12
# tokens, part of that weight lands on the right key; an even spread would score about 0.09). The
# rest of the early creep already needs layer 0: 30 steps before the drop the intact score is
# above the dashed one in every seed, while no layer-0 head yet puts more than 0.35 of its weight
# on the previous token. So layer 0 writes something about the tokens before each position before
# one of its heads reads the previous one sharply, and layer 1 starts to use it; what exactly, we
# did not measure.
#
# Olsson et al. saw this in the training of small attention-only models and of larger models
# with feed-forward layers: early in training, induction heads form within a short window, at
# the same time as the models' in-context learning (how much lower the loss is late in a
# context than early) improves sharply, visible as a bump in the training loss. They call it a
# **phase change**, and in their comparison of depths the one-layer attention-only models do
# not have it. Our task is far simpler than language: apart from the slow start, the drop is the
# whole story. The slow start followed by a sudden drop has been described on another
# synthetic task too: in Edelman et al., "The Evolution of Statistical Induction Heads: In-Context
# Learning Markov Chains" (2024), the models first predicted from the frequencies of single
# tokens in the context, then switched rapidly to the statistics of pairs of tokens, computed
# by what they call statistical induction heads.
#
# The first half does not stay quite where it was: it sits a little above $\ln V$ from the start,
# and rises by a few tenths at the drop. We come back to why once we have found the heads.
#
# What does the drop buy? Give the seed-0 model 10 fresh random tokens followed by the first two of
# them again, and let it write 8 more with greedy decoding (`generate`, chapter 09, at
# temperature 0):

# %% tags=["nbval-ignore-output"]
fresh = repeated_sequences(1, 10, VOCAB_SIZE, seed=60001)[0]  # (20,): a data seed no batch uses
prompt = fresh[:12]  # 10 tokens, then the first 2 again
written = generate(models[0], prompt, 8, temperature=0)[12:]  # (8,)
print("prompt :", prompt.tolist())
print("written:", written.tolist())
print("the rest of the repeat:", fresh[12:20].tolist())

# %% [markdown]
# One prompt is one draw. Here are 200 more, each of 10 different tokens (a token that occurs
# twice would leave two successors to choose from), written by every seed's model:

# %%
print(f"{len(prompts)} prompts (from test_sequences, above), the first: {prompts[0, :12].tolist()}")
whole_rest = torch.stack([(generate(trained, prompts[:, :12], 8, temperature=0)[:, 12:] == prompts[:, 12:]).all(dim=1)
                          for trained in models]).float().mean(dim=1)  # (seeds,): share written token for token
expect_all(written_claims(whole_rest))

# %% [markdown]
# The models of every seed write the rest of the repeat for most such prompts, not all: one
# wrong token, and a model can go on copying what followed the wrong one. The check asks for at
# least 75% in every seed and 85% in the median seed, here and over the 24 runs stored later
# (which wrote 91.5% to 99.5%), since a run moves by several points: seed 0 by six between one
# and two threads. They have never seen these tokens in this order, and nothing about these
# sequences is in their parameters: they read it from the prompt. That is in-context learning in
# its simplest form.
#
# ## Two scores, computed from the attention weights
#
# A head's attention weights `(N, H, L, L)` (query rows, key columns) tell where each query
# looks. Two scores turn them into one number per head, both 1.0 on the perfect pattern:
#
# - **previous-token score**: the mean weight a query puts on the key just before it (the
#   diagonal one below the main one);
# - **induction score**: the weight a query puts on the keys right **after** the earlier
#   occurrence(s) of its own token, summed over them (a token can occur more than once before),
#   and averaged over the queries whose token did occur before. On a repeated
#   sequence of half-length $T$, the query at $T + k$ holds the token of position $k$, and the
#   key after it is $k + 1$: $T - 1$ positions back. The induction head draws a stripe
#   $T - 1$ below the diagonal.
#
# On hand-built patterns:

# %%
L_DEMO, T_DEMO = 8, 4
demo_ids = repeated_sequences(1, T_DEMO, VOCAB_SIZE, seed=1)  # (1, 8)
previous_pattern = torch.zeros(1, 1, L_DEMO, L_DEMO)
previous_pattern[0, 0, 0, 0] = 1.0
previous_pattern[0, 0, torch.arange(1, L_DEMO), torch.arange(L_DEMO - 1)] = 1.0  # each query on the key before
induction_pattern = torch.eye(L_DEMO).reshape(1, 1, L_DEMO, L_DEMO).clone()
induction_pattern[0, 0, T_DEMO:] = 0.0
induction_pattern[0, 0, torch.arange(T_DEMO, L_DEMO), torch.arange(1, T_DEMO + 1)] = 1.0  # T - 1 back
uniform = torch.ones(L_DEMO, L_DEMO).tril()
uniform = (uniform / uniform.sum(dim=-1, keepdim=True)).reshape(1, 1, L_DEMO, L_DEMO)
print("demo ids:", demo_ids[0].tolist())
for name, pattern in (("previous-token", previous_pattern), ("induction", induction_pattern),
                      ("uniform", uniform)):
    print(f"{name:>15} pattern: previous-token score {previous_token_score(pattern).item():.3f}, "
          f"induction score {induction_score(pattern, demo_ids).item():.3f}")

# %% [markdown]
# The uniform pattern (every query spreads its weight over all the keys it may read) scores
# low on both: a high score means the head **chooses** that key.
#
# ## The heads of the trained models
#
# `head_scores(model, ids)` runs the model once on the teaching path and scores every head of
# every layer. For the seed-0 model, on the 256 test sequences:

# %% tags=["nbval-ignore-output"]
scores = [head_scores(trained, test_ids) for trained in models]  # per seed: (2, 4) previous, (2, 4) induction
previous = torch.stack([s[0] for s in scores])  # (seeds, 2, 4)
induction = torch.stack([s[1] for s in scores])  # (seeds, 2, 4)
print("previous-token scores, seed 0 (rows: layers, columns: heads)\n", previous[0].numpy().round(2))
print("induction scores, seed 0\n", induction[0].numpy().round(2))

# %% [markdown]
# The scores pick out the heads. Here are the best previous-token head of layer 0 and the best
# induction head of layer 1 of the seed-0 model, on one test sequence (dashed: where the repeat
# starts):

# %% tags=["nbval-ignore-output"]
previous_head = previous[0, 0].argmax().item()
induction_head = induction[0, 1].argmax().item()
sequence = test_ids[:1]  # (1, 24)
weights = attention_weights(models[0], sequence)  # [(1, 4, 24, 24)] * 2
fig = plots.induction_maps(
    [weights[0][0, previous_head], weights[1][0, induction_head]],
    [f"layer 0, head {previous_head}: previous token", f"layer 1, head {induction_head}: induction"],
    TEST_LENGTH, tokens=sequence[0])

# %%
stripe = weights[1][0, induction_head].diagonal(offset=-(TEST_LENGTH - 1))[1:]  # (T,): queries T .. 2T-1
expect(stripe.mean() > 0.7, f"the induction head puts most of its weight {TEST_LENGTH - 1} keys back in the repeat",
       got=stripe.mean())
expect(weights[0][0, previous_head].diagonal(offset=-1).mean() > 0.6,
       "the previous-token head puts most of its weight on the key before",
       got=weights[0][0, previous_head].diagonal(offset=-1).mean())
first_half_repeats = weights[1][0, induction_head, [6, 10], [5, 3]]  # queries 6 and 10: their token occurred at 4, 2
expect(bool((first_half_repeats > 0.5).all()),
       "in the first half, queries 6 and 10 put most of their weight on the keys after the earlier 3 and 21",
       got=first_half_repeats)

# %% [markdown]
# The layer-0 head draws the line just below the diagonal: each query reads the token before
# it. The layer-1 head, in the repeat, draws a stripe $T - 1 = 11$ positions below the
# diagonal: the query at position 12 holds the token of position 0 and reads position 1, the
# token that came after it. In the first half it follows the same rule wherever it can: this
# sequence has the token 3 at positions 4 and 6 and the token 21 at positions 2 and 10, and the
# queries at 6 and 10 read the keys after the earlier 3 and 21 (positions 5 and 3). On random
# tokens that copy predicts wrongly; we come back to its cost. Where its token has not occurred
# before, a query parks its weight on an early key.
#
# Look again at the layer-0 map: its line below the diagonal fades in the repeat, where the
# weight it loses goes to the first keys and to keys further back. Is that the repeat? Here is
# each seed's best previous-token head, its mean weight on the key before, over the first half's
# queries and over the repeat's, and, as a control, over the same positions of 256 sequences of 24
# random tokens that do not repeat:

# %% tags=["nbval-ignore-output"]
# unrepeated (from test_sequences, above): 256 sequences of 24 random tokens, (256, 24)
fade = torch.tensor([[*previous_key_weight(m, test_ids, head, TEST_LENGTH),
                      previous_key_weight(m, unrepeated, head, TEST_LENGTH)[1]]
                     for m, head in zip(models, previous[:, 0].argmax(dim=1).tolist())])  # (seeds, 3)
print("weight on the key before: first half", fade[:, 0].numpy().round(2), "| repeat", fade[:, 1].numpy().round(2),
      "| the same positions, not repeated", fade[:, 2].numpy().round(2))

# %%
expect_all(fade_claims(*fade.unbind(dim=1)))

# %% [markdown]
# The head puts less weight on the key before in the second half whether the sequence repeats or
# not: the fade comes with the position, not with the repeat. (Later positions are rarer in
# training, since each batch draws a half of 4 to 16 tokens; that may be why the head is less
# sure there, which we did not test.) The induction head does not need the whole signal: in the
# repeat it still finds its key.
#
# ## How the two heads compose
#
# The layer-1 head cannot find "the token after my earlier occurrence" by itself: a key at
# position $k + 1$ holds token $k + 1$, and nothing about the token **before** it. The layer-0
# head supplies that. Reading the previous token, it adds to position $k + 1$'s residual stream
# a vector that says which token came before. The layer-1 head's **keys** are computed from that
# stream, so its query "I am token A" can match the key "the token before me was A". Its value
# at that position carries the token itself, B, which the output layer turns into the
# prediction.
#
# Elhage et al. call this **K-composition**: the second head's keys read what the first head
# wrote (Q- and V-composition are the same with queries or values). It needs two layers: in one
# layer every head reads only the token embeddings (and, through RoPE, how far apart a query and
# a key are), never the token before a key. Elhage et al. show that a one-layer attention-only
# model amounts to bigram and "skip-trigram" statistics (a token, one earlier token, the next
# token), and that the two-layer models they trained form induction heads by K-composition with
# a previous-token head.

# %% tags=["nbval-ignore-output"]
fig = plots.induction_circuit()

# %% [markdown]
# First, does the induction heads' attention depend on the previous-token heads at all? Switch
# the previous-token heads off and measure the layer-1 heads' induction scores again.
# `ablate_heads(model, heads)` switches heads off inside a `with` block: a hook zeroes each
# chosen head's slice of the merged context just before `linear_out`, so the head writes
# nothing to the residual stream (on both attention paths). On leaving the block the model is
# exactly as before.
#
# Which layer-0 heads are previous-token heads? A cut-off on the score is tempting, but layer
# 0's scores do not always fall into two groups well apart: in some seeds a head scoring below
# 0.5 shares the job with a stronger one, and one head alone is not enough. So we let the model
# say it. `previous_token_heads(model, ids)` switches layer 0's heads off from the best
# previous-token score down, one more each time, until the copying on `ids` breaks (the loss on
# the repeat rises above half of $\ln V$), and returns the heads it took: the **previous-token
# heads**. A set that brings the loss to within 0.1 of that line counts as breaking it too: on
# some seeds the three best heads, switched off, leave the loss a few hundredths short of the
# line on one draw of sequences and just above it on another, and a rule that took the fourth
# head there would leave no control on a coin toss. So "breaks the copying" means, for this
# rule, "brings the loss up to the line or within 0.1 of it"; exercise 4 below keeps the strict
# line. That they (nearly) break the copying on `ids` is then true by definition, and tells us
# nothing. We find them, then, on sequences of their own, 256 **selection sequences**
# (`selection_sequences`: a data seed that neither training nor the test sequences use), and
# measure what they do on the test sequences, which had no part in choosing them. The rest of
# layer 0 are the **other heads**, the control. In layer 1 the scores are far apart (the figure
# in the next section shows them), and a cut-off does: a layer-1 head is an **induction head**
# when its induction score is above 0.3, over three times what a head that spreads its weight
# evenly scores on these sequences (about 0.09).

# %% tags=["nbval-ignore-output"]
selection_ids = selection_sequences()  # (256, 24): other sequences than test_ids, to find the heads on
previous_heads = [previous_token_heads(trained, selection_ids) for trained in models]  # per seed: [(0, head), ...]
other_heads = [[(0, h) for h in range(4) if (0, h) not in heads] for heads in previous_heads]
induction_heads = [[(1, h) for h in range(4) if induction[s, 1, h] > 0.3] for s in range(len(SEEDS))]
best_induction = induction[:, 1].max(dim=1).values  # (seeds,)
without_previous, without_others = [], []
for trained, heads, others in zip(models, previous_heads, other_heads):
    with ablate_heads(trained, heads):
        without_previous.append(head_scores(trained, test_ids)[1][1].max())
    with ablate_heads(trained, others):  # NaN where every layer-0 head is needed: that seed has no control
        without_others.append(head_scores(trained, test_ids)[1][1].max() if others else torch.tensor(math.nan))
without_previous, without_others = torch.stack(without_previous), torch.stack(without_others)  # (seeds,) each
for s, heads in enumerate(previous_heads):
    print(f"seed {SEEDS[s]}: layer-0 scores {previous[s, 0].numpy().round(2)}, previous-token heads "
          f"{[h for _, h in heads]}")
print(f"seeds with other layer-0 heads, the control: {sum(bool(others) for others in other_heads)} of {len(SEEDS)}")
print("best layer-1 induction score: intact", best_induction.numpy().round(2),
      "| previous-token heads off", without_previous.numpy().round(2),
      "| other layer-0 heads off", without_others.numpy().round(2))

# %%
expect_all(dependence_claims(best_induction, without_previous, without_others))

# %% [markdown]
# With the previous-token heads off, the layer-1 heads no longer find the token after the
# earlier occurrence; with the other layer-0 heads off, they still do. So the induction heads'
# attention depends on what the previous-token heads wrote. But through what? Switched off,
# the previous-token heads are gone from everything layer 1 reads: its queries, its keys and
# its values. `ablate_path(model, ids, heads, layer, reads)` switches them off for one of these
# only: a first run with the heads off records what layer 1's `linear_key` (or `linear_query`,
# or `linear_value`) reads; a second, intact run gets that recording in place of its own input
# there, and nowhere else.

# %% tags=["nbval-ignore-output"]
through = {}
for part in ("key", "query", "value"):
    runs = [ablate_path(trained, test_ids, heads, layer=1, reads=(part,))
            for trained, heads in zip(models, previous_heads)]  # [(logits (256, 24, V), weights (256, 4, 24, 24))]
    through[part] = {
        "induction": torch.stack([induction_score(w, test_ids).max() for _, w in runs]),  # (seeds,)
        "repeat": torch.stack([half_losses(per_position_loss(logits, test_ids), TEST_LENGTH)[1] for logits, _ in runs]),
    }
with torch.no_grad():
    intact = {"induction": best_induction,
              "repeat": torch.stack([half_losses(per_position_loss(m(test_ids), test_ids), TEST_LENGTH)[1]
                                     for m in models])}
plural = {"key": "keys", "query": "queries", "value": "values"}
for name, run in [("intact", intact)] + [(f"off for the {plural[part]} only", through[part]) for part in through]:
    print(f"{name:>24}: best induction score {run['induction'].numpy().round(2)}, "
          f"repeat loss {run['repeat'].numpy().round(2)}")

# %%
expect_all(composition_claims(intact, through))

# %% [markdown]
# The keys carry the whole effect. Switched off for layer 1's keys only, the previous-token
# heads take the stripe and most of the copying with them; switched off for its queries only,
# nothing changes; for its values only, the stripe stays and the copying even gets a little
# better (the values no longer carry the previous token, only the token itself). The
# previous-token heads reach the induction heads through their keys: **K-composition**,
# measured.
#
# ### K-composition in the parameters
#
# Ablation changes what the model computes and watches the result. The same circuit can also
# be read from the parameters, with no data at all, as Elhage et al. do. Two readings:
#
# - **Composition scores.** What a layer-0 head writes to the residual stream is a matrix,
#   $W_{OV} = W_O W_V$ (through its LayerNorm); how much a layer-1 head's keys read of it is
#   $\lVert W_K W_{OV} \rVert_F / (\lVert W_K \rVert_F \lVert W_{OV} \rVert_F)$ (through layer 1's
#   LayerNorm), the same with $W_Q$ for its queries and $W_V$ for its values. All three are
#   variants of Elhage et al.'s scores, which use $W_{QK} = W_Q^\top W_K$ for the queries and
#   the keys and the second head's $W_{OV}$ for the values: with RoPE, $W_{QK}$ turns with the
#   distance between query and key, so `composition_scores` scores each of $W_Q$, $W_K$ and $W_V$
#   on its own. Two random matrices of these shapes score about $1/\sqrt{d_{model}} = 0.125$.
# - **The QK circuit.** `qk_circuit(model, previous, induction, offset)` follows token $a$ into
#   the induction head's query, and token $b$ through the previous-token head into the key of the
#   position after it, `offset` positions back, and gives the score between them, for every pair
#   of tokens: a $V \times V$ matrix. An induction head should score the diagonal highest: a query
#   holding $a$ prefers the key whose previous token was $a$.

# %% tags=["nbval-ignore-output"]
composition = torch.stack([composition_scores(trained) for trained in models])  # (seeds, 3, 4, 4): q, k, v
in_previous = torch.tensor([[(0, h) in heads for h in range(4)] for heads in previous_heads])  # (seeds, 4)
best_pairs = list(zip(previous[:, 0].argmax(dim=1).tolist(), induction[:, 1].argmax(dim=1).tolist()))
diagonal = torch.tensor([qk_diagonal(m, p, i, TEST_LENGTH - 1) for m, (p, i) in zip(models, best_pairs)])  # (seeds,)
read = torch.stack([c[:, mine].mean(dim=(1, 2)) for c, mine in zip(composition, in_previous)])  # (seeds, 3)
read_others = torch.stack([c[:, ~mine].mean(dim=(1, 2)) for c, mine in zip(composition, in_previous)])  # (seeds, 3)
print("how much layer 1 reads of the previous-token heads (rows: seeds; columns: queries, keys, values)\n",
      read.numpy().round(2))
print("and of the other layer-0 heads\n", read_others.numpy().round(2))
print(f"the best pair's QK circuit: share of query tokens that score the key after their own highest, "
      f"{TEST_LENGTH - 1} back:", diagonal.numpy().round(2))
fig = plots.k_composition(composition, in_previous,
                          qk_circuit(models[0], *best_pairs[0], offset=TEST_LENGTH - 1), 1 / 64 ** 0.5,
                          title=f"seed 0, layer-0 head {best_pairs[0][0]} into layer-1 head {best_pairs[0][1]}:\n"
                                f"QK circuit, the key {TEST_LENGTH - 1} back")

# %%
expect_all(k_composition_claims(composition, in_previous, diagonal, d_model=64))

# %% [markdown]
# The parameters say what the path ablation said. In every seed layer 1's keys read the
# previous-token heads' output more than its queries and its values do, over one and a half
# times as much as two random matrices would, and more than they read the other layer-0 heads
# (the grey circles), which they read somewhat above random too. That preference is the specific
# part. Its queries and values read the previous-token heads *less* than random matrices would
# (the bars below the dashed line at 0.125, in every seed). For the queries that is mostly not
# about those heads: they read the other layer-0 heads below random too (in the median seed).
# The values read the other heads only a little below random in the median seed (not in every
# seed), a few hundredths more than the previous-token heads (both printed above), so their
# turning away is mostly from the previous-token heads. Training turned layer 1's queries away
# from layer 0's output as a whole, and its values away from the previous-token heads. That fits
# the path ablation, where those heads switched off for the values only left the copying a
# little better. And the QK circuit has a bright diagonal (right): whatever token a query holds,
# it scores highest the key that came after that same token. (The study over twelve seeds, after
# the ablations, also records the diagonal at 3, 7 and 15 positions back, the distances of other
# half-lengths.)
#
# ## Does the induction head copy?
#
# Olsson et al. define an induction head by two properties: **prefix matching** (it attends to
# the token after an earlier occurrence of the current one: our induction score) and
# **copying** (what it reads there raises that same token's logit). The second can be read
# from the parameters. Elhage et al.'s **OV circuit** of a head follows one token through the
# embedding, the head's values and output, and the output layer: a $V \times V$ matrix whose
# column $j$ says how much the head, reading token $j$, raises each token's logit.
# `ov_circuit(model, layer, head)` computes it (keeping the LayerNorms' centering and gains,
# leaving out their division by the spread, a positive factor, and their biases, as Elhage et
# al.'s OV circuit sets biases aside; with them kept, a score can move by a few hundredths), and
# `copying_score` counts the share of tokens $j$ whose own logit comes out on
# top of column $j$ (by chance, about $1/V \approx 0.03$):

# %% tags=["nbval-ignore-output"]
circuit = ov_circuit(models[0], 1, induction_head)  # (V, V): column j, the logits raised on reading token j
print(f"seed 0, layer-1 head {induction_head}: its own token on top of its column for "
      f"{(circuit.argmax(dim=0) == torch.arange(VOCAB_SIZE)).sum().item()} of {VOCAB_SIZE} tokens")
copying = torch.tensor([[[copying_score(trained, layer, head) for head in range(4)] for layer in range(2)]
                        for trained in models])  # (seeds, 2, 4)
print("copying scores, seed 0 (rows: layers, columns: heads)\n", copying[0].numpy().round(2))
print("best layer-1 head:", copying[:, 1].amax(dim=1).numpy().round(2), "| median layer-1 head:",
      copying[:, 1].median(dim=1).values.numpy().round(2), "| best layer-0 head:",
      copying[:, 0].amax(dim=1).numpy().round(2))

# %%
expect_all(copying_claims(copying))

# %% [markdown]
# The layer-1 heads copy: reading token B, they raise B (some more cleanly than others: the
# four heads share the work). The layer-0 heads do not: what they
# write (which token came before) is for layer 1's keys to read, not a prediction. Both halves
# of the definition hold.
#
# ## In every seed, in whichever heads
#
# Each seed is a different initialisation and a different stream of batches. Does the circuit
# form every time, and in the same heads? Each panel shows, for each seed, all 4 heads of a
# layer, each drawn as its index, the best head of each seed in bold; in red, the previous-token
# heads (found by ablation) and the induction heads (none in the one-layer models). The third
# panel is the one-layer control of the next section but one.

# %% tags=["nbval-ignore-output"]
one_layer = [train_on_repeats(n_layers=1, seed=seed, steps=STEPS) for seed in SEEDS]  # (model, history) each
one_layer_induction = torch.stack([head_scores(m, test_ids)[1][0] for m, _ in one_layer])  # (seeds, 4)
fig = plots.head_score_dots({"previous-token score, layer 0": previous[:, 0],
                             "induction score, layer 1": induction[:, 1],
                             "induction score, one-layer model": one_layer_induction},
                            marked={"previous-token score, layer 0": in_previous,
                                    "induction score, layer 1": induction[:, 1] > 0.3,
                                    "induction score, one-layer model": one_layer_induction > 0.3})

# %%
expect_all(circuit_claims(previous, induction))

# %% [markdown]
# Every seed forms both halves of the circuit. Which head index takes each job changes from
# seed to seed (the heads start as equals; the initialisation decides), and so does **how
# many** heads take it: in layer 1, usually every head becomes an induction head (in this task
# they have nothing else to do), and layer 0 has one or several previous-token heads. That
# will matter when we switch heads off.
#
# ## Causal evidence: switching heads off
#
# A score says where a head looks, not whether the model needs it. Switching it off does. For
# each seed, the loss on the repeat of the test sequences with each head off in turn, minus the
# loss with all heads on:

# %% tags=["nbval-ignore-output"]
baseline = torch.stack([repeat_loss(trained, test_ids) for trained in models])  # (seeds,)
single = torch.stack([torch.stack([torch.stack([repeat_loss(trained, test_ids, [(layer, head)]) for head in range(4)])
                                   for layer in range(2)]) for trained in models])  # (seeds, 2, 4)
in_circuit = torch.zeros(len(SEEDS), 2, 4, dtype=torch.bool)
for s in range(len(SEEDS)):
    for layer, head in previous_heads[s] + induction_heads[s]:
        in_circuit[s, layer, head] = True
groups = {"none off": baseline} | {  # NaN where a seed has no head in a group
    name: torch.stack([repeat_loss(m, test_ids, h) if h else torch.tensor(math.nan) for m, h in zip(models, heads)])
    for name, heads in (("previous-token heads off", previous_heads), ("other layer-0 heads off", other_heads),
                        ("induction heads off", induction_heads))}
print("repeat loss, all heads on:", baseline.numpy().round(2))
for name, values in groups.items():
    print(f"{name:>25}: {values.numpy().round(2)}")

# %% tags=["nbval-ignore-output"]
fig = plots.ablation_effects(single - baseline[:, None, None], in_circuit, groups, LOG_V)

# %%
expect_all(ablation_claims(single, baseline, in_circuit, groups, LOG_V))

# %% [markdown]
# One head at a time (left), only heads of the circuit raise the loss on the repeat; every other
# head raises it by less than 0.1, or lowers it. But a circuit head does not always raise it
# much: where a seed has several previous-token heads, or four induction heads, the others carry
# on without the one switched off. Singh et al., "What needs to go right for an induction head?
# A mechanistic study of in-context learning circuits and their formation" (2024), found the
# same in small attention-only models: several induction heads that add up, wired many-to-many
# to several previous-token heads. In layer 1 almost every head is a circuit head, so the heads
# that are not, the control, are layer 0's others.
#
# The groups (right) settle it. With the induction heads off, the loss on the repeat goes back
# to about $\ln V$ or above: the copying is gone. With the previous-token heads off, the layer-1
# heads' best induction score, which no rule chose them by, falls below 60% of its value in
# every seed, below half in the median (below 40% over the 24 stored runs below): the stripe
# goes, and with it much of the copying, the loss on the repeat rising by more than 1 in every
# seed. That rise says less than it seems to: these heads were chosen because switching them off
# breaks the copying on the selection sequences, and the test sequences are drawn the same way,
# so they guard against sampling noise, not against the choice itself. The induction score and
# the control that follows are what the choice did not decide. With the other layer-0 heads off,
# the loss moves little either way: up by less than 0.1 and down by less than 0.25, in every
# seed that has other layer-0 heads. Here all three do (printed above), and so do all 24 stored
# runs. A seed need not: were all four layer-0 heads to share the job, the best three switched
# off would leave the loss far short of the line, and there would be no control to measure. The
# checks leave such a seed out, but ask for a control in two seeds in three at least. The
# circuit is necessary, and nothing else in layer 0 is.
#
# Layer 1 has almost no such control. Almost every layer-1 head is an induction head (all four
# in 11 of the twelve seeds stored below, at either thread count), so switching the induction
# heads off switches layer 1 off: that shows layer 1 is needed, not that the induction heads are
# needed rather than any heads in their place. The one layer-1 head of the study that is not an
# induction head (seed 10's head 0, at both thread counts, printed below) is a control of one:
# switched off alone, it raises the loss by less than 0.1, as every head outside the circuit
# does. What ties the copying to the induction heads' attention is the rest of the evidence: the
# previous-token heads' control above, the path ablations, and the parameters.
#
# Zeroing a head's output is one way to switch it off; it leaves the next LayerNorm a vector
# the model never saw in training. Another is to replace the head's output by its **mean** over
# the batch and the positions (`how="mean"`), which keeps what the head writes on average and
# removes only what depends on the sequence and the position. The groups again, with mean ablation:

# %% tags=["nbval-ignore-output"]
mean_groups = {name: torch.stack([repeat_loss(m, test_ids, h, how="mean") if h else torch.tensor(math.nan)
                                  for m, h in zip(models, heads)])
               for name, heads in (("previous-token heads off", previous_heads),
                                   ("other layer-0 heads off", other_heads),
                                   ("induction heads off", induction_heads))}
for name, values in mean_groups.items():
    print(f"{name:>25} (mean): {values.numpy().round(2)}")

# %%
expect_all(group_claims(baseline, mean_groups, LOG_V, how="by their mean"))

# %% [markdown]
# The same story: the conclusions do not hang on zeroing.
#
# ## Over twelve seeds
#
# Three seeds are few: a claim that three seeds carry can fail on another seed. On seed 6, for
# one, the second previous-token head scores 0.48: a cut-off at 0.5 would count it among the
# harmless "other" heads, and every ablation that needs it would come out weak. So this
# chapter's whole pipeline was run on twelve seeds (0 to 11, the seeds above among them), once
# on one thread and once on PyTorch's default thread count (two threads where it was stored:
# sums split across threads round differently, and after 300 steps of training that is a
# different model), with `python -m stepbystep.experiments.induction_seeds`, a few minutes of
# computing, and stored with the package; `both_thread_counts` reads both. A different processor
# rounds differently too: on the machine that stored the study the seeds above are the same runs
# as their stored ones; on another they end as slightly different models, so compare their
# numbers with the stored ranges, not run for run. Each run's record holds every measure this
# chapter takes on its three seeds, and every claim checked on those is checked on all 24 runs,
# the sections below included, but one: where the fixed-length model reads (the key 11 back, on
# sequences that never repeat) is measured on the three seeds above only. Only the maps of one
# test sequence and the one prompt above are single examples.

# %% tags=["nbval-ignore-output"]
study = both_thread_counts()  # every seed at one thread, then at PyTorch's default thread count
runs = study["runs"]
thread_counts = study["threads"]  # [1, the default where the study ran]


def span(values, digits=2):
    """The median of ``values`` and their range, over the seeds."""
    return f"median {statistics.median(values):.{digits}f} ({min(values):.{digits}f} to {max(values):.{digits}f})"


for run in runs:
    needed = run["previous_heads"]
    scores = run["previous"][0]
    print(f"seed {run['seed']:>2}, {run['threads']} thread{'s' * (run['threads'] > 1)}: layer-0 scores "
          f"{[round(x, 2) for x in scores]}, previous-token heads {needed}; layer-1 induction heads "
          f"{run['induction_heads']}")
needed_scores = [run["previous"][0][h] for run in runs for h in run["previous_heads"]]
left_out = [run["previous"][0][h] for run in runs for h in range(4) if h not in run["previous_heads"]]
print(f"\nlayer-0 heads that ablation needs score {min(needed_scores):.2f} and up; the heads it leaves out score "
      f"up to {max(left_out):.2f}")
for cut in (0.5, 0.3):
    missed = sorted({(r["seed"], r["threads"]) for r in runs for h in r["previous_heads"] if r["previous"][0][h] <= cut})
    taken = sorted({(r["seed"], r["threads"]) for r in runs for h in range(4)
                    if h not in r["previous_heads"] and r["previous"][0][h] > cut})
    print(f"a cut-off at {cut} misses a needed head in (seed, threads) {missed} and takes in a head left out in {taken}")
for run in runs:  # layer 1's control heads, where a seed has any
    for head in sorted(set(range(4)) - set(run["induction_heads"])):
        rises = [round(loss - run["baseline"], 2) for loss in run["single"][1]]
        print(f"seed {run['seed']}, {run['threads']} thread{'s' * (run['threads'] > 1)}: layer-1 head {head} is no induction head (score "
              f"{run['induction'][1][head]:.2f}); each layer-1 head off alone moves the repeat's loss by {rises}")
headline = {
    "step of the drop": lambda r: r["drop"],
    "repeat's loss, last 20 steps": lambda r: r["phase"]["late_repeat"],
    "share of the 200 prompts written whole": lambda r: r["written_whole"],
    "previous-token heads off: the repeat's loss rises by": lambda r: r["groups"]["previous-token heads off"]
                                                                      - r["baseline"],
    "other layer-0 heads off (seeds that have any): it moves by": lambda r: (
        None if r["groups"]["other layer-0 heads off"] is None else r["groups"]["other layer-0 heads off"] - r["baseline"]),
    "induction heads off: it ends at": lambda r: r["groups"]["induction heads off"],
    "previous-token heads off: share of the best induction score kept": lambda r: (
        r["best_induction_without"]["previous-token heads"] / max(r["induction"][1])),
    "off for layer 1's keys only: share of the induction score kept": lambda r: (
        r["paths"]["key"]["induction"] / max(r["induction"][1])),
    "best layer-1 copying score": lambda r: max(r["copying"][1]),
    "one layer: the repeat's loss": lambda r: r["one_layer"]["repeat"],
    "two layers: the repeat's loss": lambda r: r["baseline"],
}
for threads in thread_counts:
    at = [r for r in runs if r["threads"] == threads]
    print(f"\nover the {len(at)} seeds at {threads} thread{'s' * (threads > 1)}:")
    for name, measure in headline.items():
        values = [v for v in map(measure, at) if v is not None]
        print(f"{name:>66}: {span(values, digits=0 if name == 'step of the drop' else 2)}, {len(values)} seeds")

# %%
expect_all(study_claims(study))

# %% [markdown]
# In most runs one layer-0 head is not enough (in 10 of the twelve seeds at each thread count;
# the check asks for half): switched off alone, the best one leaves the others to carry on
# copying. The heads that ablation needs score from 0.37 up, and the heads it leaves out score up
# to 0.35: on these 24 runs a cut-off between 0.35 and 0.37 would have worked, but nothing
# told us in advance where to put it, and on other seeds even that can fail (on seeds we ran
# beyond the study, ablation left out heads scoring 0.38 to 0.43). A cut-off at 0.5 misses a needed head in
# seeds 6 and 8 (and 5, at two threads), and one at 0.3 takes in harmless heads of seeds 3 and
# 7, which then go missing from the control. A score ranks the heads; what they are for,
# ablation decides. Over the 24 runs, with the
# previous-token heads off the loss on the repeat rises by 1.2 to 2.5 and the best induction
# score keeps 20% to 47% of its value; with the others off the loss falls by 0.16 at most and
# never rises; switched off for layer 1's keys alone, the previous-token heads leave 21% to 46%
# of the best induction score (printed above).
#
# ## One layer cannot
#
# A one-layer model trained on exactly the same batches, for the same 300 steps: its heads read
# only the embeddings, so no head can know which token came before a key (it has already been
# trained above, for the scores figure):

# %% tags=["nbval-ignore-output"]
one_layer_repeat = torch.stack([repeat_loss(m, test_ids) for m, _ in one_layer])  # (seeds,)
one_layer_first = torch.stack([half_losses(per_position_loss(m(test_ids), test_ids), TEST_LENGTH)[0].detach()
                               for m, _ in one_layer])
print("one layer, repeat loss:", one_layer_repeat.numpy().round(2), "first half:", one_layer_first.numpy().round(2))
print("two layers, repeat loss:", baseline.numpy().round(2))

# %% tags=["nbval-ignore-output"]
with torch.no_grad():
    curves = {"two layers": torch.stack([per_position_loss(m(test_ids), test_ids) for m in models]),
              "one layer": torch.stack([per_position_loss(m(test_ids), test_ids) for m, _ in one_layer])}
fig = plots.position_losses(curves, TEST_LENGTH, LOG_V)

# %%
expect_all(one_layer_claims(one_layer_repeat, baseline, one_layer_induction))
first_of_repeat = {name: losses[:, TEST_LENGTH - 1] for name, losses in curves.items()}  # (seeds,): predicting token T
expect_all(first_token_claims(first_of_repeat["one layer"], first_of_repeat["two layers"]))

# %% [markdown]
# The loss at every position of the test sequences shows it at a glance: the two-layer models
# drop at the repeat, the one-layer models only dip. No seed of the one-layer model forms an
# induction head (its best induction score stays low: the third panel above), and the loss on
# the repeat stays far above the two-layer models'. It
# is below $\ln V$ all the same: one layer can learn that a token **seen earlier in the
# sequence** is more likely than one not seen (in the repeat, every next token was seen), which
# is the skip-trigram kind of statistic Elhage et al. describe. That narrows the guess to the
# tokens seen so far, but does not say which of them comes next.
#
# One point stands out: the repeat's first token (at the dotted line), which nothing announces.
# There the one-layer models do better than the two-layer ones, in every seed. That token was
# seen before, and the one-layer models bet on seen tokens (the next section measures it). For the two-layer
# models it is a first-half position like the others: the token before it has not occurred
# before, so their induction heads have nothing to copy, and their first half is worse than the
# one-layer models' (the next section is about why).
#
# ## Why the first half got worse
#
# Back to the first half, which ends a few tenths of a nat above $\ln V$ and rose at the drop. Two
# measurements on the test sequences. First, the probability each seed's model gives, at each
# first-half position, to the tokens that have already occurred in the sequence:

# %% tags=["nbval-ignore-output"]
mass_on_seen, share_seen = torch.stack([torch.stack(seen_token_mass(m, test_ids, TEST_LENGTH))
                                       for m in models]).unbind(dim=1)  # (seeds,) each
one_layer_on_seen = torch.stack([seen_token_mass(m, test_ids, TEST_LENGTH)[0] for m, _ in one_layer])  # (seeds,)
print("probability on already-seen tokens:", mass_on_seen.numpy().round(2), "| one-layer models:",
      one_layer_on_seen.numpy().round(2), "| share of the vocabulary they make up:", share_seen.numpy().round(2))

# %%
expect_all(seen_bet_claims(mass_on_seen, share_seen, one_layer_on_seen))

# %% [markdown]
# In the repeat the next token has always been seen before, and the model carries that bet
# into the first half, where the next token is a fresh random one. (Each batch's half-length is
# random, so a position alone does not tell the model which half it is in.) The one-layer models
# make the same bet, and their first half sits at about 3.7.
#
# Second, the circuit itself. In the first half a token sometimes occurs twice (the sequence in
# the maps above had two such pairs), and then the induction heads copy what followed it the
# first time, a wrong guess on random tokens. For each seed, the first half's loss after a token
# seen before and after a fresh one, and the first half's loss with the induction heads off:

# %% tags=["nbval-ignore-output"]
split = torch.tensor([[loss.item() for loss in first_half_losses(m, test_ids, TEST_LENGTH)]
                      for m in models])  # (seeds, 2): after a seen token, after a fresh one
first_on = torch.stack([first_half_loss(m, test_ids) for m in models])  # (seeds,)
first_off = torch.stack([first_half_loss(m, test_ids, h) for m, h in zip(models, induction_heads)])  # (seeds,)
print("first half after a seen token:", split[:, 0].numpy().round(2), "| after a fresh one:",
      split[:, 1].numpy().round(2))
print("first half, induction heads on:", first_on.numpy().round(2), "| off:", first_off.numpy().round(2),
      "| one-layer models:", one_layer_first.numpy().round(2))
for run in runs:  # the stored study, above: the runs where switching the induction heads off does not lower it
    if run["first_half"]["induction heads off"] >= run["first_half"]["on"]:
        print(f"stored seed {run['seed']} at {run['threads']} threads: first half {run['first_half']['on']:.2f} with the "
              f"induction heads on, {run['first_half']['induction heads off']:.2f} off; its one-layer model "
              f"{run['one_layer']['first']:.2f}")

# %%
expect_all(first_half_claims(split[:, 0], split[:, 1], first_on, first_off, one_layer_first))

# %% [markdown]
# With the induction heads off, the first half ends at the one-layer models' level in every
# seed, and in most seeds that is a fall: the rise at the drop is mostly the induction heads'
# doing. Mostly, not always: in the stored study, seed 4 at the default thread count (printed)
# sits near the one-layer level with its induction heads on, and switching them off raises its
# first half a little. After a token seen before,
# where they can copy on the first half's own repeats, the loss is highest in every seed; after
# a fresh token, far more common, it is lower, and in most seeds still above the one-layer level
# (we did not measure this split with the heads off, so how much of each part is theirs is a
# hypothesis: perhaps, with nothing to find, they still read some early key and copy a little of
# it). What is left above $\ln V$ is the bet on seen tokens, which the one-layer models share. An
# induction head copies on any repeat, wanted or not.
#
# ## A score can be fooled
#
# Why did every training batch draw its own half-length? Here is what happens without that:
# the same one-layer model, trained on the same budget with every half 12 tokens long, the same 3 seeds
# (the stored study repeats it on all twelve, at both thread counts), tested on halves of 12 (the
# test sequences above) and of 8 tokens:

# %% tags=["nbval-ignore-output"]
fixed = [train_on_repeats(n_layers=1, seed=seed, steps=STEPS, lengths=(TEST_LENGTH, TEST_LENGTH))[0]
         for seed in SEEDS]
other_ids = other_length_sequences()  # (256, 16): halves of 8, a data seed no batch uses
at_12, at_8 = ({key: torch.stack([r[key] for r in results]) for key in ("repeat", "induction")}  # (3,) each
               for results in ([fixed_length_scores(m, ids) for m in fixed] for ids in (test_ids, other_ids)))
print("half of 12: repeat loss", at_12["repeat"].numpy().round(2), "best induction score",
      at_12["induction"].numpy().round(2))
print("half of 8:  repeat loss", at_8["repeat"].numpy().round(2), "best induction score",
      at_8["induction"].numpy().round(2))

# %%
expect_all(fixed_length_claims(at_12, at_8, LOG_V))

# %% [markdown]
# At the length it was trained on, the one-layer model copies the repeat, and one of its heads
# even scores as an induction head. Is it one? With RoPE, a head can learn to read the key 11
# positions back whatever the tokens, and on a sequence repeated after 12 tokens that key is
# exactly the one an induction head would read. At another length the same head reads the wrong
# key: the loss on the repeat is then even above $\ln V$, since the model confidently copies the
# wrong token. The two explanations disagree on sequences that never repeat: there an induction
# head has no earlier occurrence to find, and a head that reads a distance still reads it. The
# weight each fixed-length model's best head puts on the key 11 back, over the second half of
# the 256 unrepeated sequences, and, as the control, the weight the two-layer models' best
# induction head puts there:

# %% tags=["nbval-ignore-output"]
fixed_back = torch.stack([key_weight(m, unrepeated, 0, head_scores(m, test_ids)[1][0].argmax().item(), TEST_LENGTH - 1)
                          for m in fixed])  # (seeds,)
induction_back = torch.stack([key_weight(m, unrepeated, 1, head, TEST_LENGTH - 1)
                              for m, head in zip(models, induction[:, 1].argmax(dim=1).tolist())])  # (seeds,)
print(f"weight on the key {TEST_LENGTH - 1} back, sequences that never repeat: fixed-length model",
      fixed_back.numpy().round(2), "| two-layer induction head", induction_back.numpy().round(2))

# %%
expect_all(position_claims(fixed_back, induction_back))

# %% [markdown]
# The fixed-length model's head reads 11 back whether or not the token there has anything to
# do with the query's; the induction head, given nothing to find, looks elsewhere. So the first
# is a head that reads a distance, and scores as an induction head only where that distance
# happens to be the right one. A score measures where a head looks **on the sequences you give
# it**; to tell two explanations apart, test where they disagree.
#
# ## Try it
#
# Pick a layer and a head of the seed-0 model, and a test sequence (or type token ids below
# 32, separated by spaces: try a short pattern twice). The map shows where the head looks, its
# title the two scores on this sequence; tick "switch the head off" to add the loss at every
# position without it. It opens on the seed-0 model's previous-token head: switch it off, then
# switch off a layer-1 head instead. Why does only one of them matter on its own?

# %% tags=["nbval-ignore-output"]
head_explorer(models[0], test_ids[:16], layer=0, head=previous_head)

# %% [markdown]
# ## Recap
#
# - An **attention-only** Transformer adds only what its heads write to the residual stream; a
#   head's output can be switched off by zeroing its slice of the merged context (or replacing
#   it by its mean).
# - Trained on random tokens repeated, a two-layer model's loss on the repeat creeps down for
#   a while, then falls far below $\ln V$ within a few dozen steps: the **phase change**, in
#   every seed, at a different step each time. The first half stays near $\ln V$, a little
#   above: the model bets on tokens already seen, and the induction heads copy on the first
#   half's own repeats, both wrong on random tokens.
# - Two scores computed from the attention weights point at the heads: a **previous-token head** in layer
#   0 (the line below the diagonal) and an **induction head** in layer 1 (a stripe $T - 1$ below
#   the diagonal on a sequence repeated after $T$ tokens). Which head indices take the jobs, and
#   how many heads, changes with the seed. The induction score rises a little before any
#   previous-token head forms; with layer 0 switched off it stays low all through training.
# - A score ranks the heads, but no cut-off chosen in advance tells which ones the model needs:
#   in most seeds several layer-0 heads share the previous-token job, some scoring under 0.5. We
#   found them by **ablation**: switched off from the best score down until the copying breaks,
#   on sequences of their own, so that what they do on the test sequences is measured, not
#   true by definition.
# - The induction heads also **copy**: their OV circuits, read from the parameters, raise the token
#   they read above every other for most tokens; the layer-0 heads' do not.
# - **K-composition**: the induction head's keys read what the previous-token heads wrote.
#   Switched off for layer 1's keys only, the previous-token heads take the stripe with them; for
#   its queries only, nothing changes. The parameters agree: layer 1's keys read those heads' output
#   more than its queries and values do, and the QK circuit prefers the key after the query's own
#   token.
# - **Ablation** is the causal test: the loss on the repeat rises only when circuit heads are
#   switched off, and redundant heads can hide a single head's role until they are switched
#   off together. The other layer-0 heads, switched off, move it little either way; layer 1,
#   where almost every head is an induction head, has no such control. Over twelve stored seeds,
#   each trained at one thread and at the default thread count, every claim the chapter checks
#   holds (all but where the fixed-length model reads, the key 11 back, checked on the live
#   seeds only).
# - A **one-layer** model on the same budget forms no induction head, and its median loss on the
#   repeat stays over 3 times the two-layer models' (it bets on the tokens already seen).
#   Trained on one fixed length, it does copy, by position, and even scores as an induction head
#   at that length: a score is evidence only on sequences where the explanations disagree.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(answer)` says whether your answer is right and, if not,
# what is wrong with it; `.hint()` gives a nudge and `.solution()` a worked answer. The cells
# below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. The previous-token score.** Write `my_previous_token_score(weights)`, without
# `stepbystep.interpret`: weights `(N, H, L, L)` in, one score per head `(H,)` out, the mean
# weight a query puts on the key just before it. Which queries have a key before them?

# %%
def my_previous_token_score(weights):
    return weights.mean(dim=(0, 2, 3))  # replace: the weight on the key just before each query


ch13.previous_token.check(my_previous_token_score)

# %% [markdown]
# **2. The induction score.** Write `my_induction_score(weights, ids)`, again without
# `stepbystep.interpret`: the mean weight a query
# puts on the key right after the earlier occurrence of its own token, over the queries whose
# token occurred before, `(H,)`. The checker uses sequences where each token occurs at most
# twice, so each query has at most one earlier occurrence (`induction_score` sums over them when
# there are several).

# %%
def my_induction_score(weights, ids):
    return weights.mean(dim=(0, 2, 3))  # replace: the weight on the key after the earlier occurrence


ch13.induction.check(my_induction_score)

# %% [markdown]
# **3. Where is the stripe now?** Put `gap` other random tokens between the two copies:
# `length` random tokens, then `gap` more, then the first `length` again. An induction head's
# query at position `i` in the repeat reads the key at `i - offset`. Write
# `my_stripe_offset(length, gap)` that returns `offset`. Predict it first, then check it on the
# trained model with a sequence you build (the widget takes typed tokens).

# %%
def my_stripe_offset(length, gap):
    return 0  # replace: how many positions back the induction head reads


ch13.stripe.check(my_stripe_offset)

# %% [markdown]
# **4. The smallest set of heads that breaks the copying.** Write `my_breaking_heads(model, ids)`:
# given a trained two-layer model and repeated sequences, return the **layer-0** heads, as
# `(0, head)` pairs, whose joint ablation breaks in-context copying (the loss on the repeat rises
# above half of $\ln V$), such that no set of fewer heads does. `previous_token_heads` follows
# the scores; here, do without it and try sets of heads yourself, smallest first. Predict first:
# would a cut-off at 0.5 on the scores find the set? The checker trains its own model, on a seed
# this chapter does not show (a few seconds). Where several sets of the smallest size break the
# copying, any one of them is right.

# %%
def my_breaking_heads(model, ids):
    return [(0, 0), (0, 1), (0, 2), (0, 3)]  # replace: the smallest set that breaks the copying


ch13.breaking_heads.check(my_breaking_heads)
