"""Chapter 16's fourth exercise (the loss scale that keeps shards of unequal size one model) and the number
checkers' unit slips: the solution passes and gives the whole batch's gradient; wrong answers are named."""
import torch

from stepbystep.exercises import ch16
from stepbystep.models.gpt.model import completion_loss
from stepbystep.training.data_parallel import DataParallelRun, build_model, repeat_dataset


def _gradient(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def test_the_solution_makes_the_average_of_unequal_shards_the_whole_batchs_gradient():
    run = DataParallelRun(n_samples=8, seed=4)
    x, y = repeat_dataset(run).tensors  # (8, L) each: every stream has as many tokens
    model = build_model(run)
    whole = _gradient(model, completion_loss(model(x), y))
    for shards in ((3, 5), (2, 2, 4), (1, 1, 1, 5)):
        B, N, start, parts = sum(shards), len(shards), 0, []
        for n in shards:
            loss = completion_loss(model(x[start:start + n]), y[start:start + n])  # this rank's mean
            parts.append(ch16.shard_scale._solution(n, B, N) * _gradient(model, loss))
            start += n
        averaged = torch.stack(parts).mean(0)  # what DDP's all-reduce and division by N leave
        torch.testing.assert_close(averaged, whole, rtol=1e-4, atol=1e-7)
        unscaled = torch.stack([p / ch16.shard_scale._solution(n, B, N) for p, n in zip(parts, shards)]).mean(0)
        assert (unscaled - whole).abs().max() > 1e-4  # the scale matters: without it the average is another gradient
    assert ch16.shard_scale.check(ch16.shard_scale._solution)
    assert ch16.shard_scale.check(lambda n, B, N: torch.tensor(N * n / B))


def test_shard_scale_diagnoses(fails_with):
    fails_with(ch16.shard_scale, lambda n, B, N: 1, "right only when every shard holds B/N terms")
    fails_with(ch16.shard_scale, lambda n, B, N: n / B, "N times too little")
    fails_with(ch16.shard_scale, lambda n, B, N: n, "1/N rather than 1/B")
    fails_with(ch16.shard_scale, lambda n, B, N: B / (N * n), "a rank with fewer terms must count less")
    fails_with(ch16.shard_scale, lambda n, B, N: N / B, "a rank with fewer terms must count less")
    fails_with(ch16.shard_scale, lambda n, B, N: N * n * n / B, "corrects too much")
    fails_with(ch16.shard_scale, lambda n, B, N: N * n // B, "integer division")
    fails_with(ch16.shard_scale, lambda n, B, N: 2 * N * n / B, "2 times what a term")
    fails_with(ch16.shard_scale, lambda n, B, N: "n / B", "expected one number from shard_scale(n, B, N), got str")
    fails_with(ch16.shard_scale, 0.5, "expected a function shard_scale(n, B, N)")


def test_number_checkers_name_unit_slips_and_the_gradient_once(fails_with):
    fails_with(ch16.ring_bytes, 700, "700 looks like a count in MB")
    fails_with(ch16.ring_bytes, 0.7, "0.7 looks like a count in GB")
    fails_with(ch16.ring_bytes, ch16.ring_bytes._solution() / 2**20, "looks like a count in MiB")
    fails_with(ch16.zero_memory, 4.3125, "4.3125 looks like a count in GB")
    fails_with(ch16.zero_memory, ch16.zero_memory._solution() / 2**30, "looks like a count in GiB")
    fails_with(ch16.ring_bytes, ch16.N_PARAMETERS * 4, "the gradient's size once")
    # the fallbacks are the exercise's own, and keep the digits
    assert "share of the gradient each step sends" in repr(ch16.ring_bytes.check(123_456_789))
    message = repr(ch16.zero_memory.check(4_200_000_001))
    assert "4,200,000,001 bytes is too few" in message and "which of them stage 2 divides" in message
    assert "12.5 bytes is too few" in repr(ch16.zero_memory.check(12.5))


def test_accumulate_names_micro_batches_that_never_reach_grad(fails_with):
    def first_only(model, loss_fn, micro_batches):
        x, y = micro_batches[0]
        (loss_fn(model(x), y) / len(micro_batches)).backward()

    def divided_twice(model, loss_fn, micro_batches):
        k = len(micro_batches)
        for x, y in micro_batches:
            (loss_fn(model(x), y) / k / k).backward()

    fails_with(ch16.accumulate, first_only, "the first micro-batch's alone: only some micro-batches reach .grad")
    fails_with(ch16.accumulate, divided_twice, "1/k of the large batch's")
