#!/usr/bin/env python3
"""Derive the BEIR files of the markdownlint dev set from questions-dev.jsonl and check them.

    python3 benches/devsets/markdownlint/derive_and_check.py [FOLDER]

questions-dev.jsonl is the source. This writes queries-dev.jsonl ({"_id", "text", "metadata"})
and qrels/dev.tsv (query-id, corpus-id, score; corpus-id X is the page pages/X.md, as
`kbtools eval` reads it) next to this script. With FOLDER (the folder built by make_folder.sh)
it also checks that every judged page exists there. It always checks that every line parses,
ids are unique, every question has a grade-2 page, grades are 1 or 2, and the derived files match.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    sys.exit(f"derive_and_check.py: {msg}")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else None
    questions = []
    with open(os.path.join(HERE, "questions-dev.jsonl"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"questions-dev.jsonl:{n}: {e}")
            for key in ("id", "lang", "difficulty", "question", "relevant", "answer"):
                if key not in q:
                    fail(f"questions-dev.jsonl:{n}: missing {key}")
            questions.append(q)
    ids = [q["id"] for q in questions]
    if len(set(ids)) != len(ids):
        fail("duplicate question ids")
    queries_lines, qrels_lines = [], ["query-id\tcorpus-id\tscore"]
    for q in questions:
        rel = q["relevant"]
        if 2 not in rel.values():
            fail(f"{q['id']}: no page of grade 2")
        for page, grade in rel.items():
            if grade not in (1, 2):
                fail(f"{q['id']}: grade {grade} for {page}")
            if not (page.startswith("pages/") and page.endswith(".md")):
                fail(f"{q['id']}: {page} is not pages/<path>.md")
            doc = page[len("pages/"):-len(".md")]
            if folder and not os.path.isfile(os.path.join(folder, doc + ".md")):
                fail(f"{q['id']}: {doc}.md is not in {folder}")
            qrels_lines.append(f"{q['id']}\t{doc}\t{grade}")
        queries_lines.append(json.dumps(
            {"_id": q["id"], "text": q["question"],
             "metadata": {"lang": q["lang"], "difficulty": q["difficulty"]}},
            ensure_ascii=False))
    os.makedirs(os.path.join(HERE, "qrels"), exist_ok=True)
    with open(os.path.join(HERE, "queries-dev.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(queries_lines) + "\n")
    with open(os.path.join(HERE, "qrels", "dev.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(qrels_lines) + "\n")
    # Read the written files back as kbtools would.
    with open(os.path.join(HERE, "queries-dev.jsonl"), encoding="utf-8") as f:
        back = [json.loads(line) for line in f if line.strip()]
    if [b["_id"] for b in back] != ids:
        fail("queries-dev.jsonl does not match the questions")
    with open(os.path.join(HERE, "qrels", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    if any(len(r) != 3 or r[0] not in ids for r in rows):
        fail("qrels/dev.tsv has a bad row")
    g2 = sum(1 for r in rows if r[2] == "2")
    langs = {}
    for q in questions:
        langs[q["lang"]] = langs.get(q["lang"], 0) + 1
    print(f"derive_and_check.py: {len(questions)} questions {langs}, {len(rows)} judgments "
          f"({g2} of grade 2, {len(rows) - g2} of grade 1)"
          + (f", all pages found in {folder}" if folder else ", pages not checked (no FOLDER)"))


if __name__ == "__main__":
    main()
