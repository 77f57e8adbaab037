"""Argument checks with one convention for the whole package.

A value of the wrong type raises ``TypeError``; a value of the right type that is out of range
or not among the allowed choices raises ``ValueError``. Every message reads
``"<name> must be <what was expected>, got <what arrived>"``, so a learner sees at once which
argument is wrong and how to fix it. Each check returns the value, so it can be used inline:
``self.clip_value = check_positive_number("clip_value", clip_value)``.

Where the checks run: at entry points, the functions and constructors a learner calls and a
model's ``forward``; helpers a model calls inside (``attend``, ``RotaryEmbedding.rotate``, a
decoding loop's step) check nothing. Not every check is at an entry point, though: a module a
learner also calls alone (the attention modules, the layers, ``PositionalEncoding``) checks the
shapes and dtypes of its inputs on every call, so also when a model calls it, at every layer and
every decoding step. These checks read shapes only, never values (no wait for an accelerator).
"""
import math
import numbers

import torch

__all__ = [
    "check_instance",
    "check_positive_int",
    "check_non_negative_int",
    "check_int_range",
    "check_positive_number",
    "check_number_range",
    "check_fraction",
    "check_choice",
    "check_tensor",
    "check_vectors",
    "check_float_dtype",
    "check_indices",
    "check_ids",
    "check_positions",
    "check_sequences",
]


def _type_name(value):
    return type(value).__name__


def check_instance(name, value, types, expected=None):
    """``value`` must be an instance of ``types`` (a class or a tuple of classes), else TypeError.

    ``expected`` words the requirement in the message (by default the class names).
    """
    if not isinstance(value, types):
        if expected is None:
            classes = types if isinstance(types, tuple) else (types,)
            expected = "of type " + " or ".join(cls.__name__ for cls in classes)
        raise TypeError(f"{name} must be {expected}, got {_type_name(value)}")
    return value


def _check_int(name, value, expected):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {_type_name(value)} {value!r}")


def check_positive_int(name, value):
    """``value`` must be an int (NumPy ints too, bools not) of at least 1."""
    _check_int(name, value, "a positive int")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_non_negative_int(name, value):
    """``value`` must be an int (NumPy ints too, bools not) of at least 0."""
    _check_int(name, value, "a non-negative int")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def check_int_range(name, value, low, high=None):
    """``value`` must be an int (NumPy ints too, bools not) from ``low`` to ``high``, both included.

    ``high=None`` leaves it unbounded above.
    """
    expected = f"an int >= {low}" if high is None else f"an int from {low} to {high}"
    _check_int(name, value, expected)
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def check_positive_number(name, value, allow_infinity=False, allow_zero=False):
    """``value`` must be a real number (int or float, NumPy ones too, bools not) above 0.

    It must be finite too, unless ``allow_infinity`` (for a norm order, where inf means the
    largest absolute value); ``allow_zero`` accepts 0 too (a temperature of 0: the arg-max).
    """
    expected = "0 or a positive number" if allow_zero else "a positive number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {expected}, got {_type_name(value)} {value!r}")
    if not ((value > 0 or (allow_zero and value == 0)) and (math.isfinite(value) or allow_infinity)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def check_number_range(name, value, low, high):
    """``value`` must be a real number (NumPy ones too, bools not) from ``low`` to ``high``, both included."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number from {low} to {high}, got {_type_name(value)} {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")
    return value


def check_fraction(name, value, allow_one=False):
    """``value`` must be a real number in (0, 1), or in (0, 1] with ``allow_one``."""
    interval = "(0, 1]" if allow_one else "(0, 1)"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {interval}, got {_type_name(value)} {value!r}")
    if not (0 < value < 1 or (allow_one and value == 1)):
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
    return value


def check_choice(name, value, choices):
    """``value`` must be one of ``choices``, else ValueError listing them."""
    if value not in choices:
        listed = ", ".join(repr(choice) for choice in choices)
        raise ValueError(f"{name} must be one of {listed}, got {value!r}")
    return value


def check_tensor(name, value, ndim=None, dtype=None):
    """``value`` must be a tensor, with ``ndim`` dimensions and a ``dtype`` when given.

    ``ndim`` and ``dtype`` may be one value or a tuple of allowed ones. A non-tensor or a
    wrong dtype (the elements' type) raises TypeError; a wrong number of dimensions ValueError.
    """
    check_instance(name, value, torch.Tensor, "a tensor")
    if dtype is not None:
        dtypes = dtype if isinstance(dtype, tuple) else (dtype,)
        if value.dtype not in dtypes:
            wanted = " or ".join(str(d) for d in dtypes)
            raise TypeError(f"{name} must be a tensor of dtype {wanted}, got {value.dtype}")
    if ndim is not None:
        dims = ndim if isinstance(ndim, tuple) else (ndim,)
        if value.dim() not in dims:
            wanted = " or ".join(f"{d}-D" for d in dims)
            raise ValueError(f"{name} must be a {wanted} tensor, got shape {tuple(value.shape)}")
    return value


def check_vectors(name, x, size, min_length=0):
    """``x`` must be a tensor ``(N, L, size)``, a batch of sequences of vectors, with ``L >= min_length``."""
    if not isinstance(x, torch.Tensor):  # the message is built only on failure: this runs at every generated token
        raise TypeError(f"{name} must be a tensor (N, L, {size}), got {_type_name(x)}")
    if x.dim() != 3 or x.shape[2] != size or x.shape[1] < min_length:
        at_least = f" with L >= {min_length}" if min_length else ""
        raise ValueError(f"{name} must have shape (N, L, {size}){at_least}, got {tuple(x.shape)}")
    return x


def check_float_dtype(name, x, dtype):
    """Tensor ``x`` must have the model's float ``dtype``, else TypeError (rather than PyTorch's from
    inside the first layer). Under ``torch.autocast`` on ``x``'s device any float dtype passes: the
    layers cast their inputs themselves there. ``dtype=None`` (a model without float weights) checks nothing."""
    if dtype is not None and x.dtype != dtype and not (x.is_floating_point() and torch.is_autocast_enabled(x.device.type)):
        raise TypeError(f"{name} must be a float tensor of the model's dtype {dtype}, got {x.dtype}: "
                        f"convert it with {name}.to({dtype})")
    return x


def check_ids(name, ids, vocab_size, max_len, held=0):
    """Token ids ``(N, L)``: ``L >= 1``, at most ``max_len`` with a cache's ``held`` tokens, in
    ``0 .. vocab_size - 1``, on every device: one host read of their range (an id out of range
    would be a device-side assert on an accelerator); a ``meta`` tensor has no values to read."""
    check_tensor(name, ids, dtype=(torch.int64, torch.int32))  # what nn.Embedding reads
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"{name} must have shape (N, L) with L >= 1, got {tuple(ids.shape)}")
    if held + ids.shape[1] > max_len:
        after = f" after the {held} tokens in the cache" if held else ""
        raise ValueError(f"{name} must be at most the model's max_len={max_len} long{after}, "
                         f"got length {held + ids.shape[1]}")
    if ids.device.type != "meta":
        check_indices(name, ids, vocab_size, "ids")


def check_indices(name, index, size, what="indices"):
    """``index`` must be an integer tensor of ``what`` (e.g. ``"ids"``) in ``0 .. size - 1``: one host
    read of its range, so that an index out of range is a clear error, not a device-side assert."""
    check_tensor(name, index)
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of {what}, got dtype {index.dtype}")
    if index.numel():
        low, high = map(int, index.aminmax())
        if low < 0 or high >= size:
            raise ValueError(f"{name} must hold {what} in 0..{size - 1}, got {what} from {low} to {high}")
    return index


def check_positions(positions, length, max_len):
    """Positions ``(L,)`` or ``(N, L)``: integers in ``0 .. max_len - 1``, one per vector; the values are
    read only on the CPU (elsewhere that would wait for the device)."""
    check_tensor("positions", positions, ndim=(1, 2))
    if positions.is_floating_point() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold integer positions, got dtype {positions.dtype}")
    if positions.shape[-1] != length:
        raise ValueError(f"positions must have one entry per vector, (L,) or (N, L) with L = {length}, "
                         f"got shape {tuple(positions.shape)}")
    if positions.device.type == "cpu" and positions.numel():
        low, high = int(positions.min()), int(positions.max())
        if low < 0 or high >= max_len:
            raise ValueError(f"positions must be in 0..{max_len - 1} (the table has max_len={max_len} rows: "
                             f"a position past them has no vector), got {high if high >= max_len else low}")


def check_sequences(X, lengths, n_features, name="X", dtype=None):
    """Raise a clear error unless ``X`` is ``(N, L, n_features)`` with ``L`` in ``lengths`` (and of
    ``dtype``, the model's, when given: a TypeError rather than PyTorch's inside the first layer)."""
    expected = " or ".join(f"(N, {n}, {n_features})" for n in lengths)
    check_instance(name, X, torch.Tensor, f"a tensor of shape {expected}")
    if X.dim() != 3 or X.shape[1] not in lengths or X.shape[2] != n_features:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(X.shape)}")
    check_float_dtype(name, X, dtype)
