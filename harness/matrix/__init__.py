"""The conformance matrix (pure): which cases a client adapter runs (``sampling.py``), the
matrix of grades (``grid.py``) and its page (``page.py``). Run by ``harness.running.clients``."""
