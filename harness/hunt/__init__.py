"""``tearline hunt``'s plans (pure): what a plan does to a link, where consumers break
(``landmarks.py``), what a failure is (``diagnosis.py``), the scenario file a plan becomes. The
search that draws and runs plans is ``harness.search``."""
