"""The output layer's loss as the frameworks run it: the s*b*V/t tensors of the cross-entropy that are live together
at its peak, the gradient of the log-softmax at the start of the backward pass. docs/sizing.md section 3c has the
derivation; every figure is read from the frameworks' code:

* [PT-CE] PyTorch ``F.cross_entropy`` (aten/src/ATen/native/LossNLL.cpp ``cross_entropy_loss_symint``:
  ``nll_loss_nd(log_softmax(self))``; tools/autograd/derivatives.yaml: ``_log_softmax`` saves its fp32 result for
  the backward, ``_to_copy`` saves no tensor). torchtitan (train.py at eaea6f6, ``loss_fn``:
  ``cross_entropy(pred.flatten(0, 1).float(), ...)``) and Hugging Face Transformers (src/transformers/loss/
  loss_utils.py ``ForCausalLMLoss``: ``logits = logits.float()``) call it on bf16 logits upcast to fp32. In the
  backward, ``_log_softmax_backward_data`` reads the saved log-probabilities (4 bytes), the gradient
  ``nll_loss_backward`` wrote into a zeroed N x V tensor (4) and writes a new one (4): 12 bytes per logit, then
  cast to the bf16 logits' gradient (4 + 2). The forward's peak is lower: bf16 logits 2 + their fp32 copy 4 +
  the log-probabilities 4.
* [PT-LP] PyTorch's ``loss_parallel`` (torch/distributed/tensor/parallel/loss.py), torchtitan's loss with tensor
  parallelism: the backward ``(grad_input + torch.exp(x)) * grad_output`` holds the saved log-probabilities, the
  zeroed gradient, ``exp(x)`` and the sum, 16 bytes per local logit.
* [MC-CE] Megatron-Core ``vocab_parallel_cross_entropy`` and ``fused_vocab_parallel_cross_entropy``
  (megatron/core/tensor_parallel/cross_entropy.py, megatron/core/fusions/fused_cross_entropy.py at d98e8a6): one
  fp32 copy of the bf16 logits, turned into the softmax in place (``-=``, ``torch.exp(out=)``, ``div_``) and saved;
  the backward writes the gradient into it in place (``grad_input = softmax``, ``mul_``) and casts it to bf16:
  4 + 2 bytes per logit, in the forward (bf16 logits and their fp32 copy) as in the backward. Megatron-DeepSpeed
  (megatron/model/gpt_model.py ``post_language_model_processing``: ``cross_entropy(output.float(), labels)``) runs
  the same in-place function on its own fp32 copy.
"""

from __future__ import annotations

from generator.sizing.frameworks import resolve_framework

# bytes per local logit (s*b*V/t) saved from the loss's forward to its backward: the fp32 log-probabilities
# ([PT-CE]) or softmax ([MC-CE]), and the paper's "fp32 logits for the cross-entropy" ([SP] Sec. 4.3)
LOSS_SAVED = 4
PLAIN = 12  # [PT-CE]: saved log-probabilities + their gradient + the fp32 logits' gradient
LOSS_PARALLEL = 16  # [PT-LP]: saved log-probabilities + zeroed gradient + exp + their sum
IN_PLACE = 6  # [MC-CE]: the fp32 softmax that becomes the gradient in place + its bf16 cast


def loss_peak(framework: str, zero_stage: int, tp: int, pp: int, lora: bool) -> tuple[int, str]:
    """Bytes per local logit (s*b*V/t) at the loss's peak, and whose code says so.

    ``framework`` is the setup's (``auto`` resolved by the ZeRO stage). LoRA and QLoRA run on PEFT over Hugging Face
    Transformers (the QLoRA reference code), so their loss is PyTorch's; ``deepspeed`` with tensor or pipeline
    parallelism is Megatron-DeepSpeed's model code (Hugging Face's Trainer runs neither), without them the Trainer's;
    ``zero-paper`` keeps the paper's one fp32 tensor."""
    resolved = resolve_framework(framework, zero_stage)
    if lora:
        return PLAIN, "PyTorch cross_entropy on fp32-upcast logits (PEFT on Hugging Face Transformers)"
    if resolved == "megatron" or (resolved == "deepspeed" and (tp > 1 or pp > 1)):
        who = "Megatron-Core" if resolved == "megatron" else "Megatron-DeepSpeed"
        return IN_PLACE, f"{who}'s vocab-parallel cross-entropy, in place: fp32 softmax + its bf16 gradient"
    if resolved == "deepspeed":
        return PLAIN, "PyTorch cross_entropy on fp32-upcast logits (Hugging Face Trainer on DeepSpeed)"
    if resolved == "fsdp" and tp > 1:
        return LOSS_PARALLEL, "PyTorch loss_parallel (torchtitan with tensor parallelism)"
    if resolved == "fsdp":
        return PLAIN, "PyTorch cross_entropy on fp32-upcast logits (torchtitan)"
    return LOSS_SAVED, "fp32 logits for the cross-entropy [Korthikanti et al. 2022, Sec. 4.3]"
