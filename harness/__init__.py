"""tearline harness: scenarios, the fault proxy, the runner and the judge."""
