"""The exercise self-check mechanism shared by every chapter."""
from stepbystep.exercises import Exercise
from stepbystep.exercises.exercise import expects_function


def _square_solution(x):
    return x * x


def _square_checker(answer):
    if not callable(answer):
        return f"expected a function, got {type(answer).__name__}"
    if answer(3) != 9:
        return f"square(3) should be 9, your function returned {answer(3)!r}"
    return None


square = Exercise("square a number", _square_checker, "multiply x by itself", _square_solution)


def test_right_answer_passes():
    result = square.check(lambda x: x**2)
    assert result
    assert "correct" in repr(result)


def test_wrong_answer_says_what_without_the_hint():
    result = square.check(lambda x: x + x)
    assert not result
    assert "should be 9" in repr(result) and "returned 6" in repr(result)
    assert "multiply x by itself" not in repr(result)
    assert ".hint()" in repr(result) and ".solution()" in repr(result)


def test_hint_only_on_request(capsys):
    square.hint()
    assert capsys.readouterr().out == "multiply x by itself\n"


def test_error_in_learner_code_is_reported_not_raised():
    def broken(x):
        raise ZeroDivisionError("oops")

    result = square.check(broken)
    assert not result
    assert "ZeroDivisionError: oops" in repr(result)


def test_solution_prints_source(capsys):
    square.solution()
    printed = capsys.readouterr().out
    assert printed.startswith("def _square_solution(x):")
    assert "return x * x" in printed


def test_expects_function_answers_a_non_function_before_the_checker_runs():
    calls = []

    @expects_function("double(x)")
    def check(answer):
        calls.append(answer)
        return None if answer(2) == 4 else "double(2) should be 4"

    assert check(3) == "expected a function double(x), got int"
    assert calls == []
    assert check(lambda x: 2 * x) is None
    assert check(lambda x: x) == "double(2) should be 4"
    assert check.__name__ == "check"
