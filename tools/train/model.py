# A minimal llama-architecture decoder in PyTorch, laid out so that it exports 1:1 to llama.cpp's GGUF `llama` arch:
# RMSNorm, SwiGLU FFN, grouped-query attention (query head h uses KV head h // (n_head // n_head_kv)), untied output,
# and RoPE on ADJACENT pairs (x[2i], x[2i+1]) -- ggml's "normal" rope mode -- so no q/k permutation is needed.
import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class Config:
    name: str = "target"
    n_vocab: int = 2048
    n_ctx: int = 256          # tokens; trained and exported context length
    n_embd: int = 320
    n_layer: int = 8
    n_head: int = 8
    n_head_kv: int = 2
    n_ff: int = 864
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


# The family: a memory-bound target (over 64 MiB in BF16), the previous 10 M target as the mid-level draft and the
# 1.3 M small draft. All three share the tokenizer and a 1024-token context.
CONFIGS = {
    "target": Config(name="target", n_ctx=1024, n_embd=512, n_layer=11, n_head=8, n_head_kv=4, n_ff=1536),
    "mid": Config(name="mid", n_ctx=1024, n_embd=320, n_layer=8, n_head=8, n_head_kv=2, n_ff=864),
    "draft": Config(name="draft", n_ctx=1024, n_embd=128, n_layer=4, n_head=4, n_head_kv=4, n_ff=352),
}


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n_pos):
    """cos/sin of shape (n_pos, head_dim/2): angle = pos * base^(-2i/head_dim) for pair i."""
    inv = cfg.rope_base ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    """x: (B, H, T, D); rotates (x[..., 2i], x[..., 2i+1]) by the angle of pair i."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    return out.flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.n_embd, cfg.head_dim
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        self.wq = nn.Linear(d, cfg.n_head * hd, bias=False)
        self.wk = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.wv = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.wo = nn.Linear(cfg.n_head * hd, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.norm_eps)
        self.w_gate = nn.Linear(d, cfg.n_ff, bias=False)
        self.w_up = nn.Linear(d, cfg.n_ff, bias=False)
        self.w_down = nn.Linear(cfg.n_ff, d, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg = self.cfg
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, cfg.n_head, cfg.head_dim).transpose(1, 2)
        k = self.wk(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = cfg.n_head // cfg.n_head_kv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if x.is_cuda:  # GPU training (distill.py): fused causal attention; the CPU path stays as the files were made
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(cfg.head_dim))
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = att @ v
        y = y.transpose(1, 2).reshape(B, T, cfg.n_head * cfg.head_dim)
        x = x + self.wo(y)
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.n_vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.output = nn.Linear(cfg.n_embd, cfg.n_vocab, bias=False)
        cos, sin = rope_tables(cfg, cfg.n_ctx)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # GPT-2 style scaled init of the residual projections
            for w in (b.wo.weight, b.w_down.weight):
                nn.init.normal_(w, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.cfg.n_ctx:
            raise ValueError("sequence longer than n_ctx")
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=idx.device), 1)
        x = self.tok_embd(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.output(self.norm(x))

    def n_params(self):
        return sum(p.numel() for p in self.parameters())
