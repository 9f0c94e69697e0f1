"""Transformer training step (issue 34): a small GPT, one AdamW step.

`gpt_step`: one full training step of a GPT-style decoder-only model on a
batch of token ids `[batch, seq]`: token and learned position embeddings
(added), `layers` pre-norm encoder layers (`norm_first=True`) with a causal
mask, multi-head self-attention and a GELU feed-forward of width
`4 * d_model`, a final LayerNorm, a linear head to `VOCAB` logits,
cross-entropy on every position against the next-token targets
`[batch, seq]`, backward, and an AdamW update of every parameter. No
dropout (0.0), so both frameworks compute the same function.

burnbook builds the model from `burnbook.nn` (`Embedding`,
`TransformerEncoder` with `TransformerEncoderInput.mask_attn` of
`generate_autoregressive_mask`, `LayerNorm`, `Linear`, `CrossEntropyLoss`)
and steps it the way the Learner does: `GradientsParams.from_grads(
loss.backward(), model)`, then `optim.step(lr, model, grads)`. PyTorch runs
`nn.Embedding`, `nn.TransformerEncoder(nn.TransformerEncoderLayer(
activation="gelu", batch_first=True, norm_first=True))` with its causal mask
(`is_causal=True`, so it may take its fused attention), `nn.LayerNorm`,
`nn.Linear`, `F.cross_entropy` and `torch.optim.AdamW`. Both start from the
same seeded weights (Burn's Linear weight `[d_in, d_out]` is PyTorch's
transposed; Burn's separate query/key/value Linears are the three blocks of
PyTorch's `in_proj_weight`; Burn's pre-norm `norm_2` is PyTorch's `norm1`,
see `burnbook/nn/transformer.py`) and train on the same batch, step after step.

The check: before timing, the untrained model's logits `[batch, seq, VOCAB]`
are compared with a NumPy forward pass (float64, exact erf GELU) of the same
weights, so every framework runs the same model.

Threads: `torch` uses all cores and `torch_1t` one; `autodiff` (NdArray) uses
NumPy's OpenBLAS on all cores and `autodiff_1t` on one; `autodiff_fusion`
and `autodiff_fusion_1t` are Autodiff[Fusion[Taichi]] with its BLAS matmuls and
Taichi's kernels on all cores / with BLAS on one thread and every Taichi
kernel run serially on the calling thread (`frameworks.single_thread`).
"""

from __future__ import annotations

import math

import numpy as np

from ..profiles import Profile
from .settle import settle

FAMILY = "transformer"
TITLE = "Transformer training step"
INTRO = (
    "`gpt_step`: one training step of a GPT-style model (token + learned position embeddings, "
    "pre-norm encoder layers with a causal mask and GELU feed-forward of width 4·d, final LayerNorm, "
    "linear head, cross-entropy on every position, AdamW), from the same seeded weights and batch on "
    "every framework; the size reads `d{d_model}-h{heads}-l{layers}-s{seq}-b{batch}`; time per step, "
    "lower is better. `(1 thread)` rows: NumPy's BLAS and PyTorch on one thread for that framework's runs "
    "(and Taichi's kernels run serially). The check compares the untrained model's logits with a "
    "NumPy forward pass."
)

FRAMEWORKS = ("autodiff", "autodiff_fusion", "torch", "autodiff_1t", "autodiff_fusion_1t", "torch_1t")
LEARNING_RATE = 1e-3
EPSILON = 1e-5          # Burn's Adam epsilon (PyTorch's default is 1e-8; set to match)
WEIGHT_DECAY = 1e-2     # AdamW's decoupled decay, the same on both sides
MIN_FLOAT = -1.0e4      # Burn's masked score (PyTorch uses -inf; both give weight 0 here)
LN_EPS = 1e-5

# (d_model, heads, layers, seq, batch, vocab) per profile: issue 34's two sizes.
_SIZES = {
    "full": ((128, 4, 2, 64, 32, 128), (256, 8, 4, 128, 16, 128)),
    "quick": ((128, 4, 2, 64, 32, 128),),
    "smoke": ((16, 2, 1, 8, 2, 11),),
}


def sizes(profile: Profile) -> tuple:
    return _SIZES.get(profile.name, _SIZES["full"])


def size_label(size: tuple) -> str:
    d, h, n, s, b, _ = size
    return f"d{d}-h{h}-l{n}-s{s}-b{b}"


def case_id(size: tuple) -> str:
    return f"{FAMILY}/gpt_step/{size_label(size)}"


def _layer_params(i: int, d: int) -> list:
    """(burnbook path, input name, shape, init) of encoder layer i; init is
    ("uniform", fan_in), ("ones",) or ("zeros",)."""
    p, n = f"encoder.layers.{i}.", f"l{i}_"
    out = []
    for lin in ("query", "key", "value", "output"):
        out += [(p + f"mha.{lin}.weight", n + lin + "_w", (d, d), ("uniform", d)),
                (p + f"mha.{lin}.bias", n + lin + "_b", (d,), ("uniform", d))]
    out += [(p + "pwff.linear_inner.weight", n + "ff1_w", (d, 4 * d), ("uniform", d)),
            (p + "pwff.linear_inner.bias", n + "ff1_b", (4 * d,), ("uniform", d)),
            (p + "pwff.linear_outer.weight", n + "ff2_w", (4 * d, d), ("uniform", 4 * d)),
            (p + "pwff.linear_outer.bias", n + "ff2_b", (d,), ("uniform", 4 * d))]
    for norm in ("norm_1", "norm_2"):
        out += [(p + norm + ".gamma", n + norm + "_g", (d,), ("ones",)),
                (p + norm + ".beta", n + norm + "_b", (d,), ("zeros",))]
    return out


def params(size: tuple) -> list:
    """Every parameter of the model: (burnbook path, input name, shape, init)."""
    d, _, layers, seq, _, vocab = size
    out = [("token.weight", "tok", (vocab, d), ("normal",)), ("position.weight", "pos", (seq, d), ("normal",))]
    for i in range(layers):
        out += _layer_params(i, d)
    out += [("norm.gamma", "lnf_g", (d,), ("ones",)), ("norm.beta", "lnf_b", (d,), ("zeros",)),
            ("head.weight", "head_w", (d, vocab), ("uniform", d)), ("head.bias", "head_b", (vocab,), ("uniform", d))]
    return out


def _inputs(size: tuple):
    d, _, _, seq, batch, vocab = size

    def make(rng):
        # token ids as floats (every input becomes a float tensor); setup makes them ints
        out = {"tokens": rng.integers(0, vocab, (batch, seq)).astype(np.float32),
               "targets": rng.integers(0, vocab, (batch, seq)).astype(np.float32)}
        for _, name, shape, init in params(size):
            if init[0] == "uniform":   # PyTorch's Linear default, uniform(+-1/sqrt(fan_in))
                bound = 1.0 / math.sqrt(init[1])
                value = rng.uniform(-bound, bound, shape)
            elif init[0] == "normal":  # GPT-2's embedding init
                value = rng.normal(0.0, 0.02, shape)
            else:                      # LayerNorm: gamma 1, beta 0, nudged so a swapped norm shows
                value = (1.0 if init[0] == "ones" else 0.0) + rng.uniform(-0.1, 0.1, shape)
            out[name] = value.astype(np.float32)
        return out

    return make


# -- burnbook -------------------------------------------------------------------------------
def _gpt_class():
    """The burnbook model class (made on first use: `burnbook` imports lazily here)."""
    from burnbook import nn
    from burnbook.module import Module

    class Gpt(Module):
        """Token + position embeddings, a pre-norm causal TransformerEncoder,
        a final LayerNorm and a linear head: ids `[batch, seq]` -> logits
        `[batch, seq, vocab]`."""

        token: nn.Embedding
        position: nn.Embedding
        encoder: nn.TransformerEncoder
        norm: nn.LayerNorm
        head: nn.Linear

        def forward(self, ids, positions, causal):
            x = self.token.forward(ids) + self.position.forward(positions)
            x = self.encoder.forward(nn.TransformerEncoderInput.new(x).mask_attn(causal))
            return self.head.forward(self.norm.forward(x))

    return Gpt


def build_burnbook(size: tuple, backend, device, values: dict):
    """The burnbook model of `size` on `backend`, holding `values` (path -> array)."""
    from burnbook import nn

    d, heads, layers, seq, _, vocab = size
    gpt = _gpt_class()(
        token=nn.EmbeddingConfig(vocab, d).init(device, backend),
        position=nn.EmbeddingConfig(seq, d).init(device, backend),
        encoder=nn.TransformerEncoderConfig(d, 4 * d, heads, layers, dropout=0.0, norm_first=True)
        .init(device, backend),
        norm=nn.LayerNormConfig(d, epsilon=LN_EPS).init(device, backend),
        head=nn.LinearConfig(d, vocab).init(device, backend),
    )
    return gpt.map_params(lambda path, p: p.with_value(values[path]))


def _burnbook(size: tuple):
    def setup(fw, ns):
        from burnbook import Int, Tensor, nn
        from burnbook.optim import AdamWConfig, GradientsParams

        backend, device = fw.backend, fw.device
        _, _, _, seq, batch, vocab = size
        model0 = build_burnbook(size, backend, device, {path: ns[name] for path, name, _, _ in params(size)})
        ids_np = np.rint(ns["tokens"].to_numpy()).astype(np.int64)
        ids = Tensor[backend, 2, Int].from_data(ids_np, device)
        positions = Tensor[backend, 2, Int].from_data(np.broadcast_to(np.arange(seq), (batch, seq)).copy(), device)
        targets = Tensor[backend, 1, Int].from_data(
            np.rint(ns["targets"].to_numpy()).astype(np.int64).reshape(batch * seq), device)
        causal = nn.generate_autoregressive_mask(batch, seq, device, backend)
        loss_fn = nn.CrossEntropyLoss.new(None)
        optim = AdamWConfig(epsilon=EPSILON, weight_decay=WEIGHT_DECAY).init()
        state = {"model": model0}

        def step():
            model = state["model"]
            logits = model.forward(ids, positions, causal).reshape([batch * seq, vocab])
            loss = loss_fn.forward(logits, targets)
            grads = GradientsParams.from_grads(loss.backward(), model)
            state["model"] = optim.step(LEARNING_RATE, model, grads)
            return loss

        def probe():
            inner = backend.is_autodiff
            valid = model0.valid()
            arg = (lambda t: t.inner()) if inner else (lambda t: t)
            return valid.forward(arg(ids), arg(positions), arg(causal))

        ns["step"], ns["probe"] = step, probe
        settle(fw, step)

    return setup


# -- PyTorch --------------------------------------------------------------------------------
def build_torch(size: tuple, torch, ns: dict):
    """The PyTorch twin of `build_burnbook`, holding the same weights (`ns`: name -> tensor)."""
    tnn = torch.nn
    d, heads, layers, seq, _, vocab = size

    class Gpt(tnn.Module):
        def __init__(self):
            super().__init__()
            self.token = tnn.Embedding(vocab, d)
            self.position = tnn.Embedding(seq, d)
            layer = tnn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                                layer_norm_eps=LN_EPS, batch_first=True, norm_first=True)
            self.encoder = tnn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = tnn.LayerNorm(d, eps=LN_EPS)
            self.head = tnn.Linear(d, vocab)
            self.register_buffer("mask", tnn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1])
            x = self.token(ids) + self.position(positions)[None]
            x = self.encoder(x, mask=self.mask, is_causal=True)
            return self.head(self.norm(x))

    model = Gpt()
    with torch.no_grad():
        model.token.weight.copy_(ns["tok"])
        model.position.weight.copy_(ns["pos"])
        for i, layer in enumerate(model.encoder.layers):
            n = f"l{i}_"
            attn = layer.self_attn
            attn.in_proj_weight.copy_(torch.cat([ns[n + k + "_w"].T for k in ("query", "key", "value")]))
            attn.in_proj_bias.copy_(torch.cat([ns[n + k + "_b"] for k in ("query", "key", "value")]))
            attn.out_proj.weight.copy_(ns[n + "output_w"].T)
            attn.out_proj.bias.copy_(ns[n + "output_b"])
            layer.linear1.weight.copy_(ns[n + "ff1_w"].T)
            layer.linear1.bias.copy_(ns[n + "ff1_b"])
            layer.linear2.weight.copy_(ns[n + "ff2_w"].T)
            layer.linear2.bias.copy_(ns[n + "ff2_b"])
            # Burn's pre-norm encoder: norm_2 before attention (PyTorch's norm1), norm_1 before the FFN.
            layer.norm1.weight.copy_(ns[n + "norm_2_g"])
            layer.norm1.bias.copy_(ns[n + "norm_2_b"])
            layer.norm2.weight.copy_(ns[n + "norm_1_g"])
            layer.norm2.bias.copy_(ns[n + "norm_1_b"])
        model.norm.weight.copy_(ns["lnf_g"])
        model.norm.bias.copy_(ns["lnf_b"])
        model.head.weight.copy_(ns["head_w"].T)
        model.head.bias.copy_(ns["head_b"])
    return model


def _torch(size: tuple):
    def setup(fw, ns):
        import copy

        torch = ns["torch"]
        _, _, _, seq, batch, vocab = size
        model = build_torch(size, torch, ns)
        model0 = copy.deepcopy(model).eval()
        model.train()
        ids, targets = ns["tokens"].round().long(), ns["targets"].round().long().reshape(batch * seq)
        optim = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, eps=EPSILON, weight_decay=WEIGHT_DECAY)
        cross_entropy = torch.nn.functional.cross_entropy

        def step():
            optim.zero_grad(set_to_none=True)
            loss = cross_entropy(model(ids).reshape(batch * seq, vocab), targets)
            loss.backward()
            optim.step()
            return loss

        def probe():
            with torch.no_grad():
                return model0(ids)

        ns["step"], ns["probe"] = step, probe
        settle(fw, step)

    return setup


# -- NumPy (the reference) ------------------------------------------------------------------
def numpy_logits(size: tuple, ns: dict) -> np.ndarray:
    """The model's logits `[batch, seq, vocab]` in float64 NumPy (exact erf GELU)."""
    from scipy.special import erf

    d, heads, layers, seq, batch, _ = size
    dk = d // heads
    w = {k: np.asarray(v, np.float64) for k, v in ns.items() if isinstance(v, np.ndarray)}

    def norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LN_EPS) * g + b

    def heads_of(x):
        return x.reshape(batch, seq, heads, dk).transpose(0, 2, 1, 3)

    ids = np.rint(w["tokens"]).astype(np.int64)
    x = w["tok"][ids] + w["pos"][np.arange(seq)][None]
    causal = np.triu(np.ones((seq, seq), bool), k=1)
    for i in range(layers):
        n = f"l{i}_"
        h = norm(x, w[n + "norm_2_g"], w[n + "norm_2_b"])
        q, k, v = (heads_of(h @ w[n + p + "_w"] + w[n + p + "_b"]) for p in ("query", "key", "value"))
        scores = np.where(causal, MIN_FLOAT, q @ k.transpose(0, 1, 3, 2) / math.sqrt(dk))
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch, seq, d)
        x = x + context @ w[n + "output_w"] + w[n + "output_b"]
        h = norm(x, w[n + "norm_1_g"], w[n + "norm_1_b"])
        h = h @ w[n + "ff1_w"] + w[n + "ff1_b"]
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        x = x + h @ w[n + "ff2_w"] + w[n + "ff2_b"]
    return norm(x, w["lnf_g"], w["lnf_b"]) @ w["head_w"] + w["head_b"]


def _numpy(size: tuple):
    def setup(fw, ns):
        ns["probe"] = lambda: numpy_logits(size, ns)

    return setup


def cases(profile: Profile) -> list:
    from ..measurement import Case

    return [
        Case(FAMILY, "gpt_step", size_label(size), _inputs(size), {"*": "step()"}, ratio="time",
             setup={"numpy": _numpy(size), "burnbook": _burnbook(size), "torch": _torch(size)},
             check="probe()", tol=1e-4, frameworks=FRAMEWORKS)
        for size in sizes(profile)
    ]


def bar_specs(profile: Profile) -> list:
    """(title, case id, framework, reference) of issue 34's bars: each
    burnbook backend at most 1.0x PyTorch's step time at the same threads."""
    out = []
    for size in sizes(profile):
        for fw, name in (("autodiff", "Autodiff[NdArray]"), ("autodiff_fusion", "Autodiff[Fusion[Taichi]]")):
            for suffix, threads in (("", "{torch threads} threads"), ("_1t", "1 thread")):
                out.append((f"{name} GPT training step ({size_label(size)}, AdamW), vs PyTorch, {threads} each",
                            case_id(size), fw + suffix, "torch" + suffix))
    return out
