"""expect: a ✓ line with the claim's words only, or an error naming the claim and what was seen."""
import pytest
import torch

from stepbystep.expect import Claim, ClaimFailed, expect, expect_all, expect_close


def test_a_holding_claim_prints_only_its_words(capsys):
    expect(2 + 2 == 4, "two and two make four", got=4)
    assert capsys.readouterr().out == "✓ two and two make four\n"


def test_a_failing_claim_names_the_claim_and_what_was_seen(capsys):
    with pytest.raises(ClaimFailed, match=r"^✗ expected the loss below 0\.1, got 0\.3$"):
        expect(0.3 < 0.1, "the loss below 0.1", got=0.1 + 0.2)
    assert capsys.readouterr().out == ""


def test_the_failure_is_an_assertion_error_without_got_when_none_is_given():
    with pytest.raises(AssertionError) as info:
        expect(False, "a causal mask")
    assert str(info.value) == "✗ expected a causal mask"


@pytest.mark.parametrize("got, shown", [
    (0.1 + 0.2, "0.3"), (1 / 3, "0.3333"), (12345.678, "1.235e+04"), (7, "7"),
    (torch.tensor(0.25), "0.25"), (torch.tensor([1.0, 2.5]), "[1, 2.5]"),
    ([0.1 + 0.2, 2], "[0.3, 2]"), ((1, 0.5), "(1, 0.5)"), ("8/8", "8/8"),
])
def test_seen_values_are_shown_without_float_noise(got, shown):
    with pytest.raises(ClaimFailed) as info:
        expect(False, "c", got=got)
    assert str(info.value) == f"✗ expected c, got {shown}"


def test_a_one_element_tensor_is_a_condition_and_a_longer_one_is_refused(capsys):
    expect(torch.tensor(True), "a tensor truth value")
    assert capsys.readouterr().out == "✓ a tensor truth value\n"
    with pytest.raises(TypeError, match=r"single truth value, got a tensor of shape \(2,\)"):
        expect(torch.tensor([True, False]), "ambiguous")


def test_expect_close_uses_the_tolerance_and_reports_the_largest_gap(capsys):
    expect_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 5e-6]), "the same values", atol=1e-5)
    expect_close(0.1696, 0.17, "close to 0.17", atol=1e-3)
    assert capsys.readouterr().out == "✓ the same values\n✓ close to 0.17\n"
    with pytest.raises(ClaimFailed, match=r"^✗ expected the same values, got a difference of 0\.002$"):
        expect_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.002]), "the same values", atol=1e-3)
    with pytest.raises(ClaimFailed):  # rtol counts relative to the expected value
        expect_close(110.0, 100.0, "within 5%", atol=0, rtol=0.05)
    expect_close(104.0, 100.0, "within 5%", atol=0, rtol=0.05)


def test_expect_close_takes_tensors_that_require_grad():
    weight = torch.ones(3, requires_grad=True)
    expect_close(weight * 2, 2.0, "doubled", atol=0)


def test_expect_all_prints_every_holding_claim_and_lists_every_failure(capsys):
    expect_all([Claim(True, "first"), Claim(True, "second", got=1.5)])
    assert capsys.readouterr().out == "✓ first\n✓ second\n"
    with pytest.raises(ClaimFailed) as info:
        expect_all([Claim(False, "first", got=0.5), Claim(True, "second"), Claim(False, "third")])
    assert str(info.value) == "✗ expected first, got 0.5\n✗ expected third"
    assert capsys.readouterr().out == "✓ second\n"


def test_expect_all_refuses_what_is_not_a_claim():
    with pytest.raises(TypeError, match="claims must be Claim objects, got tuple"):
        expect_all([(True, "a tuple")])
