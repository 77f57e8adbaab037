"""Chapter 12's exercises: the worked solutions pass, typical wrong answers get a useful message
that does not give the answer away."""
import torch
import torch.nn.functional as F

from stepbystep.exercises import ch12


# ----------------------------------------------------------------------------- RMSNorm
def test_rms_norm_solution_passes():
    assert ch12.rms_norm.check(ch12.rms_norm._solution)


def test_rms_norm_layer_norm_is_caught(fails_with):
    def layer_norm(x, weight, eps):
        return F.layer_norm(x, x.shape[-1:], eps=eps) * weight
    fails_with(ch12.rms_norm, layer_norm, "does not centre")


def test_rms_norm_mistakes_are_caught(fails_with):
    def rms(x):
        return x.pow(2).mean(dim=-1, keepdim=True)
    fails_with(ch12.rms_norm, lambda x, w, eps: x / torch.sqrt(rms(x) + eps), "where does weight come in")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / rms(x) * w, "mean square")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / (rms(x).sqrt() + eps) * w, "eps is in the wrong place")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / x.std(dim=-1, keepdim=True) * w, "standard deviation")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / x.std(dim=-1, keepdim=True, unbiased=False) * w,
               "standard deviation")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / rms(x).sqrt() * w, "eps is missing or ignored")
    fails_with(ch12.rms_norm, lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(dim=-1, keepdim=True) + eps) * w,
               "average the squares")
    fails_with(ch12.rms_norm, lambda x, w, eps: x, "differs from RMSNorm")
    fails_with(ch12.rms_norm, lambda x, w, eps: x.mean(), "shape")
    fails_with(ch12.rms_norm, lambda x, w, eps: 1.0, "return a tensor")
    fails_with(ch12.rms_norm, "rms", "expected a function")


def test_rms_norm_message_does_not_give_the_formula():
    message = repr(ch12.rms_norm.check(lambda x, w, eps: x))
    assert "sqrt" not in message and "pow" not in message


# ----------------------------------------------------------------------------- SwiGLU
def test_swiglu_solution_passes():
    assert ch12.swiglu.check(ch12.swiglu._solution)


def test_swiglu_mistakes_are_caught(fails_with):
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.silu(x @ u.T) * (x @ g.T)) @ d.T, "wrong projection")
    fails_with(ch12.swiglu, lambda x, g, u, d: (torch.sigmoid(x @ g.T) * (x @ u.T)) @ d.T, "GLU")
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.relu(x @ g.T) * (x @ u.T)) @ d.T, "ReGLU")
    fails_with(ch12.swiglu, lambda x, g, u, d: F.silu(x @ g.T) @ d.T, "projections is missing")
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.gelu(x @ g.T) * (x @ u.T)) @ d.T, "GEGLU")
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.gelu(x @ g.T, approximate="tanh") * (x @ u.T)) @ d.T, "GEGLU")
    fails_with(ch12.swiglu, lambda x, g, u, d: (F.silu(x @ g) * (x @ u)) @ d, "nn.Linear's layout")
    fails_with(ch12.swiglu, lambda x, g, u, d: F.silu(x @ g.T) * (x @ u.T), "shape")
    fails_with(ch12.swiglu, lambda x, g, u, d: x * 2, "differ from SwiGLU")
    fails_with(ch12.swiglu, lambda x, g, u, d: x @ g, "nn.Linear's layout")


# ----------------------------------------------------------------------------- expand_kv
def test_expand_kv_solution_passes():
    assert ch12.expand_kv.check(ch12.expand_kv._solution)


def test_expand_kv_tiling_is_caught(fails_with):
    message = fails_with(ch12.expand_kv, lambda k, h: k.repeat(1, h // k.shape[1], 1, 1), "wrong order")
    assert "repeat_interleave" not in message.split("Stuck")[0]


def test_expand_kv_mistakes_are_caught(fails_with):
    fails_with(ch12.expand_kv, lambda k, h: k, "must become")
    fails_with(ch12.expand_kv, lambda k, h: k[:, :1].expand(-1, h, -1, -1), "read the wrong key head")
    fails_with(ch12.expand_kv, lambda k, h: k.tolist(), "return a tensor")


# ----------------------------------------------------------------------------- cache size
def test_cache_size_solution_passes():
    assert ch12.cache_size.check(ch12.cache_size._solution())
    assert ch12.cache_size.check(torch.tensor(24.0))


def test_cache_size_mistakes_are_caught(fails_with):
    right = 24.0  # GiB: 2 x 48 x 8 x 128 x 16,384 x 8 x 2 bytes
    fails_with(ch12.cache_size, right * 5, "every query head")
    fails_with(ch12.cache_size, right / 2, "half the cache")
    fails_with(ch12.cache_size, right * 2, "bytes one float16")
    fails_with(ch12.cache_size, right / 8, "one sequence")
    fails_with(ch12.cache_size, right / 48, "one layer")
    fails_with(ch12.cache_size, right * 2 ** 30 / 1e9, "GB")
    fails_with(ch12.cache_size, right * 1024, "MiB")
    fails_with(ch12.cache_size, right * 2 ** 30, "in bytes")
    fails_with(ch12.cache_size, 7.0, "not the cache's size")
    fails_with(ch12.cache_size, "20", "expected one number")


def test_cache_size_messages_do_not_reveal_the_number():
    for wrong in (120.0, 12.0, 7.0):
        assert "24" not in repr(ch12.cache_size.check(wrong)).split("Stuck")[0]


# ----------------------------------------------------------------------------- GeGLU (exercise 2, extended)
def test_geglu_solution_passes():
    assert ch12.geglu.check(ch12.geglu._solution)


def test_geglu_mistakes_are_caught(fails_with):
    tanh_gelu = lambda a: F.gelu(a, approximate="tanh")  # noqa: E731
    fails_with(ch12.geglu, ch12.swiglu._solution, "that is SwiGLU")
    fails_with(ch12.geglu, lambda x, g, u, d: (F.gelu(x @ g.T) * (x @ u.T)) @ d.T, "exact form")
    fails_with(ch12.geglu, lambda x, g, u, d: (tanh_gelu(x @ u.T) * (x @ g.T)) @ d.T, "wrong projection")
    fails_with(ch12.geglu, lambda x, g, u, d: (F.gelu(x @ u.T) * (x @ g.T)) @ d.T, "wrong projection")
    fails_with(ch12.geglu, lambda x, g, u, d: (torch.sigmoid(x @ g.T) * (x @ u.T)) @ d.T, "asks for a GELU")
    fails_with(ch12.geglu, lambda x, g, u, d: (F.relu(x @ g.T) * (x @ u.T)) @ d.T, "asks for a GELU")
    fails_with(ch12.geglu, lambda x, g, u, d: tanh_gelu(x @ g.T) @ d.T, "projections is missing")
    fails_with(ch12.geglu, lambda x, g, u, d: (tanh_gelu(x @ g) * (x @ u)) @ d, "nn.Linear's layout")
    fails_with(ch12.geglu, lambda x, g, u, d: tanh_gelu(x @ g.T) * (x @ u.T), "shape")
    fails_with(ch12.geglu, lambda x, g, u, d: x * 2, "differ from a GELU-gated")
    fails_with(ch12.geglu, lambda x, g, u, d: 1.0, "return a tensor")
    fails_with(ch12.geglu, "geglu", "expected a function")


def test_geglu_messages_do_not_give_the_code(capsys):
    wrong = [ch12.swiglu._solution, lambda x, g, u, d: (F.gelu(x @ g.T) * (x @ u.T)) @ d.T, lambda x, g, u, d: x]
    for answer in wrong:
        message = repr(ch12.geglu.check(answer))
        assert "approximate" not in message and "tanh" not in message and "F.gelu" not in message
    ch12.geglu.hint()
    ch12.geglu.solution()
    printed = capsys.readouterr().out
    assert "approximate" in printed and 'approximate="tanh"' in printed  # the hint names the argument, the solution its value
