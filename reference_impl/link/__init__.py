"""The reference link as one description (``spec.py``), the consumer's pure core (``session.py``:
bytes in, verdict and report out) and its settings (``consumer_config.py``). Pure."""
