"""The course's data: generators and datasets for every chapter, each with its own seeded RNG."""
# [squares: chapters 02-06]
from .squares import generate_sequences, square_datasets
# [regression: chapter 01]
from .regression import make_regression_data, regression_grid, true_function
