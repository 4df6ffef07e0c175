"""``tearline hunt``'s search: Hypothesis draws fault plans (``strategies.py``), its engine runs
and shrinks them (``engine.py``), each plan run as real cases (``trials.py``). Hypothesis
loads trio, so the strategies live here with the shell although they do no I/O."""
