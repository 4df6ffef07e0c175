"""The control API served: Hypercorn's trio worker in front of ``harness.control``'s pure API,
and the runtime that runs its proxies."""
