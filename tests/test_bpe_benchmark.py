"""A toy-sized run of chapter 15's BPE benchmark (never timed here) and its table."""
import pytest

from benchmarks import bpe


@pytest.mark.system  # a toy-sized real run
def test_bpe_benchmark_trains_both_to_the_same_size():
    (row,) = bpe.run(quick=True)
    assert row["ours_s"] > 0 and row["reference_s"] > 0
    assert row["ratio"] == pytest.approx(row["ours_s"] / row["reference_s"])
    assert row["met"] == (row["ours_s"] <= bpe.GOAL_SECONDS)
    assert row["case"].startswith(f"{bpe.QUICK_N_BYTES:,} bytes of Shakespeare to {bpe.QUICK_VOCAB_SIZE} ids")


def test_the_benchmark_reads_the_same_first_bytes_every_time():
    text = bpe.corpus(5_000)
    assert len(text.encode("utf-8")) <= 5_000 and text == bpe.corpus(5_000)
