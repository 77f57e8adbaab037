"""Chapter 17's experiments: what each change after Llama's block does, over seeds, against a
control. One module per change (``qk_norm``, ``window``, ``experts``, ``latent``), each with its
study (``python -m stepbystep.experiments.after_llama.<module>`` writes it to ``results/``), a
loader, the claims the chapter makes and a cheap live run; ``recipe`` is the training they share."""
