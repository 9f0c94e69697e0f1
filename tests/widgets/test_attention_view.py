"""AttentionView: the matrix shown is the selected layer's and head's (the
drop-downs switch it), hover names the query, the key and the weight, a
causal mask's zeros stay zeros, the static figure shows every layer and
head, bad input is refused naming the layer and the shapes; and the
weights `TransformerEncoder.forward_with_weights` returns are the ones
NumPy computes from the layers' parameters."""

from __future__ import annotations

import base64
import html

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook import Tensor  # noqa: E402
from burnbook.backend import Autodiff, NdArray  # noqa: E402
from burnbook.nn.attention import MhaInput, MultiHeadAttentionConfig, generate_autoregressive_mask  # noqa: E402
from burnbook.nn.transformer import TransformerEncoderConfig, TransformerEncoderInput  # noqa: E402
from burnbook.widgets import AttentionView  # noqa: E402
from burnbook.widgets.attention import MEAN, STATIC_PANELS  # noqa: E402


def softmax_weights(shape, seed=0, causal=False):
    """Random attention weights of `shape` [..., seq_q, seq_k]: rows sum to 1."""
    scores = np.random.default_rng(seed).normal(size=shape) * 2
    if causal:
        scores = np.where(np.triu(np.ones(shape[-2:], bool), k=1), -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def shown(view):
    heat = view.figure().data[0]
    assert heat.name == "attention" and heat.type == "heatmap"
    return np.asarray(heat.z)


def test_the_drop_downs_switch_to_the_selected_layer_and_head():
    layers = [softmax_weights((2, 3, 4, 5), seed=i) for i in range(3)]   # cross-attention: 4 queries, 5 keys
    view = AttentionView(layers, query_tokens=list("abcd"), key_tokens=["k0", "k1", "k2", "k3", "k4"], batch=1)
    assert view.weights.shape == (3, 3, 4, 5)
    assert (view.layer, view.head) == (0, 0)
    np.testing.assert_array_equal(shown(view), layers[0][1, 0])
    view.layer_select.value = 2              # what the reader's drop-down does
    assert view.layer == 2 and view.head == 0
    np.testing.assert_array_equal(shown(view), layers[2][1, 0])
    view.head_select.value = 1
    np.testing.assert_array_equal(shown(view), layers[2][1, 1])
    np.testing.assert_array_equal(view.matrix(), layers[2][1, 1])
    view.head_select.value = MEAN
    np.testing.assert_allclose(shown(view), layers[2][1].mean(axis=0), rtol=1e-6)
    assert "mean of 3 heads" in view.figure().layout.title.text
    # select() moves the drop-downs too; negative indices count from the end.
    assert view.select(layer=-2, head=-1) is view
    assert (view.layer_select.value, view.head_select.value) == (1, 2)
    np.testing.assert_array_equal(shown(view), layers[1][1, 2])
    assert view.figure().layout.title.text == "attention, layer 1, head 2"
    np.testing.assert_array_equal(view.matrix(0, 1), layers[0][1, 1])
    assert view.summary().startswith("AttentionView: 3 layers x 3 heads, 4 queries x 5 keys, batch item 1; "
                                     "showing layer 1, head 2")


def test_hover_names_the_query_the_key_and_the_weight():
    w = softmax_weights((2, 4, 4))     # [n_heads, seq_q, seq_k], repeated tokens stay apart
    view = AttentionView(w, ["the", "cat", "the", "<end>"])
    heat = view.figure().data[0]
    assert heat.hovertemplate == "%{text}<br>weight %{z:.4f}<extra>layer 0, head 0</extra>"
    assert heat.text[2][3] == "query 2 'the'<br>key 3 '&lt;end&gt;'"
    assert list(heat.x) == [0, 1, 2, 3] and list(heat.y) == [0, 1, 2, 3]
    fig = view.figure()
    assert list(fig.layout.xaxis.ticktext) == ["the", "cat", "the", "&lt;end&gt;"]
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3] and fig.layout.yaxis.autorange == "reversed"
    assert view.pair(2, 3) == ("the", "<end>", pytest.approx(float(w[0, 2, 3])))
    view.select(head=1)
    assert view.pair(0, 1) == ("the", "cat", pytest.approx(float(w[1, 0, 1])))
    # The summary lists each query's strongest key with its weight.
    k = int(np.argmax(w[1, 1]))
    assert f"q1 'cat' -> k{k} {view.key_tokens[k]!r} {w[1, 1, k]:.3f}" in view.summary()


def test_a_causal_masks_zeros_read_as_zero():
    w = softmax_weights((1, 2, 5, 5), causal=True)
    view = AttentionView([w], "abcde")
    z = shown(view)
    upper = np.triu(np.ones((5, 5), bool), k=1)
    assert (z[upper] == 0).all() and np.isfinite(z).all()      # zeros, not gaps
    fig = view.figure()
    assert fig.layout.coloraxis.cmin == 0
    zero_colour = fig.layout.coloraxis.colorscale[0][1]
    assert zero_colour.lower() not in ("#ffffff", "white", "rgb(255,255,255)", fig.layout.plot_bgcolor)
    assert view.pair(0, 4) == ("a", "e", 0.0)


def test_tokens_as_a_string_ids_or_none():
    w = softmax_weights((1, 3, 3))
    assert AttentionView(w, "ab ").key_tokens == ["a", "b", " "]
    assert AttentionView(w, np.array([7, 8, 9])).query_tokens == ["7", "8", "9"]
    plain = AttentionView(w)
    assert plain.query_tokens == plain.key_tokens == ["0", "1", "2"]
    assert list(AttentionView(w, "ab ").figure().layout.xaxis.ticktext) == ["a", "b", "\u2423"]   # a visible space


def test_the_encoders_weights_are_its_attentions():
    """forward_with_weights returns forward's output and, per layer, the
    softmax of the scaled scores NumPy computes from that layer's query and
    key projections, under the causal mask."""
    B = NdArray
    B.seed(1)
    batch, seq, d_model, heads = 2, 6, 8, 2
    enc = TransformerEncoderConfig(d_model, 16, heads, 2, dropout=0.0).init(backend=B)
    x_np = np.random.default_rng(3).normal(size=(batch, seq, d_model)).astype(np.float32)
    x = Tensor[B, 3].from_data(x_np)
    inp = TransformerEncoderInput(x).mask_attn(generate_autoregressive_mask(batch, seq, backend=B))
    out, weights = enc.forward_with_weights(inp)
    np.testing.assert_array_equal(out.to_numpy(), enc.forward(inp).to_numpy())
    assert len(weights) == 2 and all(w.dims() == [batch, heads, seq, seq] for w in weights)
    layer_in = [x_np, enc.layers[0].forward(x, None, inp.attention).to_numpy()]
    for i, layer in enumerate(enc.layers):
        def proj(lin, a):
            return (a @ lin.weight.val().to_numpy() + lin.bias.val().to_numpy()).reshape(
                batch, seq, heads, d_model // heads).transpose(0, 2, 1, 3)
        q, k = proj(layer.mha.query, layer_in[i]), proj(layer.mha.key, layer_in[i])
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_model // heads)
        scores = np.where(np.triu(np.ones((seq, seq), bool), k=1), -1e4, scores)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        np.testing.assert_allclose(weights[i].to_numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    view = AttentionView.from_encoder(enc, inp, "abcdef", batch=1)
    np.testing.assert_array_equal(view.weights, np.stack([w.to_numpy()[1] for w in weights]))
    # On an autodiff backend the encoder runs as valid(): no dropout, the same weights.
    AD = Autodiff[NdArray]
    AD.seed(1)
    train_enc = TransformerEncoderConfig(d_model, 16, heads, 2, dropout=0.5).init(backend=AD)
    AD.seed(1)
    plain = TransformerEncoderConfig(d_model, 16, heads, 2, dropout=0.5).init(backend=AD).valid()
    from_ad = AttentionView.from_encoder(train_enc, Tensor[AD, 3].from_data(x_np))
    np.testing.assert_allclose(from_ad.weights.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(from_ad.weights, AttentionView.from_encoder(plain, x).weights, rtol=1e-6)


def test_an_mha_output_is_read_as_its_weights():
    B = NdArray
    B.seed(2)
    mha = MultiHeadAttentionConfig(8, 4, dropout=0.0).init(backend=B)
    x = Tensor[B, 3].from_data(np.random.default_rng(0).normal(size=(1, 3, 8)).astype(np.float32))
    out = mha.forward(MhaInput.self_attn(x))
    view = AttentionView(out, "xyz")
    assert view.weights.shape == (1, 4, 3, 3)
    np.testing.assert_array_equal(view.weights[0], out.weights.to_numpy()[0])


def test_pytorchs_weights_are_read_too():
    """torch.nn.MultiheadAttention's per-head weights (a tracked tensor)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, 4, 8)
    _, w = mha(x, x, x, average_attn_weights=False)     # [batch, n_heads, seq, seq], requires grad
    assert w.requires_grad
    view = AttentionView([w, w], "abcd")
    np.testing.assert_array_equal(view.matrix(1, 1), w.detach().numpy()[0, 1])


def test_the_static_figure_shows_every_layer_and_head():
    layers = [softmax_weights((1, 3, 4, 4), seed=i, causal=True) for i in range(2)]
    view = AttentionView(layers, "wxyz", title="demo")
    assert view.static_panels() == [(layer, head) for layer in range(2) for head in range(3)]
    fig = view.static_figure()
    heats = [t for t in fig.data if t.type == "heatmap"]
    assert [t.name for t in heats] == [f"layer {layer}, head {head}" for layer in range(2) for head in range(3)]
    for t, (layer, head) in zip(heats, view.static_panels()):
        np.testing.assert_array_equal(np.asarray(t.z), layers[layer][0, head])
    assert fig.layout.title.text == "demo: attention weights, every layer (rows) and head (columns)"
    caption = fig.layout.annotations[-1].text
    assert html.unescape(caption.replace("<br>", "\n")) == view.summary()
    assert caption.startswith("AttentionView: 2 layers x 3 heads") and "q0 &#x27;w&#x27; -&gt; k0" in caption
    # Past STATIC_PANELS panels: each layer's mean of heads.
    many = AttentionView([softmax_weights((STATIC_PANELS + 1, 2, 2))])
    assert many.static_panels() == [(0, MEAN)]
    np.testing.assert_allclose(np.asarray(many.static_figure().data[0].z), many.matrix(0, MEAN), rtol=1e-6)


def test_the_bundle_carries_the_summary_and_no_html():
    view = AttentionView(softmax_weights((1, 2, 3, 3)), "abc")
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == view.summary() and "text/html" not in bundle
    assert "bb-attention-view" in view._dom_classes
    assert view.pane.outputs, "the live figure is in the pane once shown"


def test_the_static_png_is_drawn(real_png):
    from .pngs import png_facts

    view = AttentionView([softmax_weights((1, 2, 5, 5), causal=True)] * 2, "abcde")
    bundle, metadata = view._repr_mimebundle_()
    width, height, ink = png_facts(base64.b64decode(bundle["image/png"]))
    static = view.static_figure()
    assert (width, height) == (static.layout.width, static.layout.height) and ink > 0.1
    assert metadata["image/png"] == {"width": width, "height": height}


def test_bad_input_is_named():
    good = softmax_weights((1, 2, 3, 3))
    with pytest.raises(ValueError, match=r"layer 1's weights \[2, 4, 3, 3\] give \[n_heads, seq_q, seq_k\] = "
                                         r"\[4, 3, 3\], layer 0's give \[2, 3, 3\]"):
        AttentionView([good, softmax_weights((2, 4, 3, 3))])
    with pytest.raises(ValueError, match=r"layer 0's weights have shape \[3, 3\] \(rank 2\); expected "
                                         r"\[batch, n_heads, seq_q, seq_k\]"):
        AttentionView(softmax_weights((3, 3)))
    with pytest.raises(ValueError, match="several layers go in a list"):
        AttentionView(softmax_weights((2, 1, 2, 3, 3)))
    with pytest.raises(IndexError, match=r"batch 2 is out of range: layer 0's weights \[1, 2, 3, 3\].*1 item"):
        AttentionView(good, batch=2)
    with pytest.raises(IndexError, match="no batch dimension, so batch must be 0, got 1"):
        AttentionView(good[0], batch=1)
    with pytest.raises(ValueError, match=r"tokens has 2 labels for 3 query positions"):
        AttentionView(good, ["a", "b"])
    with pytest.raises(ValueError, match=r"key_tokens has 4 labels for 3 key positions"):
        AttentionView(good, key_tokens="abcd")
    bad = good.copy()
    bad[0, 1, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"layer 1's weights \[1, 2, 3, 3\] hold 1 NaN or Inf"):
        AttentionView([good, bad])
    with pytest.raises(ValueError, match=r"negative values .*\(pass the weights, not the scores\)"):
        AttentionView(good - 0.5)
    with pytest.raises(ValueError, match="weights is empty"):
        AttentionView([])
    with pytest.raises(TypeError, match="layer 0's weights holds no numbers"):
        AttentionView([["a", "b"]])
    view = AttentionView([good, good])
    with pytest.raises(IndexError, match=r"layer 2 is out of range; there are 2 layers \(0 to 1\)"):
        view.select(layer=2)
    with pytest.raises(IndexError, match=r"head 5 is out of range; there are 2 heads \(0 to 1, or 'mean'\)"):
        view.select(head=5)
    with pytest.raises(TypeError, match="head must be an integer or 'mean'"):
        view.matrix(0, "max")
    with pytest.raises(TypeError, match="expected a TransformerEncoder"):
        AttentionView.from_encoder(object(), good)
