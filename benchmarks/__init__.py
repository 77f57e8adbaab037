"""Speed benchmarks of the course, as ratios against PyTorch run side by side (``make bench``)."""
