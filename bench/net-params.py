#!/usr/bin/python3
"""bench/net-params.py - the reference parameter counts that t/74-net.bats pins.

A maintainer script, not part of the build or the tests: run it with
Debian's /usr/bin/python3 (torch; python3-torchvision for the CNNs) after
changing an architecture in src/lib/arch.c, and compare its table with
`pn-net --params`:

    /usr/bin/python3 bench/net-params.py [--check]

CNNs: torchvision's own models (torchvision.models.NAME()).
Transformers: transformers is not installed here, so each family is built
in plain torch with the modules of the Hugging Face modeling file it names
(same submodules, shapes, biases and tied weights), on the meta device, from
the config.json in samples/networks/configs/; the count is torch's
sum(p.numel() for p in model.parameters()), shared (tied) weights once.
lstm-seq2seq: torch.nn.LSTM and friends with the sizes of Sutskever et al.
(2014), whose paper gives 384M parameters.

--check also runs bin/pn-net --params on each and exits 1 on a difference.
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = os.path.join(ROOT, "samples", "networks", "configs")
M = "meta"


def lin(i, o, bias=True):
    return nn.Linear(i, o, bias=bias, device=M)


def emb(n, d):
    return nn.Embedding(n, d, device=M)


def ln(d):
    return nn.LayerNorm(d, device=M)


class RMSNorm(nn.Module):          # LlamaRMSNorm, T5LayerNorm: weight only
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d, device=M))


def seq(*mods):
    return nn.ModuleList(mods)


def head(m, table, tie, name="lm_head"):
    """The LM head of m (dense from the table's width to its rows, no
    bias) as m.NAME, sharing the embedding table's weight when tie."""
    V, H = table.weight.shape
    setattr(m, name, lin(H, V, False))
    if tie:
        getattr(m, name).weight = table.weight
    return m


def causal_lm(c, block, final, tie):
    """A decoder-only LM as the llama-like modeling files build it: the
    token embedding, num_hidden_layers blocks (block() makes one), the
    final norm and the LM head (head())."""
    m = nn.Module()
    m.embed_tokens = emb(c["vocab_size"], c["hidden_size"])
    m.layers = seq(*[block() for _ in range(c["num_hidden_layers"])])
    m.norm = final
    return head(m, m.embed_tokens, tie)


def bert(c):                       # modeling_bert.py: BertForMaskedLM
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    m = nn.Module()
    m.word = emb(V, H)
    m.position = emb(c.get("max_position_embeddings", 512), H)
    m.token_type = emb(c.get("type_vocab_size", 2), H)
    m.emb_ln = ln(H)
    m.layers = seq(*[seq(lin(H, H), lin(H, H), lin(H, H), lin(H, H), ln(H),
                         lin(H, I), lin(I, H), ln(H))
                     for _ in range(c["num_hidden_layers"])])
    m.transform = seq(lin(H, H), ln(H))   # BertPredictionHeadTransform
    m.decoder = lin(H, V)                 # weight tied, bias its own
    if c.get("tie_word_embeddings", True):
        m.decoder.weight = m.word.weight
    return m


def gpt2(c):                       # modeling_gpt2.py: GPT2LMHeadModel
    H, V = c["n_embd"], c["vocab_size"]
    I = c.get("n_inner") or 4 * H
    m = nn.Module()
    m.wte, m.wpe = emb(V, H), emb(c["n_positions"], H)
    # Conv1D c_attn (H, 3H) + bias, c_proj, c_fc, c_proj
    m.h = seq(*[seq(ln(H), lin(H, 3 * H), lin(H, H), ln(H), lin(H, I),
                    lin(I, H)) for _ in range(c["n_layer"])])
    m.ln_f = ln(H)
    return head(m, m.wte, c.get("tie_word_embeddings", True))


def neox(c):                       # modeling_gpt_neox.py: GPTNeoXForCausalLM
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    b = c.get("attention_bias", True)
    m = nn.Module()
    m.embed_in = emb(V, H)
    m.layers = seq(*[seq(ln(H), ln(H), lin(H, 3 * H, b), lin(H, H, b),
                         lin(H, I), lin(I, H))
                     for _ in range(c["num_hidden_layers"])])
    m.final_layer_norm = ln(H)
    return head(m, m.embed_in, c.get("tie_word_embeddings", False),
                "embed_out")


def opt(c):                        # modeling_opt.py: OPTForCausalLM
    H, F, V = c["hidden_size"], c["ffn_dim"], c["vocab_size"]
    b = c.get("enable_bias", True)
    P = c.get("word_embed_proj_dim", H)
    m = nn.Module()
    m.embed_tokens = emb(V, P)
    m.embed_positions = emb(c["max_position_embeddings"] + 2, H)  # offset 2
    if P != H:                     # opt-350m: project_in, project_out
        m.project_in, m.project_out = lin(P, H, False), lin(H, P, False)
    m.layers = seq(*[seq(lin(H, H, b), lin(H, H, b), lin(H, H, b),
                         lin(H, H, b), ln(H), lin(H, F, b), lin(F, H, b),
                         ln(H)) for _ in range(c["num_hidden_layers"])])
    if (c.get("do_layer_norm_before", True) and
            not c.get("_remove_final_layer_norm", False)):
        m.final_layer_norm = ln(H)
    return head(m, m.embed_tokens, c.get("tie_word_embeddings", True))


def llama(c):                      # modeling_{llama,mistral,qwen2,mixtral,gemma*}.py
    H, I = c["hidden_size"], c["intermediate_size"]
    h = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", h)
    hd = c.get("head_dim", H // h)
    qwen = c["model_type"] == "qwen2"
    ob = False if qwen else c.get("attention_bias", False)
    qb = True if qwen else ob
    mb = c.get("mlp_bias", False)
    n = c.get("num_local_experts", 0)
    gemma = c["model_type"] in ("gemma", "gemma2")
    norms = 4 if c["model_type"] == "gemma2" else 2   # gemma2: pre and post

    def mlp():
        if n:                      # MixtralSparseMoeBlock: gate, experts
            return seq(lin(H, n, False),
                       *[seq(lin(H, I, False), lin(I, H, False),
                             lin(H, I, False)) for _ in range(n)])
        return seq(lin(H, I, mb), lin(H, I, mb), lin(I, H, mb))

    def block():
        return seq(lin(H, h * hd, qb), lin(H, kv * hd, qb),
                   lin(H, kv * hd, qb), lin(h * hd, H, ob), mlp(),
                   *[RMSNorm(H) for _ in range(norms)])

    # Gemma's configs tie by default; the others do not
    return causal_lm(c, block, RMSNorm(H),
                     c.get("tie_word_embeddings", gemma))


def phi3(c):                       # modeling_phi3.py: Phi3ForCausalLM
    H, I = c["hidden_size"], c["intermediate_size"]
    h = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", h)
    hd = H // h
    def block():
        return seq(lin(h * hd, H, False),                       # o_proj
                   lin(H, (h + 2 * kv) * hd, False),            # qkv_proj
                   lin(H, 2 * I, False), lin(I, H, False),      # mlp
                   RMSNorm(H), RMSNorm(H))

    return causal_lm(c, block, RMSNorm(H),
                     c.get("tie_word_embeddings", False))


def falcon(c):                     # modeling_falcon.py: FalconForCausalLM
    H, V, h = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    hd, b = H // h, c.get("bias", False)
    new = c.get("new_decoder_architecture", False)
    kv = c.get("num_kv_heads", h) if new else \
        (1 if c.get("multi_query", True) else h)
    I = c.get("ffn_hidden_size", 4 * H)
    par = c.get("parallel_attn", True)
    norms = 2 if new or not par else 1
    m = nn.Module()
    m.word_embeddings = emb(V, H)
    m.h = seq(*[seq(lin(H, (h + 2 * kv) * hd, b), lin(H, H, b),
                    lin(H, I, b), lin(I, H, b),
                    *[ln(H) for _ in range(norms)])
                for _ in range(c["num_hidden_layers"])])
    m.ln_f = ln(H)
    return head(m, m.word_embeddings, c.get("tie_word_embeddings", True))


def phi(c):                        # modeling_phi.py: PhiForCausalLM
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvd = c.get("num_key_value_heads", h) * (H // h)
    m = nn.Module()
    m.embed_tokens = emb(V, H)
    m.layers = seq(*[seq(lin(H, H), lin(H, kvd), lin(H, kvd), lin(H, H),
                         lin(H, I), lin(I, H), ln(H))
                     for _ in range(c["num_hidden_layers"])])
    m.final_layernorm = ln(H)
    m.lm_head = lin(H, V)          # with its bias
    if c.get("tie_word_embeddings", False):
        m.lm_head.weight = m.embed_tokens.weight
    return m


def bloom(c):                      # modeling_bloom.py: BloomForCausalLM
    H, V = c["hidden_size"], c["vocab_size"]
    m = nn.Module()
    m.word_embeddings = emb(V, H)
    m.word_embeddings_layernorm = ln(H)
    m.h = seq(*[seq(ln(H), lin(H, 3 * H), lin(H, H), ln(H),
                    lin(H, 4 * H), lin(4 * H, H))
                for _ in range(c.get("n_layer", c.get("num_hidden_layers")))])
    m.ln_f = ln(H)
    return head(m, m.word_embeddings, c.get("tie_word_embeddings", True))


def t5(c):                         # modeling_t5.py: T5ForConditionalGeneration
    d, dff, V = c["d_model"], c["d_ff"], c["vocab_size"]
    inner = c["num_heads"] * c["d_kv"]
    gated = c.get("feed_forward_proj", "relu").startswith("gated-")

    def attn(first):
        a = seq(lin(d, inner, False), lin(d, inner, False),
                lin(d, inner, False), lin(inner, d, False))
        if first:
            a.append(emb(c.get("relative_attention_num_buckets", 32),
                         c["num_heads"]))
        return a

    def ff():
        if gated:
            return seq(lin(d, dff, False), lin(d, dff, False),
                       lin(dff, d, False))
        return seq(lin(d, dff, False), lin(dff, d, False))

    def stack(n, dec):
        return seq(*[seq(attn(i == 0), RMSNorm(d),
                         *([attn(False), RMSNorm(d)] if dec else []),
                         ff(), RMSNorm(d)) for i in range(n)],
                   RMSNorm(d))

    m = nn.Module()
    m.shared = emb(V, d)
    m.encoder = stack(c["num_layers"], False)
    m.decoder = stack(c.get("num_decoder_layers", c["num_layers"]), True)
    return head(m, m.shared, c.get("tie_word_embeddings", True))


FAMILIES = {"bert": bert, "roberta": bert, "gpt2": gpt2, "gpt_neox": neox,
            "opt": opt, "llama": llama, "mistral": llama, "qwen2": llama,
            "mixtral": llama, "t5": t5, "gemma": llama, "gemma2": llama,
            "phi3": phi3, "falcon": falcon, "phi": phi, "bloom": bloom}


def seq2seq():
    m = nn.Module()
    m.enc_emb, m.dec_emb = emb(160000, 1000), emb(80000, 1000)
    m.enc = nn.LSTM(1000, 1000, 4, device=M)
    m.dec = nn.LSTM(1000, 1000, 4, device=M)
    m.out = lin(1000, 80000)
    return m


def count(m):
    return sum(p.numel() for p in m.parameters())


def main():
    check = "--check" in sys.argv[1:]
    rows = []
    for f in sorted(os.listdir(CFG)):
        c = json.load(open(os.path.join(CFG, f)))
        rows.append((f[:-5], ["--hf", os.path.join(CFG, f)],
                     count(FAMILIES[c["model_type"]](c)),
                     "plain-torch replica of modeling_%s.py" %
                     c["model_type"]))
    try:
        import torchvision.models as tv
        for n in ["resnet18", "resnet34", "resnet50", "resnet101",
                  "resnet152", "vgg11", "vgg13", "vgg16", "vgg19",
                  "mobilenet_v2"]:
            rows.append((n, ["--arch", n], count(getattr(tv, n)()),
                         "torchvision.models.%s()" % n))
    except ImportError:
        print("no torchvision: CNNs skipped", file=sys.stderr)
    rows.append(("lstm-seq2seq", ["--arch", "lstm-seq2seq"],
                 count(seq2seq()), "torch.nn.LSTM, Sutskever et al. 2014"))
    bad = 0
    print("model\tpn_net\treference\tsource")
    for name, args, ref, src in rows:
        got = "-"
        if check:
            got = subprocess.run([os.path.join(ROOT, "bin", "pn-net"),
                                  "--params"] + args, check=True,
                                 capture_output=True,
                                 text=True).stdout.strip()
            bad += got != str(ref)
        print("%s\t%s\t%d\t%s" % (name, got, ref, src))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
