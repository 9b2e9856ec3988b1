#!/usr/bin/env python3
"""nDCG@10, Recall@10 and MRR@10 of SQLite FTS5 on a BEIR query set: the baseline that
`kbtools eval` is measured against (issue 39: the default mode must beat FTS5 unicode61 by 0.05).

The FTS5 table and the query are the ones benches/compare.py times (path UNINDEXED, title, body;
frontmatter stripped; the query's tokens, lowercased, quoted and joined with OR; ORDER BY bm25),
so the quality figure and the speed figure are of the same baseline. The metrics follow
src/eval.rs: graded gains, gain / log2(rank + 1), a qrel doc id `<id>` is page `pages/<id>.md`.

Usage: python3 benches/fts5_eval.py BUNDLE QUERIES.jsonl QRELS.tsv [--tokenizer unicode61|trigram]
                                   [--json]
Prints one line (or a JSON object) with the three means and the number of queries that found
nothing.
"""
import argparse, json, math, os, sqlite3, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import FTS_BUILD, FTS_MATCH  # noqa: E402  (one definition of the baseline)

exec(FTS_MATCH)  # defines match_expr(q), as the timed query process does


def load_qrels(path):
    judged = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and parts[0] == "query-id" or len(parts) < 3:
                continue
            judged.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return judged


def ndcg(ranked, judged, k=10):
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if judged.get(d, 0) > 0)
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked, judged, k=10):
    relevant = [d for d, g in judged.items() if g > 0]
    return sum(1 for d in ranked[:k] if judged.get(d, 0) > 0) / len(relevant) if relevant else 0.0


def mrr(ranked, judged, k=10):
    for i, d in enumerate(ranked[:k]):
        if judged.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("queries")
    ap.add_argument("qrels")
    ap.add_argument("--tokenizer", default="unicode61", choices=["unicode61", "trigram"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    pages = os.path.join(args.bundle, "pages")
    if not os.path.isdir(pages):
        pages = args.bundle  # a plain folder: every .md under it
    qrels = load_qrels(args.qrels)
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "fts.db")
        extra = [] if args.tokenizer == "unicode61" else ["trigram"]
        subprocess.run([sys.executable, "-c", FTS_BUILD, pages, db, *extra], check=True)
        con = sqlite3.connect(db)
        rows = []
        with open(args.queries, encoding="utf-8") as fh:
            for line in fh:
                q = json.loads(line)
                if q["_id"] not in qrels:
                    continue
                expr = match_expr(q["text"])
                ranked = []
                if expr:
                    found = con.execute(
                        "SELECT path FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (expr,)
                    ).fetchall()
                    ranked = [p[len("pages/"):-len(".md")] for (p,) in found]
                judged = qrels[q["_id"]]
                rows.append((ndcg(ranked, judged), recall(ranked, judged), mrr(ranked, judged), not ranked))
    n = len(rows) or 1
    out = {
        "tokenizer": args.tokenizer,
        "queries": len(rows),
        "ndcgAt10": round(sum(r[0] for r in rows) / n, 4),
        "recallAt10": round(sum(r[1] for r in rows) / n, 4),
        "mrrAt10": round(sum(r[2] for r in rows) / n, 4),
        "empty": sum(1 for r in rows if r[3]),
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(" ".join(f"{k} {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
