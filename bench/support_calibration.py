"""Does "supported" mean the passage states the claim? The citation checker on hand-labelled (sentence,
passage) pairs over both datarooms (bench/data/support_pairs.jsonl: true paraphrases and near misses whose
figures and names all occur in the passage while it says something else).

    python bench/support_calibration.py            # the checker now and checker 3 (words alone), same pairs
    python bench/support_calibration.py --no-score # without the embedder's similarity score

Prints, for each checker: the precision of "supported" (of the pairs it calls supported, how many the
reader labelled supported), its recall, the near misses it called supported (each kind), and how often a
pair labelled contradicted is called so. `--list` prints every pair's verdict and reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from searchbox.assets import BUILTIN_DATAROOM  # noqa: E402
from searchbox.citations.check import check_answer  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.workspace import Workspace  # noqa: E402

PAIRS = Path(__file__).resolve().parent / "data" / "support_pairs.jsonl"


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def support_scorer(scratch: Path) -> Any:
    """The packaged MiniLM's cosine, as the app scores a citation (RETRIEVAL_PRESET=packaged)."""
    settings = Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(scratch / "cache"))
    create_job(scratch / "job", "calibration", BUILTIN_DATAROOM, settings)
    encoder = Workspace.open(scratch / "job", settings).encoder

    def support(sentence: str, passages: list[str]) -> list[float]:
        query = encoder.encode([sentence], "query")[0]
        return [float(v) for v in encoder.encode(passages, "passage") @ query]
    return support


def verdicts(pairs: list[dict[str, Any]], support: Any, read_claims: bool) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        checks = check_answer(pair["sentence"], {"s1"}, lambda _id, p=pair: p["passage"], support, read_claims)
        first = checks[0] if checks else None
        out.append((first.verdict, first.reason) if first else ("unchecked", "no citation read"))
    return out


def summary(pairs: list[dict[str, Any]], got: list[tuple[str, str]]) -> dict[str, Any]:
    called = [v for v, _ in got]
    true = [p["label"] == "supported" for p in pairs]
    said = [v == "supported" for v in called]
    hits = sum(t and s for t, s in zip(true, said))
    misses = Counter(p["kind"] for p, s, t in zip(pairs, said, true) if s and not t)
    contradicted = [v for p, v in zip(pairs, called) if p["label"] == "contradicted"]
    return {"pairs": len(pairs), "supported_called": sum(said), "precision": hits / sum(said) if any(said) else None,
            "recall": hits / sum(true) if any(true) else None, "true": sum(true), "hits": hits,
            "near_misses_supported": sum(misses.values()), "near_misses": len(pairs) - sum(true),
            "by_kind": dict(misses), "contradicted_found": contradicted.count("contradicted"),
            "contradicted": len(contradicted), "verdicts": Counter(called)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-score", action="store_true", help="check without the embedder's similarity")
    parser.add_argument("--list", action="store_true", help="every pair's verdicts and reasons")
    args = parser.parse_args()
    pairs = load_pairs()
    with tempfile.TemporaryDirectory() as scratch:
        support = None if args.no_score else support_scorer(Path(scratch))
        results = {name: verdicts(pairs, support, read) for name, read in (("checker 4 (claims)", True),
                                                                            ("checker 3 (words)", False))}
    for room in ("all", "builtin", "pydocs"):
        chosen = [i for i, p in enumerate(pairs) if room == "all" or p["dataroom"] == room]
        print(f"\n{room}: {len(chosen)} pairs, {sum(pairs[i]['label'] == 'supported' for i in chosen)} labelled supported")
        for name, got in results.items():
            s = summary([pairs[i] for i in chosen], [got[i] for i in chosen])
            precision = f"{s['hits']}/{s['supported_called']}" + (f" ({s['precision']:.0%})" if s["precision"] is not None else "")
            recall = f"{s['hits']}/{s['true']}" + (f" ({s['recall']:.0%})" if s["recall"] is not None else "")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(s["by_kind"].items())) or "none"
            print(f"  {name}: supported precision {precision}, recall {recall}; near misses called supported "
                  f"{s['near_misses_supported']}/{s['near_misses']} ({kinds}); contradicted found "
                  f"{s['contradicted_found']}/{s['contradicted']}; verdicts {dict(s['verdicts'])}")
    if args.list:
        for i, pair in enumerate(pairs):
            print(f"\n{pair['id']} [{pair['label']}, {pair['kind']}] {pair['sentence']}")
            for name, got in results.items():
                print(f"  {name}: {got[i][0]}: {got[i][1]}")


if __name__ == "__main__":
    main()
