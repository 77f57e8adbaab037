"""The course's live widgets.

Each widget is a function that builds its controls and an output area, wires the callbacks and
returns the container; the computation behind it is a plain function that tests call directly.
Figures are redrawn in place (one figure per widget, cleared and drawn again), so moving a
slider never stacks up figures or flickers.
"""
# [widget: chapter 01]
# [widget: chapter 02]
# [widget: chapter 03]
