"""The checks module: wrong type -> TypeError, wrong value -> ValueError, "name must be ..., got ..."."""
import re

import numpy as np
import pytest
import torch

from stepbystep.checks import (
    check_choice,
    check_float_dtype,
    check_fraction,
    check_indices,
    check_instance,
    check_non_negative_int,
    check_positive_int,
    check_positive_number,
    check_tensor,
    check_vectors,
)


def test_check_instance_names_the_expected_and_the_received_types():
    assert check_instance("model", torch.nn.Linear(1, 1), torch.nn.Module) is not None
    with pytest.raises(TypeError, match="model must be of type Module, got str"):
        check_instance("model", "linear", torch.nn.Module)
    with pytest.raises(TypeError, match="x must be of type int or float, got str"):
        check_instance("x", "1", (int, float))
    with pytest.raises(TypeError, match="model must be an nn.Module, got int"):
        check_instance("model", 3, torch.nn.Module, "an nn.Module")


@pytest.mark.parametrize("value", [1, 7, np.int64(3)])
def test_positive_int_accepts_ints_numpy_ones_included(value):
    assert check_positive_int("n", value) == value


@pytest.mark.parametrize("value, error", [(0, ValueError), (-2, ValueError), (1.0, TypeError),
                                          (True, TypeError), ("3", TypeError), (None, TypeError)])
def test_positive_int_refuses_wrong_types_and_values(value, error):
    with pytest.raises(error, match=r"n must be a positive int, got"):
        check_positive_int("n", value)


def test_non_negative_int_allows_zero_only_as_the_lowest():
    assert check_non_negative_int("seed", 0) == 0
    with pytest.raises(ValueError, match="seed must be a non-negative int, got -1"):
        check_non_negative_int("seed", -1)
    with pytest.raises(TypeError, match="seed must be a non-negative int, got float 0.5"):
        check_non_negative_int("seed", 0.5)


@pytest.mark.parametrize("value", [0.1, 3, np.float32(2.5)])
def test_positive_number_accepts_ints_and_floats(value):
    assert check_positive_number("lr", value) == value


@pytest.mark.parametrize("value, error", [(0, ValueError), (-1.5, ValueError), (float("nan"), ValueError),
                                          (float("inf"), ValueError), (True, TypeError), ("0.1", TypeError),
                                          (torch.tensor(0.1), TypeError)])
def test_positive_number_refuses_wrong_types_and_values(value, error):
    with pytest.raises(error, match="lr must be a positive number, got"):
        check_positive_number("lr", value)


def test_positive_number_allows_infinity_only_when_asked():
    assert check_positive_number("norm_type", float("inf"), allow_infinity=True) == float("inf")
    with pytest.raises(ValueError, match="norm_type must be a positive number, got nan"):
        check_positive_number("norm_type", float("nan"), allow_infinity=True)
    with pytest.raises(ValueError, match="norm_type must be a positive number, got -inf"):
        check_positive_number("norm_type", float("-inf"), allow_infinity=True)


def test_positive_number_allows_zero_only_when_asked():
    assert check_positive_number("temperature", 0, allow_zero=True) == 0
    assert check_positive_number("temperature", 0.7, allow_zero=True) == 0.7
    with pytest.raises(ValueError, match="temperature must be a positive number, got 0"):
        check_positive_number("temperature", 0)
    for value in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be 0 or a positive number, got"):
            check_positive_number("temperature", value, allow_zero=True)


def test_fraction_is_open_unless_one_is_allowed():
    assert check_fraction("threshold", 0.5) == 0.5
    assert check_fraction("alpha", 1, allow_one=True) == 1
    for value in (0, 1, 1.5):
        with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\), got"):
            check_fraction("threshold", value)
    with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\], got 0"):
        check_fraction("alpha", 0, allow_one=True)
    with pytest.raises(TypeError, match=r"threshold must be a number in \(0, 1\), got str"):
        check_fraction("threshold", "0.5")


def test_choice_lists_the_allowed_values():
    assert check_choice("mode", "exp", ("exp", "linear")) == "exp"
    with pytest.raises(ValueError, match="mode must be one of 'exp', 'linear', got 'log'"):
        check_choice("mode", "log", ("exp", "linear"))


def test_check_tensor_checks_type_dtype_and_dimensions():
    x = torch.zeros(2, 3)
    assert check_tensor("x", x, ndim=2, dtype=torch.float32) is x
    assert check_tensor("x", x, ndim=(1, 2), dtype=(torch.float32, torch.float64)) is x
    with pytest.raises(TypeError, match="x must be a tensor, got ndarray"):
        check_tensor("x", np.zeros(3))
    with pytest.raises(TypeError, match="x must be a tensor of dtype torch.int64, got torch.float32"):
        check_tensor("x", x, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"x must be a 3-D or 4-D tensor, got shape \(2, 3\)"):
        check_tensor("x", x, ndim=(3, 4))


def test_check_float_dtype_wants_the_models_dtype_except_under_autocast():
    x = torch.zeros(2, dtype=torch.float64)
    assert check_float_dtype("x", x, torch.float64) is x
    assert check_float_dtype("x", x, None) is x  # a model without float weights
    with pytest.raises(TypeError, match=r"x must be a float tensor of the model's dtype torch.float32, "
                                        r"got torch.float64: convert it with x.to\(torch.float32\)"):
        check_float_dtype("x", x, torch.float32)
    with pytest.raises(TypeError, match="got torch.int64"):
        check_float_dtype("x", torch.zeros(2, dtype=torch.long), torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        check_float_dtype("x", x.bfloat16(), torch.float32)  # the layers cast it themselves
        with pytest.raises(TypeError, match="got torch.int64"):
            check_float_dtype("x", torch.zeros(2, dtype=torch.long), torch.float32)


def test_check_indices_wants_integers_in_range_and_names_what_they_are():
    index = torch.tensor([[0, 4], [2, 1]])
    assert check_indices("ids", index, 5, "ids") is index
    assert check_indices("ids", torch.zeros(0, dtype=torch.long), 1) is not None  # nothing to read
    with pytest.raises(ValueError, match=r"ids must hold ids in 0..3, got ids from 0 to 4"):
        check_indices("ids", index, 4, "ids")
    with pytest.raises(ValueError, match=r"rows must hold indices in 0..9, got indices from -1 to 2"):
        check_indices("rows", torch.tensor([2, -1]), 10)
    for wrong in (torch.tensor([0.0, 1.0]), torch.tensor([True]), torch.tensor([1j])):
        with pytest.raises(TypeError, match=f"rows must be an integer tensor of indices, got dtype {wrong.dtype}"):
            check_indices("rows", wrong, 2)
    with pytest.raises(TypeError, match="rows must be a tensor, got list"):
        check_indices("rows", [0, 1], 2)


def test_check_vectors_wants_a_batch_of_sequences_of_the_given_size():
    x = torch.zeros(2, 3, 4)
    assert check_vectors("x", x, 4) is x
    assert check_vectors("x", torch.zeros(2, 0, 4), 4).shape == (2, 0, 4)  # empty sequences pass by default
    with pytest.raises(ValueError, match=r"x must have shape \(N, L, 4\) with L >= 1, got \(2, 0, 4\)"):
        check_vectors("x", torch.zeros(2, 0, 4), 4, min_length=1)
    for shape in ((3, 4), (2, 3, 5), (1, 2, 3, 4)):
        with pytest.raises(ValueError, match=re.escape(f"x must have shape (N, L, 4), got {shape}")):
            check_vectors("x", torch.zeros(shape), 4)
    with pytest.raises(TypeError, match=r"memory must be a tensor \(N, L, 8\), got list"):
        check_vectors("memory", [[0.0] * 8], 8)
