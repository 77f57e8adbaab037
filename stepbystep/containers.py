"""One way to walk nested containers: batches, model outputs and recorded hook outputs.

Batches and outputs are tensors nested in tuples (named ones and ``torch.return_types``
included), lists and dicts. Moving a batch to a device, turning an output into NumPy and
appending a hook's new output to what it recorded are all the same walk with a different
function at the leaves, so the package does it in one place, here.
"""
import copy

__all__ = ["map_structure"]


def map_structure(fn, tree, *others):
    """Apply ``fn`` to the leaves of ``tree`` (and ``others``), rebuilding ``tree``'s containers.

    With one tree, ``fn(leaf)`` replaces every leaf; with several trees of the same nesting,
    ``fn(leaf_1, leaf_2, ...)`` combines corresponding leaves (for example an old and a new
    output to concatenate). Containers are tuples, named tuples, lists and dicts (subclasses
    keep their class: an ``OrderedDict`` stays one); everything else, ``None`` included, is a
    leaf. Trees whose nesting differs raise ValueError.
    """
    trees = (tree, *others)
    if isinstance(tree, dict):
        for other in others:
            if not isinstance(other, dict) or other.keys() != tree.keys():
                raise ValueError(f"the trees must have the same nesting: a dict with keys {list(tree)} "
                                 f"against {_describe(other)}")
        result = copy.copy(tree)  # a shallow copy keeps a subclass and its settings (defaultdict)
        for key in tree:
            result[key] = map_structure(fn, *(each[key] for each in trees))
        return result
    if isinstance(tree, (tuple, list)):
        for other in others:
            if not isinstance(other, (tuple, list)) or len(other) != len(tree):
                raise ValueError(f"the trees must have the same nesting: a {type(tree).__name__} of "
                                 f"length {len(tree)} against {_describe(other)}")
        items = [map_structure(fn, *leaves) for leaves in zip(*trees)]
        if hasattr(type(tree), "_make"):  # a namedtuple takes its fields one by one
            return type(tree)._make(items)
        return type(tree)(items)  # tuple, list, their subclasses and torch.return_types
    return fn(*trees)


def _describe(tree):
    if isinstance(tree, dict):
        return f"a dict with keys {list(tree)}"
    if isinstance(tree, (tuple, list)):
        return f"a {type(tree).__name__} of length {len(tree)}"
    return f"a leaf of type {type(tree).__name__}"
