"""Grading a finished run (design §4), after it and apart from it: what the run recorded in its job folder
(recorded.py) is graded against a question's expectations by graders behind one interface (grader.py):
the must-facts' lexical matcher (lexical.py over fact_match.py), the citations as the run checked them
(citation_scores.py) and an optional LLM judge of the answer (answer_judge.py); score.py puts their
verdicts into one score record. The run's own decisions (its citation check with the support judge, its
no_answer stop, the echoes of the harness it leaves out) stay with the run: a grader reads them, and checks
again only what a newer checker version must."""
