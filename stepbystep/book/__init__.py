"""Everything that exists only so the code of *Deep Learning with PyTorch Step-by-Step* (Godoy)
runs unchanged: the book's model names, its complete trainer and its checkpoints.

The course imports the trainer core (``stepbystep.StepByStep``) and its models by what they are
(``NarrowMultiHeadAttention``, ``WideMultiHeadAttention``); a reader of the book imports
``from stepbystep.book import StepByStep, MultiHeadedAttention, ...`` and gets the book's classes,
methods, arguments and numbers:

- **Names.** ``MultiHeadAttention`` is ``WideMultiHeadAttention``; ``MultiHeadedAttention``,
  ``DecoderLayer`` and ``DecoderTransf`` are thin subclasses of the course's classes that add the
  book's two steps, ``init_keys(states)`` then ``forward(query, ...)``, where the course passes the
  keys (``key=``, ``memory=``) at each call. Every other name is the course's class itself.
- **Creation order.** To give the book's seeded numbers, these course classes create their
  parameters in the book's order, and a change of that order changes every seeded result:
  ``Attention`` (query, key, value), ``WideMultiHeadAttention`` (``linear_out`` before the heads),
  ``NarrowMultiHeadAttention`` (query, key, value, out), the layers (attentions, feed-forward
  network, wrappers), ``TransformerModel`` (``proj``, ``linear``, ``pe``, ``norm``), ``ViT``
  (head, patch embeddings, CLS token; then the course's learned positions), the chapter-9 models
  of ``models/seq2seq/book_models.py``, and ``build_transformer`` (layers, stacks, model, Xavier).
- **State dicts.** The book saves ``PositionalEncoding``'s table ``pe``; the course rebuilds it,
  so ``load_book_state_dict`` checks and drops it (the book's trainer does the same for the book's
  checkpoints).
"""
from . import models as _models
from .models import *  # noqa: F403  (the book's model names, listed in book/models.py)
from .training import ChannelNormalizer, StepByStep, from_book

__all__ = [*_models.__all__, "ChannelNormalizer", "StepByStep", "from_book"]
