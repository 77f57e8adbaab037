"""Chapter 16's checkers accept the solutions and diagnose typical wrong answers."""
from stepbystep.exercises import ch16
from stepbystep.training.parallel_costs import ring_all_reduce_bytes, training_memory


def test_solutions_pass_and_agree_with_the_package():
    assert ch16.ring_bytes.check(ch16.ring_bytes._solution())
    assert ch16.zero_memory.check(ch16.zero_memory._solution())
    assert ch16.accumulate.check(ch16.accumulate._solution)
    assert ch16.ring_bytes._solution() == ring_all_reduce_bytes(ch16.N_PARAMETERS, ch16.N_PROCESSES)
    assert ch16.zero_memory._solution() == training_memory(ch16.PSI, ch16.GPUS, "zero2")["total"]


def test_ring_bytes_diagnoses(fails_with):
    n, gradient = ch16.N_PROCESSES, ch16.N_PARAMETERS * 4
    fails_with(ch16.ring_bytes, (n - 1) * gradient / n, "one phase of the ring")
    fails_with(ch16.ring_bytes, 2 * gradient, "1/N share of the gradient")
    fails_with(ch16.ring_bytes, 2 * n * gradient / n, "count the steps of one phase again")  # N steps of 1/N
    fails_with(ch16.ring_bytes, 8 * ch16.ring_bytes._solution(), "not bits")  # N = 8: bits look like N processes
    fails_with(ch16.ring_bytes, 8 * ch16.ring_bytes._solution(), "all the processes send together")
    fails_with(ch16.ring_bytes, ch16.ring_bytes._solution() / 4, "counts numbers, not bytes")
    fails_with(ch16.ring_bytes, 2 * gradient * 1.5, "too many")
    fails_with(ch16.ring_bytes, "700 MB", "expected one number of bytes")


def test_zero_memory_diagnoses(fails_with):
    psi, gpus = ch16.PSI, ch16.GPUS
    fails_with(ch16.zero_memory, 16 * psi, "plain data parallelism")
    fails_with(ch16.zero_memory, training_memory(psi, gpus, "zero1")["total"], "that is stage 1")
    fails_with(ch16.zero_memory, training_memory(psi, gpus, "zero3")["total"], "that is stage 3")
    fails_with(ch16.zero_memory, 4 * psi + 8 * psi / gpus, "12 bytes per parameter")


def test_accumulate_diagnoses(fails_with):
    def summed(model, loss_fn, micro_batches):
        for x, y in micro_batches:
            loss_fn(model(x), y).backward()

    def zeroed(model, loss_fn, micro_batches):
        for x, y in micro_batches:
            model.zero_grad()
            (loss_fn(model(x), y) / len(micro_batches)).backward()

    def nothing(model, loss_fn, micro_batches):
        pass

    fails_with(ch16.accumulate, summed, "k times the large batch's")
    fails_with(ch16.accumulate, zeroed, "the last micro-batch's alone")
    fails_with(ch16.accumulate, nothing, "call backward")
    fails_with(ch16.accumulate, 3, "expected a function accumulate(model, loss_fn, micro_batches)")


def test_accumulate_names_a_gradient_off_by_a_constant_factor_without_the_factor_to_use():
    def by_two(model, loss_fn, micro_batches):
        for x, y in micro_batches:
            (loss_fn(model(x), y) / 2).backward()  # right for k = 2 only

    message = repr(ch16.accumulate.check(by_two))
    assert "with k = 4 your gradient points the right way but is 2 times the large batch's" in message


def test_shard_scale_shows_a_near_miss_with_enough_digits():
    message = repr(ch16.shard_scale.check(lambda n, B, N: 1.0001 * N * n / B))
    assert "1.0001 times what a term of the whole batch's mean does" in message
