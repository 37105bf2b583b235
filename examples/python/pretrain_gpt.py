"""Trains a tiny GPT on CPU from sluice's packed token batches, and prints the loss going down.

    venv/bin/python examples/python/pretrain_gpt.py --from tokens   # a synthetic token file (the default)
    venv/bin/python examples/python/pretrain_gpt.py --from text     # Debian's license texts, SentencePiece

--from tokens writes a uint16 token file of documents with a learnable rule
(each an arithmetic sequence modulo the vocabulary, EOS = 0 after each) and
trains from it through examples/pretrain.lua. --from text trains a
SentencePiece model with spm_train (Debian package sentencepiece) on
/usr/share/common-licenses, tokenizes the texts in sluice's workers
(examples/tokenize.lua), writes the ids to a token file with EOS after each
document, and trains from that. The model attends within each packed
document only (segment_ids), restarts positions with each document
(positions) and learns only where loss_mask says.
"""

import argparse
import os
import pathlib
import subprocess
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import sluice

REPO = pathlib.Path(__file__).resolve().parents[2]


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, seq_len, d=64, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, segment_ids, positions):
        n, L = tokens.shape
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        same = segment_ids[:, :, None] == segment_ids[:, None, :]
        allowed = causal & same  # attend to earlier positions of the same document
        allowed |= torch.eye(L, dtype=torch.bool)  # padding attends to itself: no empty rows
        mask = (~allowed).repeat_interleave(self.heads, dim=0)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


def synthetic_corpus(path, vocab, documents, rng):
    out = []
    for _ in range(documents):
        n = int(rng.integers(8, 120))
        start, step = int(rng.integers(1, vocab)), int(rng.integers(1, 7))
        doc = (start + step * np.arange(n - 1)) % (vocab - 1) + 1  # ids 1..vocab-1
        out.append(doc)
        out.append([0])
    np.concatenate(out).astype(np.uint16).tofile(path)


def text_corpus(path, work, vocab, workers):
    licenses = sorted(p for p in pathlib.Path("/usr/share/common-licenses").iterdir() if p.is_file() and not p.is_symlink())
    texts = work / "texts"
    texts.mkdir()
    for p in licenses:
        (texts / p.name).write_bytes(p.read_bytes())
    model = work / "m"
    subprocess.run(["spm_train", "--input=" + ",".join(map(str, licenses)), f"--model_prefix={model}",
                    f"--vocab_size={vocab}", "--byte_fallback=true", "--minloglevel=2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ["TOKENIZE_MODEL"], os.environ["TOKENIZE_TEXTS"] = f"{model}.model", f"{texts}/*"
    docs = []
    for batch in sluice.Loader(str(REPO / "examples" / "tokenize.lua"), workers=workers):
        ids, count = np.from_dlpack(batch["ids"]), np.from_dlpack(batch["count"])
        for row in range(len(count)):
            doc = ids[row, : count[row]].astype(np.int64) + 1  # EOS = 0 is ours: shift the ids by one
            docs.append(doc)
            docs.append(np.zeros(1, np.int64))
    corpus = np.concatenate(docs)
    corpus.astype(np.uint16).tofile(path)
    print(f"tokenized {len(docs) // 2} texts in sluice's workers: {len(corpus)} tokens, vocabulary {vocab} (+1 for EOS)")
    return vocab + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", choices=["tokens", "text"], default="tokens")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--pack", choices=["concat", "best_fit"], default="concat")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--log-every", type=int, default=25)
    args = parser.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="sluice-pretrain-") as tmp:
        work = pathlib.Path(tmp)
        corpus = work / "corpus.bin"
        if args.source == "tokens":
            vocab = 256
            synthetic_corpus(corpus, vocab, 4000, rng)
        else:
            vocab = text_corpus(corpus, work, 500, args.workers)
        os.environ.update(PRETRAIN_CORPUS=str(corpus), PRETRAIN_SEQ_LEN=str(args.seq_len), PRETRAIN_PACK=args.pack)
        loader = sluice.Loader(str(REPO / "examples" / "pretrain.lua"), workers=args.workers, epochs=0)
        for note in loader.info["notes"]:
            print("note:", note)
        model = TinyGPT(vocab, args.seq_len)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        start, first = time.time(), None
        for step, batch in enumerate(loader, 1):
            f = {name: torch.from_dlpack(batch[name]) for name in ("tokens", "targets", "segment_ids", "positions", "loss_mask")}
            logits = model(f["tokens"], f["segment_ids"], f["positions"].long())
            loss = F.cross_entropy(logits.flatten(0, 1), f["targets"].flatten(), reduction="none")
            loss = (loss * f["loss_mask"].flatten()).sum() / f["loss_mask"].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
            if step % args.log_every == 0 or step == args.steps:
                print(f"step {step:4d}  loss {loss.item():.3f}  ({time.time() - start:.1f} s)")
            if step == args.steps:
                break
        print(f"loss {first:.3f} -> {loss.item():.3f} in {args.steps} steps")


if __name__ == "__main__":
    main()
