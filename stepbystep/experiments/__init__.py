"""Chapter experiments too long for a notebook cell, each tested."""
