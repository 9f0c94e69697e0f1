"""Parity with PyTorch: every nn layer, activation, loss and optimizer of
burnbook against its torch twin with copied weights, in float32 on both
sides, on Autodiff[NdArray] and Autodiff[Taichi] (ids `ndarray`/`taichi`;
`-k taichi` picks the Taichi half, on the arch BURNBOOK_TAICHI_ARCH names).
Each case compares the output, the input gradients and every parameter's
gradient (optimizers: the weights after each of three steps), including
the extremes: activation tails to ±88, logits of ±1e4, probabilities of
exactly 0 and 1, saturated recurrent gates and -inf attention masks.

Covered: burnbook.nn's Linear, Embedding, Conv1d/2d, ConvTranspose1d/2d,
MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, BatchNorm (with its running
statistics), LayerNorm, GroupNorm, Lstm, Gru (so GateController),
MultiHeadAttention, PositionWiseFeedForward, TransformerEncoder (post- and
pre-norm), TransformerDecoder, PositionalEncoding, RmsNorm, RotaryEncoding
(also inside MultiHeadAttention), SwiGlu, the autoregressive cache
(MultiHeadAttention.forward_cache, TransformerEncoder's
forward_autoregressive_inference: each position against the causal
forward, ours and torch's; greedy generation with and without), the activation modules
(Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Silu, Mish, Softplus, Gelu) and
functions (log_sigmoid, hard_sigmoid, softmax, log_softmax), the losses
(CrossEntropyLoss on logits and probabilities with smoothing, weights and
pad tokens; MseLoss; HuberLoss; BinaryCrossEntropyLoss on probabilities and
logits, with weights and smoothing) and burnbook.optim's Sgd (momentum,
Nesterov, weight decay), Adam, AdamW, RmsProp (centered), AdaGrad and both
GradientClipping variants.

Left out, with the reason:
- Dropout's mask: it comes from the backend's generator, which cannot
  reproduce torch's; torch's twin applies the mask ours drew (the scaling
  and the gradient are compared, and the dropped fraction checked).
- quiet_softmax: PyTorch has no such function.
- The learning-rate schedulers (tests/optim/test_lr_scheduler.py compares
  them with torch.optim.lr_scheduler) and GradientsAccumulator, a sum of
  gradients (tests/optim/test_grads.py): no layer or update rule of their own.
"""
