"""Does "supported" mean the passage states the claim? The citation checker on hand-labelled (sentence,
passage) pairs over both datarooms (bench/data/support_pairs.jsonl: true paraphrases and near misses whose
figures and names all occur in the passage while it says something else).

    python bench/support_calibration.py            # the checker now and checker 3 (words alone), same pairs
    python bench/support_calibration.py --no-score # without the embedder's similarity score
    python bench/support_calibration.py --judge self [--set LLM_GGUF=packaged:qwen2.5-coder-0.5b]
    python bench/support_calibration.py --judge URL [--judge-model ID]
                                                   # and the checker with a judge (CITATION_JUDGE) beside them

Prints, for each checker: the precision of "supported" (of the pairs it calls supported, how many the
reader labelled supported), its recall, the near misses it called supported (each kind), and how often a
pair labelled contradicted is called so. With a judge, also the judge's own readings against the labels on
the pairs it read (agreement, false support, void readings) and its cost. `--list` prints every pair's
verdict and reason.
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
from searchbox.citations.check import CHECKER_VERSION, CitationCheck, check_answer  # noqa: E402
from searchbox.citations.judge import SupportJudge  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.workspace import Workspace  # noqa: E402

NOW = f"checker {CHECKER_VERSION}"
WITH_JUDGE = f"{NOW} + judge"

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


def checked(pairs: list[dict[str, Any]], support: Any, read_claims: bool,
            judge: SupportJudge | None = None) -> list[CitationCheck | None]:
    """Each pair's first citation as check_answer checks it (None: no citation read)."""
    out = []
    for pair in pairs:
        checks = check_answer(pair["sentence"], {"s1"}, lambda _id, p=pair: p["passage"], support, read_claims, judge)
        out.append(checks[0] if checks else None)
        if judge is not None:
            print(".", end="", flush=True, file=sys.stderr)
    return out


def verdicts(checks: list[CitationCheck | None]) -> list[tuple[str, str]]:
    return [(c.verdict, c.reason) if c else ("unchecked", "no citation read") for c in checks]


def judge_figures(pairs: list[dict[str, Any]], checks: list[CitationCheck | None]) -> str:
    """The judge's readings against the labels, on the pairs it read, and what they cost."""
    read = [(p, c.judge) for p, c in zip(pairs, checks) if c is not None and c.judge is not None]
    if not read:
        return "  the judge read no pair"
    agree = sum(p["label"] == j["verdict"] for p, j in read)
    agree_supported = sum((p["label"] == "supported") == (j["verdict"] == "supported") for p, j in read)
    said_supported = [p for p, j in read if j["verdict"] == "supported"]
    false_support = sum(p["label"] != "supported" for p in said_supported)
    near = sum(p["label"] != "supported" for p, _ in read)
    unknown = sum(j["verdict"] == "unknown" for _, j in read)
    void = sum(c.judge is not None and c.verdict_by.startswith("checker") and c.judge["verdict"] != "unknown"
               for c in checks if c is not None)
    seconds = sum(j["seconds"] for _, j in read)
    tokens_in, tokens_out = sum(j["prompt_tokens"] for _, j in read), sum(j["output_tokens"] for _, j in read)
    return (f"  the judge read {len(read)} pairs: its verdict is the label's on {agree} ({agree / len(read):.0%}), "
            f"supported or not as labelled on {agree_supported} ({agree_supported / len(read):.0%}); it "
            f"called {len(said_supported)} supported, {false_support} of them near misses (false support {false_support}/"
            f"{near} near misses read); unreadable replies {unknown}, void (quote not in the passage) {void}; cost "
            f"{seconds:.0f} s ({seconds / len(read):.1f} s a pair), {tokens_in:,} prompt and {tokens_out:,} output tokens")


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


def with_judge(pairs: list[dict[str, Any]], support: Any, args: argparse.Namespace) -> list[CitationCheck | None]:
    """The checker with the judge --judge names, its model opened as a run's would be (CITATION_JUDGE)."""
    from searchbox.llm.choice.connect import connect
    from searchbox.agent.support_judge import configured_judge
    from searchbox.settings import Settings

    overrides = dict(item.split("=", 1) for item in args.set)
    settings = Settings.resolve(**{k.lower(): v for k, v in overrides.items()}, citation_judge=args.judge,
                                citation_judge_model=args.judge_model)
    models = []

    def run_model() -> Any:
        models.append(connect(settings, on_note=lambda note: print(f"note: {note}", file=sys.stderr)))
        return models[-1]
    judge, client = configured_judge(settings, run_model)
    assert judge is not None
    print(f"judge: {judge.name}", file=sys.stderr)
    try:
        return checked(pairs, support, True, judge)
    finally:
        for model in [*models, *([client] if client else [])]:
            model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-score", action="store_true", help="check without the embedder's similarity")
    parser.add_argument("--list", action="store_true", help="every pair's verdicts and reasons")
    parser.add_argument("--judge", help="also the checker with this CITATION_JUDGE: self (the configured model: "
                        "LLAMA_URL, else LLM_GGUF, offline the packaged 1.5B) or an endpoint URL")
    parser.add_argument("--judge-model", default="", help="the model id sent to a --judge URL")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a knob for the judge's model")
    args = parser.parse_args()
    pairs = load_pairs()
    with tempfile.TemporaryDirectory() as scratch:
        support = None if args.no_score else support_scorer(Path(scratch))
        results = {name: checked(pairs, support, read) for name, read in ((f"{NOW} (claims)", True),
                                                                           ("checker 3 (words)", False))}
        if args.judge:
            results[WITH_JUDGE] = with_judge(pairs, support, args)
    for room in ("all", "builtin", "pydocs"):
        chosen = [i for i, p in enumerate(pairs) if room == "all" or p["dataroom"] == room]
        print(f"\n{room}: {len(chosen)} pairs, {sum(pairs[i]['label'] == 'supported' for i in chosen)} labelled supported")
        for name, checks in results.items():
            got = verdicts(checks)
            s = summary([pairs[i] for i in chosen], [got[i] for i in chosen])
            precision = f"{s['hits']}/{s['supported_called']}" + (f" ({s['precision']:.0%})" if s["precision"] is not None else "")
            recall = f"{s['hits']}/{s['true']}" + (f" ({s['recall']:.0%})" if s["recall"] is not None else "")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(s["by_kind"].items())) or "none"
            print(f"  {name}: supported precision {precision}, recall {recall}; near misses called supported "
                  f"{s['near_misses_supported']}/{s['near_misses']} ({kinds}); contradicted found "
                  f"{s['contradicted_found']}/{s['contradicted']}; verdicts {dict(s['verdicts'])}")
            if name == WITH_JUDGE:
                print(judge_figures([pairs[i] for i in chosen], [checks[i] for i in chosen]))
    if args.list:
        for i, pair in enumerate(pairs):
            print(f"\n{pair['id']} [{pair['label']}, {pair['kind']}] {pair['sentence']}")
            for name, checks in results.items():
                verdict, reason = verdicts([checks[i]])[0]
                print(f"  {name}: {verdict}: {reason}")


if __name__ == "__main__":
    main()
