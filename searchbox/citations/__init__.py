"""Citations, one leaf package that the tools, the records, the workspace and the grader all call: the
source ledger (ids s1, s2, ... the tools record), the [sN] marker grammar, fact normalisation and
extraction, and the check of each citation against its source's text. It imports nothing of the
project above settings, so no caller reaches back up through it."""
