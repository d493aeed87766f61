"""The transformers side of bench/generate.sh: `model.generate` with its static cache on a GPT-2
directory, and the random-weight model directories the bench runs both sides on.

  generate_peer.py make --out DIR --shape demo|gpt2 --tokenizer DIR
      A GPT2LMHeadModel of that shape with random weights (torch.manual_seed(0), transformers'
      init), saved as config.json + model.safetensors, with vocab.json + merges.txt copied from
      --tokenizer. eos_token_id is null in its config, so neither loom nor transformers stops
      early: every run adds exactly --max_new_tokens tokens (a random model may well emit
      <|endoftext|>). demo: the scripts/demo.sh model (4 layers, 256 wide, 4 heads) with
      n_positions 256 instead of 128, so that 8 + 128 positions fit; gpt2: GPT-2 124M (12 layers,
      768 wide, 12 heads, n_positions 1024). Both vocab 50257.

  generate_peer.py run --model DIR --prompt TEXT --max_new_tokens N [--do_sample --top_k K
                       --temperature T --seed S] --threads N [--warmup 1]
      Loads the model (not timed), runs --warmup untimed generate calls, then one timed
      model.generate(cache_implementation="static", min_new_tokens=max_new_tokens=N) under
      torch.inference_mode. Prints one JSON line: tokens_per_s (new tokens / the whole generate
      call), prefill_s (until the first new token, from a streamer's timestamps), decode_tokens_per_s
      (the N - 1 tokens after it, as loom's stderr line), the text, torch / transformers versions.

Best set-up, in this process only (bench/peer_common.py setup): OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset, OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS=MKL_NUM_THREADS=--threads before
torch loads, torch.set_num_threads(--threads); SDPA attention.
"""
import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

SHAPES = {
    "demo": dict(n_layer=4, n_embd=256, n_head=4, n_positions=256),
    "gpt2": dict(n_layer=12, n_embd=768, n_head=12, n_positions=1024),
}


def parse_args():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--shape", choices=sorted(SHAPES), required=True)
    m.add_argument("--tokenizer", required=True)
    r = sub.add_parser("run")
    r.add_argument("--model", required=True)
    r.add_argument("--prompt", required=True)
    r.add_argument("--prompt_tokens", type=int, default=0, help="expected length (0: any)")
    r.add_argument("--max_new_tokens", type=int, default=128)
    r.add_argument("--do_sample", action="store_true")
    r.add_argument("--top_k", type=int, default=50)
    r.add_argument("--temperature", type=float, default=1.0)
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--warmup", type=int, default=1)
    for a in (m, r):
        a.add_argument("--threads", type=int, default=2)
    return p.parse_args()


def make(args, torch, transformers):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50257, resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, bos_token_id=50256, eos_token_id=None,
                                  **SHAPES[args.shape])
    model = transformers.GPT2LMHeadModel(cfg).eval()
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    print(json.dumps({"shape": args.shape, "dir": args.out,
                      "parameters": sum(p.numel() for p in model.parameters())}))


class Clock:
    """A streamer that only records when generate hands it tokens: the first put() is the
    prompt, the second the first new token."""

    def __init__(self):
        self.times = []

    def put(self, value):
        self.times.append(time.perf_counter())

    def end(self):
        pass


def run(args, torch, transformers):
    torch.set_num_threads(args.threads)
    tok = transformers.GPT2Tokenizer.from_pretrained(args.model)
    ids = torch.tensor([tok.encode(args.prompt)])
    if args.prompt_tokens and ids.shape[1] != args.prompt_tokens:
        sys.exit("generate_peer: the prompt is %d tokens, not %d" % (ids.shape[1],
                                                                      args.prompt_tokens))
    model = transformers.GPT2LMHeadModel.from_pretrained(args.model,
                                                         attn_implementation="sdpa").eval()
    n = args.max_new_tokens
    kw = dict(max_new_tokens=n, min_new_tokens=n, cache_implementation="static",
              do_sample=args.do_sample, pad_token_id=50256,
              attention_mask=torch.ones_like(ids))
    if args.do_sample:
        kw.update(top_k=args.top_k, temperature=args.temperature, top_p=1.0)
    with torch.inference_mode():
        for _ in range(args.warmup):
            model.generate(ids, **kw)
        torch.manual_seed(args.seed)
        clock = Clock()
        t0 = time.perf_counter()
        out = model.generate(ids, streamer=clock, **kw)
        total = time.perf_counter() - t0
    new = out.shape[1] - ids.shape[1]
    if new != n:
        sys.exit("generate_peer: %d new tokens, expected %d" % (new, n))
    prefill = clock.times[1] - t0
    print(json.dumps({
        "new_tokens": new, "prompt_tokens": ids.shape[1], "seconds": total,
        "tokens_per_s": new / total, "prefill_s": prefill,
        "decode_tokens_per_s": (new - 1) / (total - prefill),
        "text": tok.decode(out[0].tolist()),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "attn_implementation": model.config._attn_implementation,
    }))


def main():
    args = parse_args()
    peer_common.setup(args.threads)
    torch, transformers = peer_common.import_torch("generate_peer")
    transformers.logging.set_verbosity_error()
    (make if args.cmd == "make" else run)(args, torch, transformers)


if __name__ == "__main__":
    main()
