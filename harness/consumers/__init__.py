"""What a Python consumer is given and what it hands on (pure): the API (``api.py``,
``linkinfo.py``), the worker protocol (``protocol.py``), how a call ended (``outcome.py``) and how
that becomes a report (``report.py``); the table of client adapters (``catalogue.py``)."""
