"""Consumer functions in warm worker processes: the pool (``pool.py``), the worker's main
(``worker.py``), the call (``calling.py``), the runner's entry point (``invoke.py``) and a function
as a consumer program (``program.py``)."""
