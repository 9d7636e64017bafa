# Pure numpy reference forward pass of a GGUF `llama` model as llama.cpp computes it (F16 weights widened to F32,
# RMSNorm, adjacent-pair RoPE = ggml normal mode, GQA with query head h -> KV head h // (n_head / n_head_kv),
# SwiGLU). Reads the GGUF with gguf.GgufReader only, so it validates the exported file independently of torch.
import numpy as np

from gguf import GgufReader


class RefModel:
    def __init__(self, path):
        r = GgufReader(path)
        kv = r.kv
        if kv["general.architecture"] != "llama":
            raise ValueError("%s: not a llama model" % path)
        self.kv = kv
        self.n_layer = kv["llama.block_count"]
        self.n_embd = kv["llama.embedding_length"]
        self.n_head = kv["llama.attention.head_count"]
        self.n_head_kv = kv["llama.attention.head_count_kv"]
        self.n_rot = kv["llama.rope.dimension_count"]
        self.base = kv["llama.rope.freq_base"]
        self.eps = kv["llama.attention.layer_norm_rms_epsilon"]
        self.w = {k: np.asarray(v, dtype=np.float32) for k, v in r.tensors.items()}
        self.hd = self.n_embd // self.n_head

    def _norm(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def _rope(self, x, pos):
        """x: (T, H, hd); rotates pairs (2i, 2i+1) for i < n_rot/2 by pos * base^(-2i/n_rot)."""
        half = self.n_rot // 2
        inv = self.base ** (-np.arange(half, dtype=np.float64) * 2.0 / self.n_rot)
        ang = pos[:, None].astype(np.float64) * inv[None, :]
        c, s = np.cos(ang).astype(np.float32)[:, None, :], np.sin(ang).astype(np.float32)[:, None, :]
        x = x.copy()
        x0, x1 = x[..., 0:self.n_rot:2].copy(), x[..., 1:self.n_rot:2].copy()
        x[..., 0:self.n_rot:2] = x0 * c - x1 * s
        x[..., 1:self.n_rot:2] = x0 * s + x1 * c
        return x

    def logits(self, ids):
        """Logits (T, n_vocab) for the whole token sequence `ids` (causal attention, positions 0..T-1)."""
        w = self.w
        T = len(ids)
        pos = np.arange(T)
        x = w["token_embd.weight"][np.asarray(ids)]
        rep = self.n_head // self.n_head_kv
        mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), 1)
        for i in range(self.n_layer):
            p = "blk.%d." % i
            h = self._norm(x, w[p + "attn_norm.weight"])
            q = (h @ w[p + "attn_q.weight"].T).reshape(T, self.n_head, self.hd)
            k = (h @ w[p + "attn_k.weight"].T).reshape(T, self.n_head_kv, self.hd)
            v = (h @ w[p + "attn_v.weight"].T).reshape(T, self.n_head_kv, self.hd)
            q, k = self._rope(q, pos), self._rope(k, pos)
            out = np.empty((T, self.n_head, self.hd), dtype=np.float32)
            for hh in range(self.n_head):
                kh, vh = k[:, hh // rep], v[:, hh // rep]
                a = q[:, hh] @ kh.T / np.float32(np.sqrt(self.hd)) + mask
                a = np.exp(a - a.max(axis=-1, keepdims=True))
                a /= a.sum(axis=-1, keepdims=True)
                out[:, hh] = a @ vh
            x = x + out.reshape(T, self.n_embd) @ w[p + "attn_output.weight"].T
            h = self._norm(x, w[p + "ffn_norm.weight"])
            g = h @ w[p + "ffn_gate.weight"].T
            u = h @ w[p + "ffn_up.weight"].T
            x = x + (g / (1.0 + np.exp(-g)) * u) @ w[p + "ffn_down.weight"].T
        return self._norm(x, w["output_norm.weight"]) @ w["output.weight"].T

    def greedy(self, ids, n):
        """Greedy continuation of `ids` by n tokens (full recomputation per token; small models only)."""
        ids = list(ids)
        out = []
        for _ in range(n):
            t = int(np.argmax(self.logits(ids)[-1]))
            out.append(t)
            ids.append(t)
        return out
