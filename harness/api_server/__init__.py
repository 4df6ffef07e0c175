"""The control API served: an HTTP/1.1 server (h11 on trio) in front of ``harness.control``'s
pure API, and the runtime that runs its proxies."""
