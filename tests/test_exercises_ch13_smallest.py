"""Chapter 13's exercise 4 asks for the smallest set of layer-0 heads that breaks copying, and checks it."""
import itertools

from stepbystep.exercises import ch13
from stepbystep.interpret import head_scores


def test_the_check_seed_has_one_smallest_set_that_a_cut_off_at_half_misses():
    model, ids = ch13._trained_model()
    needed = ch13._breaking_solution(model, ids)
    scores = head_scores(model, ids)[0][0]  # (4,): layer 0's previous-token scores
    assert len(needed) == 2
    assert min(scores[head].item() for _, head in needed) < 0.5  # a cut-off at 0.5 would miss it
    smallest = [heads for heads in itertools.combinations(range(4), len(needed))
                if ch13._breaks(model, ids, [(0, head) for head in heads])]
    assert len(smallest) == 1  # one right answer, not two
    assert ch13.breaking_heads.check(lambda m, i: needed)


def test_the_best_head_alone_and_a_cut_off_at_half_are_caught(fails_with):
    model, ids = ch13._trained_model()
    scores = head_scores(model, ids)[0][0]
    fails_with(ch13.breaking_heads, lambda m, i: [(0, int(scores.argmax()))], "still copies")
    fails_with(ch13.breaking_heads, lambda m, i: [(0, h) for h in range(4) if scores[h] > 0.5], "still copies")


def test_an_irreducible_set_that_is_not_the_smallest_is_caught(monkeypatch):
    model, ids = ch13._trained_model()
    breaking = [{0, 3}, {1, 2, 3}]  # a made-up model: either set breaks the copying

    def breaks(model, ids, heads):
        return any(needed <= {head for _, head in heads} for needed in breaking)

    monkeypatch.setattr(ch13, "_breaks", breaks)
    message = ch13._check_breaking_with(lambda m, i: [(0, 1), (0, 2), (0, 3)], model, ids)
    assert "another set of fewer heads breaks the copying too" in message and "(0, 3)" not in message
    assert ch13._check_breaking_with(lambda m, i: [(0, 0), (0, 3)], model, ids) is None
    assert "a smaller part of it does too" in ch13._check_breaking_with(lambda m, i: [(0, 0), (0, 1), (0, 3)],
                                                                          model, ids)
