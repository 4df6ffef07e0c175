"""What the wire showed (pure): the proxy's timeline of one case and each connection's producer
stream as the judge's evidence. Written by the proxy, read by the judge and the reports."""
