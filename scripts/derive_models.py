#!/usr/bin/env python3
"""Writes examples/models/llama_dense.json and examples/models/deepseek_v3.json.

Every number is derived from the models' public configurations (FLOPs and bytes) by the
formulas documented in docs/planning.md ("Where the example numbers come from"); nothing is
measured or guessed per layer. Run from the repository root: python3 scripts/derive_models.py
"""
import json
import pathlib

# --- Hardware and training assumptions (docs/planning.md) -------------------------------------
PEAK = 989.4e12        # H100 SXM dense BF16 FLOP/s (NVIDIA H100 datasheet)
EFFICIENCY = 0.40      # assumed fraction of the peak a layer's kernels reach
CAPACITY = 72.0        # GB per GPU: 80 GB HBM3 less 10% (CUDA context, workspace, fragmentation)
LINK_GBS = 50.0        # GB/s per GPU: one 400 Gb/s InfiniBand NDR NIC per GPU between nodes
LATENCY_MS = 0.01      # 10 microseconds per message
BF16 = 2               # bytes per activation element


def param_bytes(dp):
    """Bytes per parameter: bf16 weight (2) + fp32 main gradient (4) + fp32 master weight and
    Adam m, v (12) sharded over `dp` data-parallel replicas (distributed optimizer)."""
    return 2 + 4 + 12 / dp


def layer(kind, name, count, mm_params, attn_flops, act_bytes_per_token, params, send, env,
          modules=None, notes=None):
    t, g = env["tokens"], env["gpus"]
    f = 2 * t * mm_params + attn_flops           # forward: 2 FLOPs per weight per token
    i = 2 * t * mm_params + 2 * attn_flops       # input gradient: matmuls again, attention x2
    w = 2 * t * mm_params                        # weight gradient: matmuls only
    to_ms = 1e3 / (g * PEAK * EFFICIENCY)
    out = {"kind": kind, "name": name}
    if count != 1:
        out["count"] = count
    out.update({
        "F": round(f * to_ms, 4), "I": round(i * to_ms, 4), "W": round(w * to_ms, 4),
        "activation": round(act_bytes_per_token * t / g / 1e9, 5),
        "parameters": round(params * param_bytes(env["dp"]) / g / 1e9, 5),
        "send": round(send, 4),
    })
    if modules:
        out["modules"] = modules
    if notes:
        out["notes"] = notes
    return out


def attention_flops(b, s, heads, d_qk, d_v):
    """Causal self-attention scores and weighted sum, forward: QK^T and AV over half the
    s x s matrix: b * heads * s^2 * (d_qk + d_v)."""
    return b * heads * s * s * (d_qk + d_v)


def swiglu_act(h, f):
    # norm input, fc input, gate and up outputs, down-projection input (bf16)
    return BF16 * (2 * h + 3 * f)


def llama():
    # Llama 3 70B, meta-llama/Meta-Llama-3-70B config.json
    h, f, n, heads, kv, d, vocab = 8192, 28672, 80, 64, 8, 128, 128256
    b, s = 1, 8192
    env = {"tokens": b * s, "gpus": 8, "dp": 8}
    send_mb = b * s * h * BF16 / env["gpus"] / 1e6
    attn_params = h * heads * d + 2 * h * kv * d + heads * d * h
    mlp_params = 3 * h * f
    attn_act = BF16 * (2 * h + heads * d + kv * 2 * d + heads * d)  # norm in, QKV in, Q K V, O
    dec_act = attn_act + swiglu_act(h, f)
    layers = [
        layer("embedding", "embedding", 1, 0, 0, 0, vocab * h, send_mb, env),
        layer("decoder", "decoder", n, attn_params + mlp_params,
              attention_flops(b, s, heads, d, d), dec_act, attn_params + mlp_params + 2 * h,
              send_mb, env),
        layer("loss", "norm+head+loss", 1, h * vocab, 0, BF16 * 2 * h + 4 * vocab, h * vocab + h,
              0, env),
    ]
    return {
        "name": "Llama 3 70B (TP 8, sequence 8192, microbatch 1)",
        "notes": "Derived by scripts/derive_models.py with the formulas of docs/planning.md "
                 "from meta-llama/Meta-Llama-3-70B config.json; H100 SXM 989.4 TFLOP/s BF16 at "
                 "40%, 8 GPUs per stage, distributed optimizer over 8 replicas.",
        "memory_capacity": CAPACITY, "p2p_latency": LATENCY_MS, "p2p_bandwidth": LINK_GBS,
        "layers": layers,
    }


def deepseek():
    # DeepSeek-V3, deepseek-ai/DeepSeek-V3 config.json
    h, f_dense, f_e, n, dense = 7168, 18432, 2048, 61, 3
    routed, shared, top_k = 256, 1, 8
    heads, q_lora, kv_lora, d_nope, d_rope, d_v, vocab = 128, 1536, 512, 128, 64, 128, 129280
    b, s = 8, 4096
    env = {"tokens": b * s, "gpus": 32, "dp": 8}
    send_mb = b * s * h * BF16 / env["gpus"] / 1e6
    d_qk = d_nope + d_rope
    mla_params = (h * q_lora + q_lora * heads * d_qk + h * (kv_lora + d_rope)
                  + kv_lora * heads * (d_nope + d_v) + heads * d_v * h)
    mla_norms = q_lora + kv_lora + 2 * h
    mla_act = BF16 * (2 * h + q_lora + kv_lora + d_rope + heads * d_qk * 2 + heads * d_v * 2)
    attn = attention_flops(b, s, heads, d_qk, d_v)
    dense_params = 3 * h * f_dense
    moe_active = (top_k + shared) * 3 * h * f_e + routed * h
    moe_params = (routed + shared) * 3 * h * f_e + routed * h
    moe_act = BF16 * (2 * h + top_k * (h + 3 * f_e) + shared * 3 * f_e) + 4 * routed
    head_act = BF16 * 2 * h + 4 * vocab
    mtp_mm = 2 * h * h + mla_params + moe_active + h * vocab
    mtp_params = 2 * h * h + mla_params + mla_norms + moe_params + 2 * h * vocab + 3 * h
    layers = [
        layer("embedding", "embedding", 1, 0, 0, 0, vocab * h, send_mb, env),
        layer("decoder", "dense", dense, mla_params + dense_params, attn,
              mla_act + swiglu_act(h, f_dense), mla_params + mla_norms + dense_params, send_mb,
              env),
        layer("decoder", "moe", n - dense, mla_params + moe_active, attn, mla_act + moe_act,
              mla_params + mla_norms + moe_params, send_mb, env),
        layer("mtp", "mtp", 1, mtp_mm, attn,
              BF16 * 2 * 2 * h + mla_act + moe_act + head_act, mtp_params, send_mb, env,
              notes="projection 2h->h, one MoE transformer layer, and its own copies of the "
                    "embedding and output head"),
        layer("loss", "norm+head+loss", 1, h * vocab, 0, head_act, h * vocab + h, 0, env),
    ]
    return {
        "name": "DeepSeek-V3 (32 GPUs per stage, sequence 4096, microbatch 8)",
        "notes": "Derived by scripts/derive_models.py with the formulas of docs/planning.md "
                 "from deepseek-ai/DeepSeek-V3 config.json; H100 SXM 989.4 TFLOP/s BF16 at "
                 "40%, 32 GPUs per stage, distributed optimizer over 8 replicas; MoE "
                 "all-to-all time is not modelled.",
        "memory_capacity": CAPACITY, "p2p_latency": LATENCY_MS, "p2p_bandwidth": LINK_GBS,
        "layers": layers,
    }


def main():
    out = pathlib.Path("examples/models")
    out.mkdir(parents=True, exist_ok=True)
    for name, model in (("llama_dense.json", llama()), ("deepseek_v3.json", deepseek())):
        (out / name).write_text(json.dumps(model, indent=2) + "\n")
        print("wrote", out / name)


if __name__ == "__main__":
    main()
