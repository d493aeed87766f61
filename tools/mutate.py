#!/usr/bin/env python3
"""Mutation runner: do loom's tests catch hand-written bugs in its core files?

What it does: keeps a scratch copy of the repository (default build-mutate/tree, a plain
copy of the tracked and untracked-but-not-ignored files; the checkout itself is never
edited), builds loom_tests there once, then for each mutant in MUTANTS: applies it (one
exact text replacement in one file), rebuilds loom_tests incrementally, runs the mutant's
test subset, and restores the file. A mutant is "killed" when a test fails, "SURVIVED" when
every test passes (a gap: add the test that would have caught it), "build error" when the
mutant does not compile (fix the mutant). Before each mutant its subset runs on the
unmutated copy and must pass ("baseline fails" otherwise: fix the test first). Writes a
Markdown table to --out (default <scratch>/mutate_result.md, i.e. build-mutate/mutate_result.md);
only with --write does it also update the committed tools/mutate_result.md. Exits 1 when a
mutant survived.

Assumes: cmake, ninja and the packages of scripts/setup.sh; about 20 minutes for the first
build of the scratch copy on 2 cores, then ~1 minute per mutant (one file and the links).

  python3 tools/mutate.py                 # every mutant; table in build-mutate/mutate_result.md
  python3 tools/mutate.py --write         # and update the committed tools/mutate_result.md
  python3 tools/mutate.py --list          # names and what each changes
  python3 tools/mutate.py --only adamw_eps_tf_placement bpe_fuse_unk_inverted

Each mutant is a bug the field has shipped or an auditor found (issues 15 and 25): a sign, an
off-by-one, a dropped term, an option inverted. `env` runs its tests under extra
environment variables (e.g. OMP_NUM_THREADS=1, where a thread-count bug used to hide).
"""
import argparse
import dataclasses
import io
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMITTED_RESULT = ROOT / "tools" / "mutate_result.md"  # written only with --write


@dataclasses.dataclass
class Mutant:
    name: str
    file: str  # relative to the repository root
    old: str  # must occur exactly once in the file
    new: str
    tests: str  # --gtest_filter of the subset expected to fail
    what: str
    env: dict = dataclasses.field(default_factory=dict)


MUTANTS = [
    Mutant("adamw_eps_tf_placement", "src/optim/adamw.cpp",
           'add(div(sqrt(v), scalars.get("bc2_sqrt", std::sqrt(bc2), dev)), eps)',
           'div(add(sqrt(v), eps), scalars.get("bc2_sqrt", std::sqrt(bc2), dev))',
           "*OptimizerFixture*:*OptimizerState*:*OptimLazy*",
           "AdamW's eps inside the bias correction (TensorFlow's placement)"),
    Mutant("bpe_fuse_unk_inverted", "src/data/tokenizer/bpe.cpp",
           "if (unk && fuse_unk_) {", "if (unk && !fuse_unk_) {",
           "*Tokenizer*:*Bpe*", "BPE fuse_unk inverted"),
    Mutant("bpe_ignore_merges_inverted", "src/data/tokenizer/bpe.cpp",
           "  if (ignore_merges_) {", "  if (!ignore_merges_) {",
           "*Tokenizer*:*Bpe*", "BPE ignore_merges inverted"),
    Mutant("reduce_split_row_short", "src/backends/cpu/reduce.cpp",
           "std::min(kSplit, n - p * kSplit));", "std::min(kSplit, n - p * kSplit) - 1);",
           "CpuReduce*:*Reduce*",
           "a thread's piece of a long row one element short (tests at OMP_NUM_THREADS=1)",
           {"OMP_NUM_THREADS": "1"}),
    Mutant("grad_sub_sign", "src/autograd/rules_elementwise.cpp",
           "return {fit(g, in(n, 0)), fit(neg(g), in(n, 1))};",
           "return {fit(g, in(n, 0)), fit(g, in(n, 1))};",
           "*Grad*", "sign flip in the gradient of a - b with respect to b"),
    Mutant("grad_div_sign", "src/autograd/rules_elementwise.cpp",
           "fit(neg(g * a / (b * b)), b)", "fit(g * a / (b * b), b)",
           "*Grad*", "sign flip in the gradient of a / b with respect to b"),
    Mutant("layer_norm_backward_dropped_term", "src/autograd/rules_shape_nn.cpp",
           " - xhat * mean(dxhat * xhat, {-1}, true));", ");",
           "*Grad*:*LayerNorm*:*Layers*",
           "layer_norm backward without the xhat * mean(dxhat * xhat) term"),
    Mutant("softmax_backward_dropped_term", "src/autograd/rules_shape_nn.cpp",
           "return {y * (g - sum(g * y, {n.attrs.axis}, true))};", "return {y * g};",
           "*Grad*", "softmax backward without the sum(g * y) term"),
    # The label-smoothing term moved from autograd into the cross_entropy_backward kernels
    # (the fused CE pass, b46d253): the cpu kernel's copy, against the reference.
    Mutant("cross_entropy_smoothing_sign", "src/backends/cpu/cross_entropy_grad.cpp",
           "z[k] = z[k] * ps - smooth;", "z[k] = z[k] * ps + smooth;",
           "*CrossEntropy*:*TorchFixture*:*OpCases*",
           "sign flip of the label-smoothing term in the cpu cross_entropy backward"),
    Mutant("sgd_dampening_ignored", "src/optim/sgd.cpp",
           "first ? 1.0 : 1.0 - dampening", "1.0",
           "*OptimizerFixture*:*OptimizerState*:*OptimLazy*", "SGD momentum ignores dampening"),
    Mutant("clip_grad_no_clamp", "src/optim/clip_grad.cpp",
           "  coef = minimum(coef, 1.0);\n", "",
           "*Clip*", "clip_grad_norm_ scales small gradients up (no clamp at 1)"),
    Mutant("lr_linear_off_by_one", "src/optim/lr_schedule.cpp",
           "static_cast<double>(n - step) /", "static_cast<double>(n - step - 1) /",
           "*LRSchedule*", "linear decay one step early"),
    Mutant("lr_warmup_off_by_one", "src/optim/lr_schedule.cpp",
           "return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));",
           "return static_cast<double>(step + 1) / "
           "static_cast<double>(std::max<int64_t>(1, warmup));",
           "*LRSchedule*", "warmup one step ahead"),
    Mutant("csv_doubled_quote_dropped", "src/io/text_files.cpp",
           "          field.push_back('\"');\n          pos_ += 2;",
           "          pos_ += 2;",
           "*TextFiles*:*Dataset*", 'CSV "" inside a quoted field read as nothing'),
    Mutant("wordpiece_max_chars_off_by_one", "src/data/tokenizer/wordpiece.cpp",
           "if (chars > max_chars_) {", "if (chars >= max_chars_) {",
           "*Tokenizer*:*WordPiece*", "WordPiece max_input_chars_per_word one short"),
    Mutant("top_k_drops_kth", "src/nn/generation.cpp",
           "    if (x < threshold) x = kRemoved;", "    if (x <= threshold) x = kRemoved;",
           "*Generat*:LogitsWarpers.*", "top_k removes the k-th token too"),
    Mutant("sampler_epoch_ignored", "src/data/sampler.cpp",
           "const uint64_t offset = static_cast<uint64_t>(epoch);", "const uint64_t offset = 0;",
           "*Sampler*:*DataLoader*", "every epoch shuffled the same way"),
    # Issue 25: the areas added since the first run (memory plan, fused batches,
    # executable collectives, DDP, LoRA, the fused CE kernel, lazy:sim, TensorBoard).
    Mutant("fused_ce_target_bound", "src/backends/cpu/cross_entropy_grad.cpp",
           "(t >= 0 && t < classes)", "(t >= 0 && t <= classes)",
           "*FusedCrossEntropy*:*CrossEntropy*",
           "the cpu cross-entropy kernels accept target == classes (reads past the row)"),
    Mutant("memory_plan_donation_veto_dropped", "src/compiler/memory/plan.cpp",
           "if (!(u < s || (u == s && in_place_ok))) continue;", "if (!(u <= s)) continue;",
           "*MemoryPlan*:*SimDevice*:*FusedBatch*:*AdamWBatch*",
           "an input read by a non-elementwise step may still host that step's output"),
    Mutant("memory_plan_donor_preference_inverted", "src/compiler/memory/plan.cpp",
           "if (here_i != here_best) return here_i;", "if (here_i != here_best) return here_best;",
           "*MemoryPlan*", "the donor is an input dead earlier, not the one updated in the step"),
    Mutant("memory_plan_in_place_while_still_read", "src/compiler/memory/plan.cpp",
           "if (b.last != s || b.taken_at == s) continue;", "if (b.taken_at == s) continue;",
           "*MemoryPlan*:*Fused*:*SimDevice*:*Lazy*Training*",
           "a fused step writes in place over an input that a later step still reads"),
    Mutant("fused_batch_read_after_write_dropped", "src/compiler/memory/batch.cpp",
           "          batch_overlap(m.reads, o.writes))", "          false)",
           "*FusedBatch*:*AdamWBatch*",
           "a fused group reading another group's result is batched with it"),
    Mutant("fused_batch_write_after_read_dropped", "src/compiler/memory/batch.cpp",
           "if (batch_overlap(m.writes, o.reads) || batch_overlap(m.writes, o.writes) ||",
           "if (batch_overlap(m.writes, o.writes) ||",
           "*FusedBatch*:*AdamWBatch*",
           "a fused group writing storage another group reads is batched with it"),
    Mutant("collective_wait_after_first_reader", "src/backends/kernel_executable.cpp",
           "        at = t;\n        break;", "        at = std::min(t + 1, n);\n        break;",
           "*ExecutableCollective*:*AllReduce*:*SimDevice*",
           "a collective is waited for after its first reader launched, not before"),
    Mutant("collective_wait_lost_in_batch", "src/backends/kernel_executable.cpp",
           "      wait_before_[s].insert(wait_before_[s].end(), wait_before_[t].begin(), "
           "wait_before_[t].end());\n", "",
           "*ExecutableCollective*:*AllReduce*:*SimDevice*",
           "a wait before a fused-batch member is dropped instead of moved to the batch head"),
    Mutant("collective_schedule_graph_order", "src/compiler/passes/collective_schedule.cpp",
           "  std::sort(keyed.begin(), keyed.end());\n", "",
           "*CollectiveSchedule*:*CollectivePasses*",
           "collectives keep graph order instead of moving up by readiness"),
    Mutant("grad_bucket_forward_order", "src/train/grad_buckets.cpp",
           "for (size_t k = bytes.size(); k-- > 0;) {", "for (size_t k = 0; k < bytes.size(); ++k) {",
           "*GradBuckets*", "gradient buckets in parameter order, not torch DDP's reverse order"),
    Mutant("grad_bucket_dtypes_mixed", "src/train/grad_buckets.cpp",
           " &&\n                      dtypes[buckets.back().front()] == dtypes[k];", ";",
           "*GradBuckets*", "a bucket mixes gradient dtypes (one concat over f32 and bf16)"),
    Mutant("grad_bucket_unpack_offset", "src/train/grad_buckets.cpp",
           "      offset += n;\n", "",
           "*GradBuckets*", "every parameter of a bucket gets the bucket's first slice back"),
    Mutant("ddp_loss_world_scale_dropped", "src/train/trainer_loop.cpp",
           "  if (num_items.defined() && world > 1) loss = loss * static_cast<double>(world);\n",
           "", "DdpTrainCli.TwoRanksEqualOneProcess*:DdpTrainCli.Padded*",
           "DDP: the item-counted loss is not scaled by the world size (gradients 1/world)"),
    Mutant("eval_shard_size_rounds_down", "src/train/eval_shard.cpp",
           "size_ = rank >= n ? 0 : (n - rank + world - 1) / world;",
           "size_ = rank >= n ? 0 : (n - rank) / world;",
           "*EvalShard*", "an evaluation shard drops its last strided sample"),
    Mutant("dist_launch_rank_bound", "src/distributed/group.cpp",
           "LOOM_CHECK(size >= 1 && rank < size,", "LOOM_CHECK(size >= 1 && rank <= size,",
           "*DistLaunchEnv*", "a launcher rank equal to the world size is accepted"),
    Mutant("dist_deadline_wraps", "src/distributed/deadline.h",
           "    return Clock::time_point::max();", "    return now;",
           "*DistDeadline*", "a huge --ddp_timeout is an immediate deadline instead of none"),
    Mutant("lora_scaling_dropped", "src/nn/lora/lora_adapter.cpp",
           "return lora_B_->forward(lora_A_->forward(dropout_->forward(x))) * scaling_;",
           "return lora_B_->forward(lora_A_->forward(dropout_->forward(x)));",
           "*Lora*", "the LoRA update without lora_alpha / r"),
    Mutant("lora_dropout_on_the_update", "src/nn/lora/lora_adapter.cpp",
           "return lora_B_->forward(lora_A_->forward(dropout_->forward(x))) * scaling_;",
           "return dropout_->forward(lora_B_->forward(lora_A_->forward(x))) * scaling_;",
           "*Lora*", "LoRA dropout on the update instead of the adapter input"),
    Mutant("sim_memory_never_protected", "src/backends/sim/sim_memory.cpp",
           "accessible ? PROT_READ | PROT_WRITE : PROT_NONE", "PROT_READ | PROT_WRITE",
           "*SimDevice*", "lazy:sim memory stays host-accessible outside stream work"),
    Mutant("lazy_output_operands_kept", "src/lazy/collect.cpp",
           "  for (const TraceNodePtr& n : c.output_nodes) n->operands.clear();\n", "",
           "*AdamWBatch*:*Lazy*Donat*",
           "an output's trace node keeps its operands, so an input it reads directly is never donated"),
    Mutant("lazy_late_donation_dropped", "src/lazy/execute.cpp",
           "        c.donatable[i] = true;\n", "        c.donatable[i] = false;\n",
           "*AdamWBatch*",
           "an input in flight at collection is never donated, even when only its own job holds it"),
    Mutant("tensorboard_crc_mask_rotation", "src/io/tfrecord.cpp",
           "return ((crc >> 15) | (crc << 17)) + kMaskDelta;",
           "return ((crc >> 17) | (crc << 15)) + kMaskDelta;",
           "*TensorBoard*", "TFRecord's masked CRC rotated the wrong way"),
    Mutant("tensorboard_eval_tag_prefix", "src/train/tensorboard_callback.cpp",
           'return "eval/" + log_key.substr(5);', 'return "eval/" + log_key;',
           "*TensorBoardCallback*", "eval_loss logged as eval/eval_loss, not eval/loss"),
]


def run(cmd, cwd, timeout, env=None, log=None):
    """Runs cmd; returns (exit code, combined output). A timeout counts as exit 124."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
        out = p.stdout
        code = p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (
            e.stdout or "")
        code = 124
    if log is not None:
        log.write(f"$ {' '.join(cmd)}  (exit {code})\n{out}\n")
        log.flush()
    return code, out


def source_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


def sync_tree(tree):
    """Copies every file that differs into the scratch tree (unchanged files keep their
    mtime, so the scratch build stays incremental)."""
    changed = 0
    for rel in source_files():
        src, dst = ROOT / rel, tree / rel
        data = src.read_bytes()
        if dst.is_file() and dst.read_bytes() == data:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        shutil.copymode(src, dst)
        changed += 1
    return changed


def use_tests_of(rev, tree):
    """Replaces tests/ in the scratch tree by tests/ at `rev` (the next run without
    --tests-rev copies the current ones back)."""
    listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "tests"], cwd=ROOT,
                             check=True, text=True, stdout=subprocess.PIPE).stdout.split("\n")
    keep = {f for f in listing if f}
    for rel in source_files():
        if rel.startswith("tests/") and rel not in keep and (tree / rel).exists():
            (tree / rel).unlink()
    for rel in keep:
        data = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, check=True,
                              stdout=subprocess.PIPE).stdout
        dst = tree / rel
        if not dst.is_file() or dst.read_bytes() != data:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
    print(f"mutate: tests/ as of {rev}", flush=True)


def failed_tests(output):
    # "[  FAILED  ] Suite.Name (12 ms)" or "[  FAILED  ] P/Suite.Name/0, where GetParam() = ..."
    names = [line.split("]", 1)[1].strip().split(" ")[0].rstrip(",")
             for line in output.splitlines() if line.startswith("[  FAILED  ]") and "." in line]
    return sorted(set(names))


def main():
    parser = argparse.ArgumentParser(description="Hand-written mutants of loom's core files.")
    parser.add_argument("--only", nargs="*", help="mutant names to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--scratch", default=str(ROOT / "build-mutate"),
                        help="scratch folder (a copy of the repository and its build)")
    parser.add_argument("--out", help="where the result table goes (default: "
                        "<scratch>/mutate_result.md; never the committed file unless named)")
    parser.add_argument("--write", action="store_true",
                        help=f"also write the committed {COMMITTED_RESULT.relative_to(ROOT)}")
    parser.add_argument("--jobs", default=os.environ.get("LOOM_JOBS", "2"))
    parser.add_argument("--test-timeout", type=int, default=900)
    parser.add_argument("--tests-rev", help="run with tests/ as of this git revision (to see "
                        "what the tests caught before a change); sources stay as checked out")
    parser.add_argument("--unity", action="store_true",
                        help="build the scratch copy as a unity build (a first build several "
                        "times faster; each mutant then recompiles its whole unity chunk)")
    parser.add_argument("--in-place", metavar="BUILD_DIR",
                        help="no scratch copy: mutate the checkout itself and rebuild in its "
                        "configured BUILD_DIR (e.g. build; saves the first build on a busy "
                        "machine). Each file is written back after its mutant; the mutated "
                        "files must have no uncommitted changes (git checkout restores them)")
    parser.add_argument("--quick-build", action="store_true",
                        help="compile the scratch copy at -O1 without debug info (a shared or "
                        "small machine; the test subsets run a little slower)")
    parser.add_argument("--deadline", help="HH:MM (UTC): start no mutant after this time; the "
                        "rest are listed as 'not run'")
    args = parser.parse_args()

    by_name = {m.name: m for m in MUTANTS}
    # --only runs the named mutants in the order given (e.g. the newest first).
    mutants = [by_name[n] for n in args.only if n in by_name] if args.only else list(MUTANTS)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:36s} {m.file:36s} {m.what}")
        return 0
    if (args.out and pathlib.Path(args.out).resolve() == COMMITTED_RESULT.resolve()
            and not args.write):
        sys.exit(f"mutate: --out {args.out} is the committed result: pass --write to update it")
    unknown = set(args.only or []) - {m.name for m in MUTANTS}
    if unknown:
        sys.exit(f"mutate: unknown mutant(s) {sorted(unknown)}; see --list")

    scratch = pathlib.Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    log = open(scratch / "mutate.log", "w")
    if args.in_place:
        tree, build = ROOT, pathlib.Path(args.in_place).resolve()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *{m.file for m in mutants}],
                               cwd=ROOT, text=True, stdout=subprocess.PIPE).stdout.strip()
        if dirty or args.tests_rev:
            sys.exit("mutate: --in-place needs the mutated files committed (and no --tests-rev):\n"
                     + dirty)
        if not (build / "build.ninja").exists():
            sys.exit(f"mutate: --in-place: {build} is not a configured build folder")
    else:
        tree, build = scratch / "tree", scratch / "tree" / "build"
        print(f"mutate: syncing {tree} ({sync_tree(tree)} files changed)", flush=True)
        if args.tests_rev:
            use_tests_of(args.tests_rev, tree)
    for m in mutants:  # fail early on a stale mutant, before any build
        text = (tree / m.file).read_text()
        if text.count(m.old) != 1:
            sys.exit(f"mutate: {m.name}: the text to replace occurs {text.count(m.old)} times "
                     f"in {m.file} (must be once); update the mutant")

    env = dict(os.environ)
    if not (build / "build.ninja").exists():
        build_type = (["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1"]
                      if args.quick_build else ["-DCMAKE_BUILD_TYPE=Release"])
        code, out = run(["cmake", "-S", str(tree), "-B", str(build), "-G", "Ninja", *build_type,
                         "-DLOOM_BUILD_BENCH=OFF",
                         f"-DLOOM_UNITY_BUILD={'ON' if args.unity else 'OFF'}",
                         "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"],
                        tree, 600, env, log)
        if code != 0:
            sys.exit(f"mutate: configure failed:\n{out[-3000:]}")
    ninja = ["ninja", "-C", str(build), f"-j{args.jobs}", "loom_tests"]
    t0 = time.time()
    print("mutate: building the unmutated copy", flush=True)
    code, out = run(ninja, tree, 7200, env, log)
    if code != 0:
        sys.exit(f"mutate: the unmutated copy does not build:\n{out[-3000:]}")
    print(f"mutate: built in {time.time() - t0:.0f}s", flush=True)

    binary = str(build / "loom_tests")

    def baseline(m):
        """The mutant's subset on the unmutated copy: None when it passes, else why not."""
        code, out = run([binary, f"--gtest_filter={m.tests}", "--gtest_brief=1"], tree,
                        args.test_timeout, dict(env, **m.env), log)
        if code != 0:
            return f"fails unmutated: {', '.join(failed_tests(out)[:4]) or f'exit {code}'}"
        if "[  PASSED  ] 0 tests" in out:
            return f"filter {m.tests} selects no test"
        return None

    deadline = None
    if args.deadline:
        hh, mm = (int(x) for x in args.deadline.split(":"))
        now = time.gmtime()
        deadline = time.time() + ((hh * 60 + mm) - (now.tm_hour * 60 + now.tm_min)) * 60 - now.tm_sec
    rows = []
    for m in mutants:
        if deadline is not None and time.time() >= deadline:
            rows.append((m, "not run", f"past the --deadline {args.deadline} UTC", 0.0))
            print(f"mutate: {m.name:36s} not run (past {args.deadline} UTC)", flush=True)
            continue
        why = baseline(m)  # just before the mutant, so that --deadline cuts both
        if why is not None:
            rows.append((m, "baseline fails", why, 0.0))
            print(f"mutate: {m.name:36s} baseline fails: {why}", flush=True)
            continue
        path = tree / m.file
        original = path.read_text()
        path.write_text(original.replace(m.old, m.new, 1))
        start = time.time()
        try:
            code, out = run(ninja, tree, 3600, env, log)
            if code != 0:
                result, detail = "build error", out[-300:].replace("\n", " ")
            else:
                code, out = run([binary, f"--gtest_filter={m.tests}", "--gtest_brief=1"], tree,
                                args.test_timeout, dict(env, **m.env), log)
                failed = failed_tests(out)
                if code == 0:
                    result, detail = "SURVIVED", ""
                elif code == 124:
                    result, detail = "killed", "timeout"
                else:
                    result = "killed"
                    detail = ", ".join(failed[:4]) + (f" (+{len(failed) - 4})" if len(failed) > 4
                                                      else "") if failed else f"exit {code}"
        finally:
            path.write_text(original)
        took = time.time() - start
        # Rebuild unmutated now: the next mutant's baseline must not run this
        # mutant's binary (it did, and blamed the next mutant's tests).
        code, out = run(ninja, tree, 3600, env, log)
        if code != 0:
            sys.exit(f"mutate: the restored copy does not build:\n{out[-3000:]}")
        rows.append((m, result, detail, took))
        print(f"mutate: {m.name:36s} {result:12s} {took:5.0f}s  {detail}", flush=True)

    survived = [m.name for m, r, _, _ in rows if r not in ("killed", "not run")]  # + baseline
    not_run = [m.name for m, r, _, _ in rows if r == "not run"]
    f = io.StringIO()  # the table; written to --out (and with --write the committed file)
    f.write("# Mutation run (tools/mutate.py)\n\n")
    if args.tests_rev:
        f.write(f"Sources as checked out, **tests/ as of {args.tests_rev}**.\n\n")
    f.write(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit "
            f"{subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True, stdout=subprocess.PIPE).stdout.strip()}"
            f" (plus uncommitted changes, if any). {len(rows) - len(survived) - len(not_run)} of "
            f"{len(rows) - len(not_run)} mutants run killed"
            + (f"; {len(not_run)} not run (past --deadline)" if not_run else "") + ".\n\n")
    f.write("| mutant | file | what | tests run | result | failing tests | s |\n")
    f.write("|---|---|---|---|---|---|---|\n")
    for m, result, detail, took in rows:
        env_note = "".join(f" ({k}={v})" for k, v in m.env.items())
        f.write(f"| {m.name} | {m.file} | {m.what} | `{m.tests}`{env_note} | {result} | "
                f"{detail.replace('|', '/')} | {took:.0f} |\n")
    text = f.getvalue()
    outs = [pathlib.Path(args.out) if args.out else scratch / "mutate_result.md"]
    if args.write and COMMITTED_RESULT.resolve() not in [o.resolve() for o in outs]:
        outs.append(COMMITTED_RESULT)
    for out_path in outs:
        out_path.write_text(text)
    print(f"mutate: wrote {', '.join(map(str, outs))}; survived: {survived or 'none'}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
