"""Hooks that record what layers output, and the gradients and values of their parameters."""
import functools

import numpy as np

from ..containers import map_structure
from .batches import to_numpy

__all__ = ["Captures", "named_layers"]


def named_layers(model, names):
    """Layer names (one string or a list, as in ``model.named_modules()``) -> ``{name: module}``."""
    names = [names] if isinstance(names, str) else list(names)
    modules = dict(model.named_modules())
    unknown = [name for name in names if name not in modules or name == ""]
    if unknown:
        available = ", ".join(name for name in modules if name) or "none"
        raise ValueError(f"no layer named {unknown} in the model; its layers are: {available}")
    return {name: modules[name] for name in names}


def _append_leaf(recorded, new):
    if isinstance(recorded, np.ndarray) and isinstance(new, np.ndarray):
        return np.concatenate([recorded, new])  # along the batch dimension
    return new  # None stays None; anything else is not batched


def _record_copy(record, tensor):
    """Append a NumPy copy of ``tensor`` (a gradient may be changed in place later)."""
    record.append(tensor.detach().cpu().clone().numpy())


class Captures:
    """Forward and tensor hooks on ``model``'s layers, and what they recorded.

    ``outputs[layer]``: the layer's outputs in eval mode, concatenated over calls.
    ``gradients[layer][parameter]``: one array per backward pass (before any clipping).
    ``parameters[layer][parameter]``: one array per training step, the values it starts from.
    """

    def __init__(self, model):
        self.model = model
        self.outputs = {}
        self.gradients = {}
        self.parameters = {}
        self.handles = {}  # layer name -> the output hook's handle
        self._capture_handles = {"gradients": [], "parameters": []}

    def attach_hooks(self, layers, hook_fn=None):
        """Record the named layers' outputs in eval mode, or register ``hook_fn(module, inputs, outputs)``.

        A layer returning a tuple, named tuple, list or dict is recorded in the same container,
        each tensor concatenated along the batch dimension (``None`` entries kept).
        """
        for name, module in named_layers(self.model, layers).items():
            if name in self.handles:
                self.handles.pop(name).remove()
            self.outputs[name] = None
            self.handles[name] = module.register_forward_hook(hook_fn or functools.partial(self._record_output, name))

    def _record_output(self, name, module, inputs, outputs):
        if self.model.training:
            return
        new = to_numpy(outputs)
        recorded = self.outputs[name]
        self.outputs[name] = new if recorded is None else map_structure(_append_leaf, recorded, new)

    def capture_gradients(self, layers):
        """Record every parameter's gradient of the named layers at every backward pass (starts anew)."""
        layers = named_layers(self.model, layers)
        self._remove_captures("gradients")
        self.gradients = {}
        for name, layer in layers.items():
            self.gradients[name] = {}
            for parameter_name, parameter in layer.named_parameters():
                record = self.gradients[name][parameter_name] = []
                if parameter.requires_grad:
                    handle = parameter.register_hook(functools.partial(_record_copy, record))
                    self._capture_handles["gradients"].append(handle)

    def capture_parameters(self, layers):
        """Record every parameter of the named layers at every training forward pass (starts anew)."""
        layers = named_layers(self.model, layers)
        self._remove_captures("parameters")
        self.parameters = {}
        for name, layer in layers.items():
            records = self.parameters[name] = {parameter_name: [] for parameter_name, _ in layer.named_parameters()}
            hook = functools.partial(self._record_parameters, records)
            self._capture_handles["parameters"].append(layer.register_forward_hook(hook))

    def _record_parameters(self, records, module, inputs, outputs):
        if not self.model.training:
            return
        for parameter_name, parameter in module.named_parameters():
            _record_copy(records[parameter_name], parameter)

    def _remove_captures(self, kind):
        for handle in self._capture_handles[kind]:
            handle.remove()
        self._capture_handles[kind] = []

    def remove_hooks(self):
        """Remove every hook, captures included (what they recorded stays)."""
        for handle in self.handles.values():
            handle.remove()
        self.handles = {}
        for kind in self._capture_handles:
            self._remove_captures(kind)
