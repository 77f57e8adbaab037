"""The notebooks as a test suite fail when an idea in the package breaks (`make test-breakage`).

Each case breaks one idea of the package (a kernel, a scaling, a mask, an encoding, a residual
connection, a training step) and runs the chapter that teaches it under strict nbval. The break
is a function swapped for a broken one when Python starts (a ``sitecustomize`` on the path of
the test and of the notebook's kernel): the public object is looked up by name, e.g.
``stepbystep.models.subsequent_mask``, and replaced in every loaded ``stepbystep`` module that
holds it, so a case follows the function wherever its file moves. The chapter must fail, and
fail on the claim that states the broken idea: its cell stops with ``✗ expected <claim>``.

These runs take minutes, so they are marked ``breakage`` and left out of the plain
``pytest tests/``; CI runs them with ``make test-breakage``.
"""
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Break:
    name: str
    chapter: str
    module: str  # where the public object is looked up
    target: str  # a function, or Class.method; "a|b": the first of these that exists
    broken: str  # the body of make_broken(original), returning the broken function
    claim: str  # the claim whose check must fail


BREAKS = [
    Break("kernel-width-not-squared", "01_kernel_regression", "stepbystep.models", "nadaraya_watson", """
        def broken(queries, keys, values, sigma, *args, **kwargs):  # scores -d²/(2σ) instead of -d²/(2σ²)
            return original(queries, keys, values, sigma**0.5, *args, **kwargs)
        return broken""",
          "nadaraya_watson makes our predictions"),
    Break("training-step-skipped", "01_kernel_regression", "stepbystep", "StepByStep.__init__", """
        def broken(self, *args, **kwargs):  # the trainer computes gradients but never updates
            original(self, *args, **kwargs)
            self.optimizer.step = lambda *step_args, **step_kwargs: None
        return broken""",
          "from σ = 2, every learned σ, in all twelve runs, lies within 1% of σ*"),
    Break("scores-not-scaled", "02_self_attention", "stepbystep.models", "scaled_dot_product", """
        def broken(q, k, v, *args, **kwargs):  # q·k instead of q·k / √d_k
            return original(q * math.sqrt(q.shape[-1]), k, v, *args, **kwargs)
        return broken""",
          "no mask: scaled_dot_product computes our context"),
    Break("no-positional-encoding", "02_self_attention", "stepbystep.models", "sinusoidal_table", """
        def broken(*args, **kwargs):  # the sines gone: only the cosines are left
            table = original(*args, **kwargs).clone()
            table[..., 0::2] = 0
            return table
        return broken""",
          "every pair of positions the same offset apart is the same distance apart (± 1e-4)"),
    Break("heads-take-interleaved-features", "03_multihead_attention", "stepbystep.models",
          "NarrowMultiHeadAttention.make_chunks", """
        def broken(self, x):  # head i reads features i, i + h, i + 2h, ... instead of its own d_k in a row
            n, length = x.shape[:2]
            return x.view(n, length, self.d_k, -1).permute(0, 3, 1, 2)
        return broken""",
          "every head's stored map is the softmax of its own chunks' scores"),
    Break("no-residual-connection", "04_stacking_layers", "stepbystep.models", "SubLayerWrapper.forward", """
        def broken(self, x, sublayer, *args, **kwargs):  # the sublayer's output without x added
            if self.norm_first:
                return original(self, x, sublayer, *args, **kwargs) - x
            return original(self, x, lambda *a, **k: sublayer(*a, **k) - x, *args, **kwargs)
        return broken""",
          "norm-first: the wrapper computes the function written by hand"),
    Break("causal-mask-sees-the-future", "05_transformer", "stepbystep.models", "subsequent_mask", """
        def broken(*args, **kwargs):  # every position may read every other
            return torch.ones_like(original(*args, **kwargs))
        return broken""",
          "every first row is (1, 0): position 0 attends only to itself"),
    Break("source-padding-not-masked", "07_tokens_and_decoding", "stepbystep.models", "TokenTransformer.source_mask", """
        def broken(self, source_ids):  # every source position readable, the pads included
            return None
        return broken""",
          "with masks, the three paddings score within 0.4 points"),
    Break("padding-mask-not-converted", "06_torch_transformer", "stepbystep.models", "to_key_padding_mask", """
        def broken(*args, **kwargs):  # True on the real tokens: PyTorch then blocks them
            return ~original(*args, **kwargs)
        return broken""",
          "the converted mask blocks every padded position"),
    Break("patches-read-column-by-column", "11_vision_transformer", "stepbystep.models", "PatchEmbed.forward", """
        def broken(self, *args, **kwargs):  # the patch tokens in column order, not row order
            tokens = original(self, *args, **kwargs)  # (N, n_patches, embed_dim)
            side = round(tokens.shape[1] ** 0.5)
            return tokens.view(tokens.shape[0], side, side, -1).transpose(1, 2).reshape(tokens.shape)
        return broken""",
          "the convolution computes the patches' projections, up to rounding"),
    Break("dates-decoder-reads-ahead", "08_translating_dates", "stepbystep.models", "TokenTransformer.target_mask", """
        def broken(self, target_in):  # the padding rule kept, the causal one dropped: a position reads what follows it
            mask = original(self, target_in)
            return torch.ones_like(mask) if self.pad_id is None else torch.ones_like(mask) & mask.any(dim=-2, keepdim=True)
        return broken""",
          "at least 99.5% exact match on the held-out dates"),
    Break("kv-cache-never-read", "09_decoder_only", "stepbystep.models", "LayerCache.extend|KVCache.append", """
        def broken(self, *args):  # (new_keys, new_values) last: what was cached reads as zeros
            keys, values = original(self, *args)
            new_keys, new_values = args[-2:]
            old = keys.shape[-2] - new_keys.shape[-2]
            return (torch.cat([torch.zeros_like(keys[..., :old, :]), new_keys], dim=-2),
                    torch.cat([torch.zeros_like(values[..., :old, :]), new_values], dim=-2))
        return broken""",
          "the trained model writes the same tokens with and without the cache"),
    Break("rope-angle-not-proportional-to-position", "10_positions", "stepbystep.models", "RotaryEmbedding.forward", """
        def broken(self, x, positions=None, *args, **kwargs):  # rotated by p + p²/64, not in proportion to p
            if positions is None:
                positions = torch.arange(x.shape[-2], device=x.device)
            return original(self, x, positions + positions * positions // 64, *args, **kwargs)
        return broken""",
          "the three curves are equal (± 1e-5): the score depends on the offset only"),
    Break("merge-without-rescaling", "14_tiled_attention", "stepbystep.models", "merge_partials", """
        def broken(m1, l1, o1, m2, l2, o2):  # each sum was taken against its own max: added as they are
            l = l1 + l2
            return torch.maximum(torch.as_tensor(m1), torch.as_tensor(m2)), l, (o1 * l1 + o2 * l2) / l
        return broken""",
          "merging the partial results of keys 0-4 and 5-11 gives the softmax-weighted values (± 1e-6)"),
    Break("causal-diagonal-tiles-skipped", "14_tiled_attention", "stepbystep.models", "tile_plan", """
        def broken(l_q, l_k, block_q, block_k, is_causal=False, causal_alignment="top_left"):  # diagonal tiles skipped too
            plan, counts = original(l_q, l_k, block_q, block_k, is_causal, causal_alignment)
            if is_causal:
                plan = [(rows, [keys for keys in key_blocks if keys[1] <= rows[0]] or key_blocks[:1])
                        for rows, key_blocks in plan]
            return plan, counts
        return broken""",
          "is_causal: the same as the fused kernel's is_causal (± 1e-5)"),
    Break("rmsnorm-centres-its-input", "12_todays_block", "stepbystep.models", "RMSNorm.forward", """
        def broken(self, x):  # the mean taken out first: LayerNorm's centring, which RMSNorm drops
            return original(self, x - x.mean(dim=-1, keepdim=True))
        return broken""",
          "RMSNorm equals nn.RMSNorm with the same gain (± 1e-6)"),
    Break("ablation-switches-nothing-off", "13_induction_heads", "stepbystep.interpret", "ablate_heads", """
        def broken(model, heads, *args, **kwargs):  # every head left on
            return original(model, [], *args, **kwargs)
        return broken""",
          "with the previous-token heads off, every seed's best induction score falls below 60% of its value"),
    Break("merges-applied-out-of-order", "15_subword_tokens", "stepbystep.data", "BytePairTokenizer._encode_piece", """
        def broken(self, piece):  # merges the leftmost pair that forms a token, not the earliest-learned one
            parts = [bytes([b]) for b in piece]
            while True:
                for i in range(len(parts) - 1):
                    if parts[i] + parts[i + 1] in self._rank:
                        parts[i:i + 2] = [parts[i] + parts[i + 1]]
                        break
                else:
                    return [self._rank[part] for part in parts]
        return broken""",
          "the chapter's tokenizer gives tiktoken's ids on the whole held-out play"),
    Break("gradients-summed-not-averaged", "16_beyond_one_machine", "stepbystep.training.data_parallel",
          "average_gradients", """
        def broken(model, world_size):  # the all-reduce's sum, never divided by the number of ranks
            return original(model, 1)
        return broken""",
          "with the all-reduce, both ranks hold the one-process weights after every step, to 1e-6, on every seed"),
    Break("top-k-not-renormalised", "17_after_llama", "stepbystep.models", "MixtureOfExperts.route", """
        def broken(self, x):  # the k router probabilities as they are, not divided by their sum
            probs, chosen, weights = original(self, x)
            return probs, chosen, probs.gather(-1, chosen).to(weights.dtype)
        return broken""",
          "MixtureOfExperts equals the top-2 routing written by hand, the weights renormalised (± 1e-6)"),
]

SITECUSTOMIZE = '''\
"""One breakage case: swap {module}.{target} for a broken function when Python starts."""
import importlib
import math
import os
import sys

import torch


def make_broken(original):
{broken}


def find(module, target):
    """The object that owns the target's last name, its path and that name, for the first target that exists."""
    for candidate in target.split("|"):
        owner, (*path, name) = module, candidate.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and hasattr(owner, name):
            return owner, path, name, candidate
    raise AttributeError(module.__name__ + " has none of " + target)


def swap(module_name, target):
    owner, path, name, target = find(importlib.import_module(module_name), target)
    original = getattr(owner, name)
    broken = make_broken(original)
    if path:  # a method: one class, shared by every module that imports it
        setattr(owner, name, broken)
        return [module_name + "." + target]
    places = []
    for loaded_name, loaded in list(sys.modules.items()):
        if loaded_name.split(".")[0] != "stepbystep" or loaded is None:
            continue
        for attribute, value in list(vars(loaded).items()):
            if value is original:
                setattr(loaded, attribute, broken)
                places.append(loaded_name + "." + attribute)
    return places


places = swap({module!r}, {target!r})
with open(os.environ["BREAKAGE_REPORT"], "a") as report:
    report.write(" ".join(places) + "\\n")
'''


def _write_sitecustomize(folder, case):
    broken = textwrap.indent(textwrap.dedent(case.broken).strip("\n"), "    ")
    (folder / "sitecustomize.py").write_text(
        SITECUSTOMIZE.format(module=case.module, target=case.target, broken=broken))


def _environment(folder):
    paths = [str(folder), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p),
                BREAKAGE_REPORT=str(folder / "swapped.txt"))


@pytest.mark.parametrize("case", BREAKS, ids=[case.name for case in BREAKS])
def test_each_break_names_a_claim_of_its_chapter(case):
    """Cheap and always run: the claim a break must trip is one the chapter's source states."""
    sources = [ROOT / "notebooks" / f"{case.chapter}.py", *(ROOT / "stepbystep" / "experiments").glob("*.py")]
    words = case.claim.split(": ")[-1]  # after an f-string's label such as "no mask: "
    assert any(words in path.read_text() for path in sources), (
        f"{case.name}: no claim {case.claim!r} in {case.chapter}.py: update BREAKS")


@pytest.mark.breakage
@pytest.mark.parametrize("case", BREAKS, ids=[case.name for case in BREAKS])
def test_chapter_fails_on_the_claim_its_broken_idea_makes(tmp_path, case):
    _write_sitecustomize(tmp_path, case)
    env = _environment(tmp_path)
    check = subprocess.run(  # from notebooks/, where the kernels run
        [sys.executable, "-c", "import stepbystep; print(stepbystep.__file__)"],
        cwd=ROOT / "notebooks", env=env, capture_output=True, text=True)
    swapped = (tmp_path / "swapped.txt").read_text().split() if (tmp_path / "swapped.txt").exists() else []
    assert swapped, f"{case.name}: {case.module}.{case.target} was not swapped: update BREAKS\n{check.stderr}"
    assert check.stdout.strip().startswith(str(ROOT / "stepbystep")), "the kernel must import this checkout"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", f"notebooks/{case.chapter}.ipynb", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    output = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
    assert run.returncode == 1, (
        f"{case.chapter} passed (exit {run.returncode}) with {case.name}: its checks do not catch that break\n"
        + output[-3000:])
    assert f"✗ expected {case.claim}" in output, (
        f"{case.chapter} failed with {case.name}, but not on the claim {case.claim!r}\n" + output[-3000:])
