"""The files a run leaves: the report folder (``writer.py``), pcaps of cases (``pcap.py``) and of
recordings (``capture.py``). The pages themselves are rendered by ``harness.reports`` (pure)."""
