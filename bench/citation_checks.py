"""Citation checks (citations/check.py) measured: how many citations come out supported,
unsupported and unchecked, and how often the verdict is right.

    python bench/citation_checks.py --hand            # hand-written answers over the built-in dataroom,
                                                      # each citation labelled by reading its source
    python bench/citation_checks.py RUN_OR_SWEEP ...  # real runs: job folders, or sweep folders holding them

For the hand set it prints each citation's verdict beside its label, the agreement, and the precision
of 'unsupported' (of the citations called unsupported, how many truly are) and of 'supported'. For
runs it prints each citation with its verdict and reason, to be read against the sources.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from searchbox.assets import BUILTIN_DATAROOM  # noqa: E402
from searchbox.grading.citation_scores import checked_citations  # noqa: E402
from searchbox.grading.recorded import RecordedRun  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.workspace import Workspace  # noqa: E402

LOAN = "03_legal/cobalt_ridge_loan_summary.pdf"
LITIGATION = "03_legal/litigation_summary_2025-12-15.docx"
CHURN_EMAIL = "07_correspondence/2025-11-04_q3_churn_correction.eml"
KPI = "02_financials/kpi_dashboard_2025.xlsx"
AMENDMENT = "03_legal/harwick_falls_amendment_1_2025.docx"
AUDIT = "02_financials/audit_report_FY2024.pdf"
LEASE = "03_legal/duluth_lease_abstract.txt"
BRANNOCK = "03_legal/brannock_manufacturing_and_supply_agreement_2023.pdf"

# (answer, the files its s1, s2, ... are whole-file reads of, the true label of each citation in
# reading order: S the source supports the sentence, U it does not). Written against the documents'
# text; the errors are the kinds small models make: a wrong figure, a right figure in the wrong
# relation, the wrong source, a claim the source does not make.
HAND: list[tuple[str, list[str], str]] = [
    ("The Cobalt Ridge Bank term loan of $6.0 million bears interest at the greater of prime plus 1.25% and "
     "8.50% [s1]. It matures on 30 June 2027 [s1]. Principal is repaid in 24 monthly payments of $250,000 [s1]. "
     "The loan carries a final payment fee of 5% [s1]. The lender is located in Duluth [s2].",
     [LOAN, LEASE], "SSSUU"),
    ("Aquanex Sensing GmbH sued Quillmoor in the District of Delaware on 9 August 2024 [s1]. Aquanex's last demand "
     "was $3.4 million plus a 4% royalty [s1]. Defence costs to 30 November 2025 were $1.27 million [s1]. "
     "The Pellicano case settled for $212,000 [s1]. A mediation is scheduled for 22 January 2026 [s1].",
     [LITIGATION], "SSSUS"),
    ("The Q3 board deck overstated trailing twelve-month gross revenue churn as 6.8% [s1]. The corrected figure is "
     "5.9% [s1][s2]. Cedar Hollow Municipal Utilities had been counted twice, adding $138,000 [s1]. "
     "Net revenue retention was 112% [s1].",
     [CHURN_EMAIL, KPI], "SSSSU"),
    ("Amendment No. 1 was made on 21 March 2025 [s1]. The Renewal Term runs from 1 April 2025 to 31 March 2027 [s1]. "
     "The notice period for non-renewal was lengthened to 180 days [s1]. The amendment was approved by the "
     "auditors [s2].",
     [AMENDMENT, AUDIT], "SSSU"),
    ("The Duluth headquarters lease at 410 Lakewalk Avenue expires on 31 May 2028 [s1]. There is one renewal option "
     "of five years, exercisable by 31 August 2027 [s1]. Base rent in lease year 5 is $26.45 per RSF, about "
     "$0.6 million a year [s1]. The landlord is Superior Shore Property Group [s1]. The tenant pays 41.3% of "
     "operating costs [s1].",
     [LEASE], "SSSUU"),
    ("Schedule A sets a unit price of $118.40 for the fully assembled TideLine 3 sensor [s1]. The MeterMesh gateway "
     "main board costs $212.00 [s1]. Prices are fixed until 31 December 2026 [s1]. Payment is due 60 days after "
     "the bill of lading [s2].",
     [BRANNOCK, LOAN], "SSUU"),
    ("Pellworth & Strand LLP audited the FY2024 consolidated financial statements and signed its report in "
     "Minneapolis on 28 March 2025 [s1]. Cash and cash equivalents were $25.9 million at 31 December 2024 [s1]. "
     "Total assets were $41.2 million [s1]. The auditors gave an unqualified opinion [s1].",
     [AUDIT], "SSUS"),
    ("Gross revenue churn for the twelve months to 30 September 2025 was 5.9% [s1].",
     [LEASE], "U"),
    ("There are no pending government investigations or product recalls [s1]. The company apologised for the error "
     "in the board deck [s2]. Management considers the litigation easily manageable [s1].",
     [LITIGATION, CHURN_EMAIL], "SSU"),
    ("| Term | Value |\n|---|---|\n| Facility | $6,000,000 term loan [s1] |\n"
     "| Warrant | 45,000 Series B shares at $8.68 [s1] |\n| Minimum liquidity | $5.0 million [s1] |\n"
     "| Shortfall fee | 15% of the unit price [s2] |\n| Prepayment fee | 3.0% before 1 March 2026 [s1] |",
     [LOAN, BRANNOCK], "SSSSU"),
]
_LABELS = {"S": "supported", "U": "unsupported"}


def hand() -> None:
    settings = Settings.resolve(retrieval_preset="packaged")
    rows: list[tuple[str, str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        job_dir = Path(tmp) / "job"
        create_job(job_dir, "hand-written answers", BUILTIN_DATAROOM, settings)
        for answer, files, labels in HAND:
            workspace = Workspace.open(job_dir, settings)
            for path in files:
                workspace.ledger.cite_range(f"dataroom/{path}", 1, 100_000, "")
            checks = workspace.check_citations(answer)["checks"]
            if len(checks) != len(labels):
                raise SystemExit(f"{len(checks)} citations but {len(labels)} labels in: {answer[:60]}")
            rows.extend((_LABELS[label], check["verdict"], check) for label, check in zip(labels, checks))
    for truth, verdict, check in rows:
        mark = "  " if verdict == truth else "≠ " if verdict != "unchecked" else "? "
        print(f"{mark}{truth:<11} {verdict:<11} {_score(check)} {check['id']} {check['sentence'][:70]!r}: {check['reason']}")
    _totals([verdict for _, verdict, _ in rows])
    pairs = Counter((truth, verdict) for truth, verdict, _ in rows)
    agree = sum(n for (truth, verdict), n in pairs.items() if truth == verdict)
    print(f"agreement with the labels: {agree} of {len(rows)} ({agree / len(rows):.0%}); "
          f"unchecked {sum(n for (_, v), n in pairs.items() if v == 'unchecked')}")
    for verdict in ("unsupported", "supported"):
        called = sum(n for (_, v), n in pairs.items() if v == verdict)
        right = pairs[(verdict, verdict)]
        truly = sum(n for (t, _), n in pairs.items() if t == verdict)
        print(f"precision of '{verdict}': {right} of {called}" + (f" ({right / called:.0%})" if called else "")
              + f"; recall: {right} of {truly} truly {verdict}")


def runs(folders: list[Path]) -> None:
    jobs = sorted({answer.parents[1] for folder in folders for answer in folder.glob("**/work/ANSWER.md")})
    verdicts: list[str] = []
    for job_dir in jobs:
        checks = checked_citations(RecordedRun.read(job_dir))["checks"]
        if checks:
            print(f"== {job_dir}")
        for check in checks:
            verdicts.append(check["verdict"])
            print(f"  {check['verdict']:<11} {_score(check)} {check['id']} {check['sentence'][:80]!r}: {check['reason']}")
    print(f"{len(jobs)} runs, {sum(1 for _ in verdicts)} citations")
    _totals(verdicts)


def _totals(verdicts: list[str]) -> None:
    counts = Counter(verdicts)
    total = len(verdicts) or 1
    print("  ".join(f"{v}: {counts[v]} ({counts[v] / total:.0%})" for v in ("supported", "unsupported", "unchecked")))


def _score(check: dict) -> str:
    return "  -  " if check["score"] is None else f"{check['score']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path, help="job folders, or folders holding them (a sweep)")
    parser.add_argument("--hand", action="store_true", help="the hand-written answers over the built-in dataroom")
    args = parser.parse_args()
    if args.hand:
        hand()
    if args.folders:
        runs(args.folders)
    if not (args.hand or args.folders):
        parser.error("give run folders, or --hand")


if __name__ == "__main__":
    main()
