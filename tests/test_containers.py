"""map_structure: the one walk over nested batches and outputs that the package uses."""
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest
import torch

from stepbystep.containers import map_structure
from stepbystep.devices import move_to

Pair = namedtuple("Pair", ["output", "weights"])


def _double(leaf):
    return leaf * 2 if isinstance(leaf, (int, torch.Tensor)) else leaf


def test_every_container_kind_keeps_its_class_and_nesting():
    tree = {"a": (1, [2, 3]), "b": Pair(4, None), "c": OrderedDict(x=5)}
    mapped = map_structure(_double, tree)
    assert mapped == {"a": (2, [4, 6]), "b": Pair(8, None), "c": OrderedDict(x=10)}
    assert type(mapped["b"]) is Pair and type(mapped["c"]) is OrderedDict
    assert type(mapped["a"][1]) is list


def test_a_defaultdict_keeps_its_default_factory():
    tree = defaultdict(list, {"x": 1})
    mapped = map_structure(_double, tree)
    assert mapped == {"x": 2} and mapped["missing"] == []


def test_torch_return_types_are_rebuilt():
    result = torch.max(torch.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=1)
    mapped = map_structure(_double, result)
    assert type(mapped) is type(result)
    assert torch.equal(mapped.values, torch.tensor([6.0, 8.0])) and torch.equal(mapped.indices, torch.tensor([2, 0]))


def test_two_trees_combine_leaf_by_leaf():
    old = Pair(np.zeros((2, 3)), None)
    new = Pair(np.ones((1, 3)), None)
    combined = map_structure(lambda a, b: b if a is None else np.concatenate([a, b]), old, new)
    assert type(combined) is Pair and combined.output.shape == (3, 3) and combined.weights is None


@pytest.mark.parametrize("old, new, message", [
    ((1, 2), (1, 2, 3), "a tuple of length 2 against a tuple of length 3"),
    ({"a": 1}, {"b": 1}, r"a dict with keys \['a'\] against a dict with keys \['b'\]"),
    ([1], 1, "a list of length 1 against a leaf of type int"),
])
def test_trees_of_different_nesting_are_refused(old, new, message):
    with pytest.raises(ValueError, match=message):
        map_structure(lambda a, b: a, old, new)


def test_move_to_moves_tensors_inside_a_namedtuple_and_keeps_the_rest():
    batch = Pair(torch.zeros(2, dtype=torch.int64), {"mask": torch.ones(2), "name": "squares"})
    moved = move_to(batch, "meta")
    assert type(moved) is Pair
    assert moved.output.device.type == "meta" and moved.output.dtype == torch.int64
    assert moved.weights["mask"].device.type == "meta" and moved.weights["name"] == "squares"
