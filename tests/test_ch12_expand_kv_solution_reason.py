"""Chapter 12's exercise 3 asks why tiled key heads give a converted model different logits: the
solution a learner can print gives the reason, and the reason it gives is what tiling does."""
import torch

from stepbystep.exercises import ch12


def test_the_printed_solution_says_why_tiling_changes_the_logits(capsys):
    ch12.expand_kv.solution()
    printed = capsys.readouterr().out
    assert "j % n_kv_heads" in printed and "j // groups" in printed
    assert "from_transformers" in printed and "different logits" in printed


def test_tiling_gives_query_head_j_key_head_j_mod_n_kv_and_the_solution_j_div_groups():
    n_kv_heads, n_heads = 2, 8
    groups = n_heads // n_kv_heads
    k = torch.arange(n_kv_heads).float().view(1, n_kv_heads, 1, 1)  # each key head holds its own index
    tiled = k.repeat(1, groups, 1, 1).flatten().tolist()
    grouped = ch12.expand_kv._solution(k, n_heads).flatten().tolist()
    assert tiled == [j % n_kv_heads for j in range(n_heads)]
    assert grouped == [j // groups for j in range(n_heads)]
    assert tiled != grouped  # some query heads read another group's keys
