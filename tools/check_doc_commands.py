#!/usr/bin/env python3
"""Runs every `loom ...` command of the READMEs and docs/ as written, on tiny inputs.

  python3 tools/check_doc_commands.py [--build build] [--list] [--keep DIR] [FILE.md ...]

Extracts the commands from the fenced ```sh / ```bash blocks of README.md,
docs/*.md and examples/README.md (lines starting `build/loom`, `loom` or an
`mpirun ... loom`, joined across `\\` continuations) and runs each one with
bash in a sandbox directory, the commands of one file in order (so a later
command may use what an earlier one wrote, as a reader would). The sandbox
holds what the docs refer to: assets/ and tests/ of the repository (linked),
build/loom (the built CLI), and tiny stand-ins for the files a reader brings
(corpus.txt, texts.jsonl, out/gpt2_austen/austen.txt, examples/README.md's
out/ex/corpus.txt, the fetched fine-tune data in assets/finetune/,
path/to/Qwen2-0.5B), made with `loom train` itself. Other lines are not run:
shell set-up (`mkdir`, `head`, `scripts/...`) and the `build/example_*`
programs, which their CTests run on tiny inputs (tests/examples/examples.sh).

Each command runs as written, with a few flags set so it finishes in seconds
(a flag the command already has gets the smaller value): `train` gets
`--max_steps 2 --max_train_samples 16 --max_eval_samples 8` (and
`--save_steps 1` where it gives `--save_steps`, so a later resume finds a
checkpoint), `evaluate` `--max_eval_samples 8`, `generate`
`--max_new_tokens 4`. A command must exit 0.

A command that cannot run as written is marked in the doc itself: a shell
comment on it containing "illustrative" (`cmd ...  # illustrative: ...`), or
elided flags written as a bare `...` argument. Those are listed, not run.

Shown output is compared. In a fence of any language, a line `$ loom ...`
(or `$ build/loom ...`) is a command and the lines after it, up to the next
`$ ` line or the fence's end, are what it prints (stdout and stderr). It runs
as the others do, shrunk, and its output must hold the shown lines in order:
a shown line equals an output line, or, where it contains `...`, its pieces
appear in that line in order; a shown line that is only `...` skips any
number of lines. Shown output starting `loom: error:` means the command must
exit 1; otherwise 0.
Exit status 1 when any command fails; the log of each is printed on failure.
"""
import argparse
import glob
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHRINK = {
    "train": ["--max_steps", "2", "--max_train_samples", "16", "--max_eval_samples", "8"],
    "evaluate": ["--max_eval_samples", "8"],
    "generate": ["--max_new_tokens", "4"],
}
# Flags lowered only where a command gives them: with --max_steps 2, a
# --save_steps 20 run would write no checkpoint for a later resume to find.
SHRINK_IF_GIVEN = {"train": ["--save_steps", "1"]}


def doc_files(args_files):
    if args_files:
        return [pathlib.Path(f).resolve() for f in args_files]
    return [ROOT / "README.md", *sorted(pathlib.Path(p) for p in glob.glob(str(ROOT / "docs" / "*.md"))),
            ROOT / "examples" / "README.md"]


def is_loom_command(line):
    words = line.split()
    if not words:
        return False
    if words[0] in ("loom", "build/loom"):
        return True
    return words[0] == "mpirun" and any(w.endswith("loom") for w in words)


def shown_commands(first_line, lines):
    """(line number, command, comment, shown output lines) of the `$ loom ...` lines of a fence."""
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("$ ") or not is_loom_command(line[2:].strip()):
            continue
        shown = []
        for later in lines[i + 1:]:
            if later.startswith("$ "):
                break
            shown.append(later)
        while shown and not shown[-1].strip():
            shown.pop()
        code, comment = split_comment(line[2:].strip())
        out.append((first_line + i, code, comment, shown))
    return out


def commands_of(path):
    """(line number, command text, comment, shown output or None) of each loom command:
    those of sh/bash fences (output not shown), and the `$ ` lines of other fences."""
    text = path.read_text()
    out = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if m.group(1) not in ("sh", "bash", "shell"):
            out += shown_commands(text[: m.start(2)].count("\n") + 1, m.group(2).split("\n"))
            continue
        first_line = text[: m.start(2)].count("\n") + 1
        lines = m.group(2).split("\n")
        i = 0
        while i < len(lines):
            start = i
            cmd = lines[i]
            while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            cmd = cmd.strip()
            if not is_loom_command(cmd):
                continue
            code, comment = split_comment(cmd)
            out.append((first_line + start, code, comment, None))
    return sorted(out, key=lambda c: c[0])


def line_matches(shown, actual):
    """A shown output line against a printed one: equal, or its `...`-separated pieces in order."""
    if "..." not in shown:
        return shown.rstrip() == actual.rstrip()
    at = 0
    for piece in shown.split("..."):
        k = actual.find(piece, at)
        if k < 0:
            return False
        at = k + len(piece)
    return True


def output_mismatch(shown, printed):
    """None when `printed` (lines) holds `shown` in order (`...` lines skip any), else the first
    shown line not found."""
    lines = printed.splitlines()
    k = 0
    for i, want in enumerate(shown):
        if want.strip() == "...":
            continue
        skipping = i > 0 and shown[i - 1].strip() == "..."
        while k < len(lines) and not line_matches(want, lines[k]):
            if not skipping and i > 0:
                return want
            k += 1
        if k == len(lines):
            return want
        k += 1
    return None


def split_comment(cmd):
    """The command without its trailing `# ...` comment (outside quotes), and the comment."""
    quote = None
    for j, c in enumerate(cmd):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (j == 0 or cmd[j - 1].isspace()):
            return cmd[:j].strip(), cmd[j + 1:].strip()
    return cmd, ""


def illustrative(code, comment):
    return "illustrative" in comment.lower() or "..." in shlex.split(code)


def shrunk(code):
    """`code` with SHRINK's flags appended before any redirection or pipe."""
    words = shlex.split(code)
    cut = next((k for k, w in enumerate(words) if re.match(r"^(\d?>|>>|<|\|)", w)), len(words))
    try:
        sub = words[words.index(next(w for w in words if w.endswith("loom"))) + 1]
    except (StopIteration, IndexError):
        sub = ""
    head = words[:cut]
    flags = SHRINK.get(sub, [])
    given = SHRINK_IF_GIVEN.get(sub, [])
    for flag, value in list(zip(flags[::2], flags[1::2])) + list(zip(given[::2], given[1::2])):
        if flag in head and head.index(flag) + 1 < len(head):  # `loom generate` takes one value
            k = head.index(flag) + 1
            head[k] = str(min(int(head[k]), int(value))) if head[k].isdigit() else value
        elif flag not in given:
            head += [flag, value]
    return shlex.join(head) + ("" if cut == len(words) else " " + " ".join(words[cut:]))


def run(cmd, cwd, log):
    # `loom ...` as docs write it (an installed loom) is the sandbox's build/loom.
    env = dict(os.environ, PATH=f"{pathlib.Path(cwd) / 'build'}{os.pathsep}{os.environ.get('PATH', '')}")
    with open(log, "w") as f:
        return subprocess.run(["bash", "-c", cmd], cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                              timeout=600, env=env).returncode


def make_sandbox(box, loom):
    """The files the docs refer to, tiny."""
    (box / "build").mkdir(parents=True)
    (box / "build" / "loom").symlink_to(loom)
    (box / "tests").symlink_to(ROOT / "tests")
    (box / "assets").mkdir()
    for entry in (ROOT / "assets").iterdir():
        if entry.name != "finetune":
            (box / "assets" / entry.name).symlink_to(entry)
    austen = (ROOT / "assets" / "corpora" / "austen" / "prideprejudice.txt").read_text().splitlines()
    text = "\n".join(austen[:300]) + "\n"
    (box / "corpus.txt").write_text(text)
    (box / "out" / "gpt2_austen").mkdir(parents=True)
    (box / "out" / "gpt2_austen" / "austen.txt").write_text(text)
    (box / "out" / "ex").mkdir(parents=True)  # examples/README.md's `head -n 300 ... > out/ex/corpus.txt`
    (box / "out" / "ex" / "corpus.txt").write_text(text)
    (box / "texts.jsonl").write_text('"It is a truth universally acknowledged"\n'
                                     '"Emma Woodhouse, handsome, clever, and rich"\n')
    data = box / "assets" / "finetune" / "data"
    data.mkdir(parents=True)
    for split in ("train", "eval"):
        rows = ["sentence,label"]
        for i in range(8):
            rows += [f"a wonderful and moving film {i},1", f"a dull and tiresome film {i},0"]
        (data / f"{split}.csv").write_text("\n".join(rows) + "\n")
    tiny = ["--train_file", str(box / "corpus.txt"), "--max_steps", "1", "--max_train_samples", "8",
            "--report_to", "none", "--overwrite_output_dir"]
    stand_ins = [
        ["--model_type", "bert", "--task", "masked-lm", "--tokenizer_name",
         str(ROOT / "assets/tokenizers/bert-base-uncased"), "--config_overrides",
         "num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=2,"
         "max_position_embeddings=64", "--max_seq_length", "32",
         "--output_dir", str(box / "assets/finetune/minilm")],
        ["--model_type", "qwen2", "--tokenizer_name", str(ROOT / "assets/tokenizers/gpt2"),
         "--config_overrides", "num_hidden_layers=1,hidden_size=16,intermediate_size=32,"
         "num_attention_heads=4,num_key_value_heads=2,max_position_embeddings=256",
         "--block_size", "32", "--output_dir", str(box / "path/to/Qwen2-0.5B")],
    ]
    for flags in stand_ins:
        cmd = shlex.join([str(loom), "train", *flags, *tiny])
        if run(cmd, box, box / "stand_in.log") != 0:
            sys.stdout.write((box / "stand_in.log").read_text())
            raise SystemExit(f"check_doc_commands: making a stand-in failed: {cmd}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build", help="loom build directory (holds loom)")
    p.add_argument("--list", action="store_true", help="list the commands, run nothing")
    p.add_argument("--keep", help="make the sandboxes under this directory and keep them")
    p.add_argument("files", nargs="*",
                   help="markdown files (default: README.md, docs/*.md, examples/README.md)")
    a = p.parse_args()
    loom = (ROOT / a.build / "loom").resolve() if not os.path.isabs(a.build) else pathlib.Path(a.build) / "loom"
    files = doc_files(a.files)
    found = [(f, *c) for f in files for c in commands_of(f)]
    if a.list:
        for f, line, code, comment, _ in found:
            mark = "illustrative" if illustrative(code, comment) else "run"
            print(f"{f.relative_to(ROOT)}:{line}: [{mark}] {code}")
        return 0
    if not loom.exists():
        print(f"check_doc_commands: {loom} is not built")
        return 1
    base = pathlib.Path(a.keep) if a.keep else pathlib.Path(tempfile.mkdtemp(prefix="loom_doc_"))
    ran = skipped = failed = 0
    try:
        for f in files:
            cmds = [c for c in found if c[0] == f]
            if not cmds:
                continue
            box = base / "_".join(f.relative_to(ROOT).with_suffix("").parts)  # README, examples_README
            shutil.rmtree(box, ignore_errors=True)
            make_sandbox(box, loom)
            for k, (_, line, code, comment, shown) in enumerate(cmds):
                where = f"{f.relative_to(ROOT)}:{line}"
                if illustrative(code, comment):
                    print(f"illustrative  {where}: {code}")
                    skipped += 1
                    continue
                cmd = shrunk(code)
                log = box / f"cmd{k}.log"
                rc = run(cmd, box, log)
                ran += 1
                want_rc = 1 if shown and shown[0].startswith("loom: error:") else 0
                wrong = f"exit {rc}, not {want_rc}" if rc != want_rc else None
                if shown is not None and wrong is None:
                    missing = output_mismatch(shown, log.read_text())
                    wrong = None if missing is None else f"the shown line {missing!r} is not printed"
                print(f"{'FAILED' if wrong else ('ok, output' if shown else 'ok'):12}  {where}: {cmd}")
                if wrong:
                    failed += 1
                    print(f"  {wrong}")
                    sys.stdout.write(log.read_text()[-4000:])
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"check_doc_commands: {ran} run, {failed} failed, {skipped} illustrative")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
