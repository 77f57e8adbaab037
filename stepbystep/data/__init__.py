"""The course's data: generators and datasets for every chapter, each with its own seeded RNG."""
# [squares: chapters 02-06]
# [regression: chapter 01]
