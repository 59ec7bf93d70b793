"""Runs the commands of a document's section against a real node and checks what each prints.

Usage: quickstart.py FILE [SECTION] [--show]   (SECTION: a `## ` heading, default "Quick start")

The section's ```console blocks hold `$ command` lines, each followed by the output it prints.
A line `…` in an output stands for any number of lines; without one at the start (or end), the
shown lines must be the first (or last) ones printed. A shown line ending in `…` stands for every
printed line that begins with the rest. Ids, times and decimals differ from run to run, so both
sides are compared with those replaced by placeholders and runs of spaces collapsed. A command
shown without output must print something, and `name=$(...)` must set `name`.

The node is started here the way `hindsight serve` starts on its embedded default, in a fresh
directory, on free ports: `HINDSIGHT_SERVER` points the CLI at it, and the default addresses in
the commands (127.0.0.1:7400 for gRPC, 127.0.0.1:7401 for HTTP) are replaced by its own. `--show`
prints what each command printed.
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import real_node  # noqa: E402

ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b")
DECIMAL = re.compile(r"\b\d+\.\d+\b")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=\$\(")
SETTING = re.compile(r"^(export )?[A-Za-z_][A-Za-z0-9_]*=")
ANY = "…"


def normalise(line):
    line = TIME.sub("<time>", line)
    line = ULID.sub("<id>", line)
    line = DECIMAL.sub("<n>", line)
    return " ".join(line.split())


def section_of(readme, heading):
    text = Path(readme).read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def steps(section):
    """[(command, [shown output lines])] of every console block, in order."""
    found = []
    for block in re.findall(r"```console\n(.*?)```", section, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif found:
                found[-1][1].append(line)
            elif line.strip():
                raise SystemExit(f"output before any command in a console block: {line!r}")
    return found


def same(shown, printed):
    if shown.endswith(ANY) and shown != ANY:
        return printed.startswith(shown[: -len(ANY)].rstrip())
    return shown == printed


def matches(shown, printed):
    """Whether the printed lines are what the shown lines say, `…` standing for any lines."""
    chunks, chunk = [], []
    for line in shown:
        if line.strip() == ANY:
            chunks.append(chunk)
            chunk = []
        else:
            chunk.append(normalise(line))
    chunks.append(chunk)
    printed = [normalise(line) for line in printed]
    anchored_start, anchored_end = bool(chunks[0]), bool(chunks[-1])
    at = 0
    for i, chunk in enumerate(chunks):
        if not chunk:
            continue
        candidates = [at] if (i == 0 and anchored_start) else range(at, len(printed) - len(chunk) + 1)
        for begin in candidates:
            window = printed[begin : begin + len(chunk)]
            if len(window) == len(chunk) and all(same(a, b) for a, b in zip(chunk, window)):
                at = begin + len(chunk)
                break
        else:
            return False, f"not printed: {chunk[0]!r}" + (f" (and {len(chunk) - 1} more)" if len(chunk) > 1 else "")
    if anchored_end and at != len(printed):
        return False, f"printed more after the last shown line: {printed[at]!r}"
    return True, ""


def main():
    args = [a for a in sys.argv[1:] if a != "--show"]
    show = "--show" in sys.argv[1:]
    readme = args[0] if args else "README.md"
    heading = args[1] if len(args) > 1 else "Quick start"
    binary = os.environ["HINDSIGHT_BIN"]
    plan = steps(section_of(readme, heading))
    if not plan:
        raise SystemExit(f"{readme}: no `$` commands in its section {heading!r}")
    with tempfile.TemporaryDirectory(prefix="hindsight-readme-") as tmp:
        workdir = Path(tmp)
        node, server, http = real_node.start(binary, workdir)
        try:
            out = workdir / "steps"
            out.mkdir()
            script = ["set -u"]
            for i, (command, _) in enumerate(plan):
                command = command.replace("127.0.0.1:7401", http).replace("127.0.0.1:7400", server)
                script.append(f"{{ {command} ; }} >{out}/{i}.out 2>{out}/{i}.err; echo $? >{out}/{i}.rc")
                assigned = ASSIGNMENT.match(command)
                if assigned:
                    script.append(f'printf %s "${{{assigned.group(1)}:-}}" >{out}/{i}.value')
            env = dict(os.environ, HINDSIGHT_SERVER=server)
            # The README's `hindsight` is whichever binary is tested, first on the PATH.
            env["PATH"] = f"{Path(binary).resolve().parent}{os.pathsep}{env['PATH']}"
            subprocess.run(["bash", "-c", "\n".join(script)], cwd=workdir, env=env, check=False, timeout=600)
            failures = 0
            for i, (command, shown) in enumerate(plan):
                rc_file = out / f"{i}.rc"
                rc = rc_file.read_text().strip() if rc_file.exists() else "not run"
                printed = (out / f"{i}.out").read_text() if (out / f"{i}.out").exists() else ""
                errors = (out / f"{i}.err").read_text() if (out / f"{i}.err").exists() else ""
                problem = ""
                if rc != "0":
                    problem = f"exit status {rc}: {errors.strip()}"
                elif ASSIGNMENT.match(command):
                    if not (out / f"{i}.value").read_text():
                        problem = f"set nothing: {errors.strip()}"
                elif shown:
                    ok, why = matches(shown, printed.splitlines())
                    if not ok:
                        problem = f"{why}\n--- printed:\n{printed}"
                elif not SETTING.match(command) and not printed.strip():
                    problem = "printed nothing"
                print(f"{'ok ' if not problem else 'FAIL'}  $ {command}")
                if show:
                    print("      " + (printed + errors).rstrip().replace("\n", "\n      "))
                if problem:
                    failures += 1
                    print("      " + problem.replace("\n", "\n      "))
            print(f"{len(plan) - failures} of {len(plan)} commands of {heading!r} print what {readme} shows")
            return 1 if failures else 0
        finally:
            real_node.stop(node)


if __name__ == "__main__":
    sys.exit(main())
