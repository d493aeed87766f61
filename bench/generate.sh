#!/usr/bin/env bash
# Generation speed (issue 24): `loom generate` against transformers'
# `model.generate` with its static cache (bench/generate_peer.py), same
# machine, same threads, in ROUNDS alternating rounds (each round: every
# model and mode, loom then transformers). Models: random-weight GPT-2s made
# here by the peer under $OUT — the demo model's shape (scripts/demo.sh: 4
# layers, 256 wide, 4 heads; n_positions 256 so that 8 + 128 positions fit)
# and GPT-2 124M (12 x 768, 12 heads) — with eos_token_id null in their
# config, so both sides add exactly NEW_TOKENS tokens. Modes: greedy, and
# sampled (do_sample, top_k 50, temperature 0.8, seed 42). Prompt: 8 tokens.
#
# Timed: loom's own stderr line (the generate call after the model and
# tokenizer are loaded: prompt pass, including the lazy device's two graph
# compiles, plus the decode steps); transformers: one model.generate call
# after one untimed warm-up call. tokens/s = new tokens / that time; "decode"
# is the NEW_TOKENS - 1 tokens after the first. Prints per round both
# tokens/s and the ratio loom / transformers, then per model and mode the
# medians and the median of the per-round ratios (issue 24's goal: >= 2 for
# greedy on both models), and whether the greedy texts are the same.
#
# Usage: bench/generate.sh [BUILD_DIR=build] [ROUNDS=3] [THREADS=2] [NEW_TOKENS=128]
# Environment: MODELS (default "demo gpt2"), MODES (default "greedy sampled"),
# OUT (default: a fresh /tmp folder, removed at the end unless given).
# loom runs with OMP_NUM_THREADS=THREADS; the peer sets its own best set-up
# (bench/peer_common.py: OMP_WAIT_POLICY=PASSIVE, OPENBLAS_* unset,
# torch.set_num_threads). Needs python3 with torch + transformers
# (scripts/setup_peers.sh).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
THREADS=${3:-2}
NEW_TOKENS=${4:-128}
MODELS=${MODELS:-"demo gpt2"}
MODES=${MODES:-"greedy sampled"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM="$ROOT/$BUILD/loom"
TOKENIZER="$ROOT/assets/tokenizers/gpt2"
PROMPT="It is a truth universally acknowledged, that"  # 8 GPT-2 tokens
if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
else
  OUT=$(mktemp -d /tmp/loom-generate-bench.XXXXXX)
  trap 'rm -rf "$OUT"' EXIT
fi
[[ -x "$LOOM" ]] || { echo "generate: no $LOOM (build the loom_cli target)" >&2; exit 2; }

echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in $MODELS; do
  python3 "$ROOT/bench/generate_peer.py" make --out "$OUT/$model" --shape "$model" \
    --tokenizer "$TOKENIZER" 2>/dev/null | tail -1
done

for mode in $MODES; do  # a bad mode stops here, not inside $(mode_flags ...)'s subshell
  [[ "$mode" == greedy || "$mode" == sampled ]] ||
    { echo "generate: unknown mode $mode (greedy, sampled)" >&2; exit 2; }
done

mode_flags() {  # mode -> flags shared by loom generate and the peer
  case "$1" in
    greedy) ;;
    sampled) echo "--do_sample --top_k 50 --temperature 0.8 --seed 42" ;;
    *) echo "generate: unknown mode $1" >&2; exit 2 ;;
  esac
}

: >"$OUT/results.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for model in $MODELS; do
    for mode in $MODES; do
      tag="$model.$mode.$round"
      # shellcheck disable=SC2046  # mode_flags is a word list
      OMP_NUM_THREADS=$THREADS "$LOOM" generate --model_name_or_path "$OUT/$model" \
        --tokenizer_name "$TOKENIZER" --prompt "$PROMPT" --max_new_tokens "$NEW_TOKENS" \
        --device lazy $(mode_flags "$mode") >"$OUT/loom.$tag.txt" 2>"$OUT/loom.$tag.err" ||
        { cat "$OUT/loom.$tag.err" >&2; exit 1; }
      # shellcheck disable=SC2046
      python3 "$ROOT/bench/generate_peer.py" run --model "$OUT/$model" --prompt "$PROMPT" \
        --prompt_tokens 8 --max_new_tokens "$NEW_TOKENS" --threads "$THREADS" \
        $(mode_flags "$mode") >"$OUT/hf.$tag.log" 2>&1 || { cat "$OUT/hf.$tag.log" >&2; exit 1; }
      printf '%s\t%s\t%s\t%s\n' "$model" "$mode" "$round" "$(cut -d' ' -f1 /proc/loadavg)" \
        >>"$OUT/results.tsv"
    done
  done
done

python3 - "$OUT" "$NEW_TOKENS" <<'EOF'
import json, re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows, peer = {}, None
print("%-5s %-8s %5s %5s  %14s %14s %7s  %13s %13s" % (
    "model", "mode", "round", "load", "loom tok/s", "HF tok/s", "ratio", "loom decode", "HF decode"))
for line in open(out + "/results.tsv"):
    model, mode, rnd, load = line.split()
    tag = "%s.%s.%s" % (model, mode, rnd)
    err = open("%s/loom.%s.err" % (out, tag)).read()
    m = re.search(r"loom: (\d+) new tokens after (\d+) prompt tokens in ([0-9.e+-]+) s .*"
                  r"prompt pass ([0-9.e+-]+) s", err)
    if not m or int(m.group(1)) != n or int(m.group(2)) != 8:
        sys.exit("generate: unexpected loom output for %s:\n%s" % (tag, err))
    total, prefill = float(m.group(3)), float(m.group(4))
    loom = {"tps": n / total, "decode": (n - 1) / (total - prefill),
            "text": open("%s/loom.%s.txt" % (out, tag)).read().rstrip("\n")}
    peer = json.loads(open("%s/hf.%s.log" % (out, tag)).read().strip().splitlines()[-1])
    hf = {"tps": peer["tokens_per_s"], "decode": peer["decode_tokens_per_s"], "text": peer["text"]}
    rows.setdefault((model, mode), []).append((loom, hf))
    print("%-5s %-8s %5s %5s  %14.1f %14.1f %6.2fx  %13.1f %13.1f" % (
        model, mode, rnd, load, loom["tps"], hf["tps"], loom["tps"] / hf["tps"],
        loom["decode"], hf["decode"]))
print("\npeer: torch %s, transformers %s, %d threads, attention %s, static cache, warm-up 1" % (
    peer["torch"], peer["transformers"], peer["threads"], peer["attn_implementation"]))
print("medians over rounds (tokens/s of the whole generate call; ratio = median of per-round "
      "loom / transformers):")
for (model, mode), rs in rows.items():
    med = lambda f: statistics.median(f(l, h) for l, h in rs)
    same = ""
    if mode == "greedy":
        same = "; greedy text %s" % ("identical" if all(l["text"] == h["text"] for l, h in rs)
                                      else "DIFFERS")
    print("  %-5s %-8s loom %7.1f  transformers %7.1f  ratio %.2fx (decode only %.2fx)%s" % (
        model, mode, med(lambda l, h: l["tps"]), med(lambda l, h: h["tps"]),
        med(lambda l, h: l["tps"] / h["tps"]), med(lambda l, h: l["decode"] / h["decode"]), same))
EOF
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
