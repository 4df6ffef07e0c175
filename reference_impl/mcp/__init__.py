"""MCP over Streamable HTTP, sans-IO: JSON-RPC messages, the server's sessions and streams, the
client's requests and readings of answers, and the checker that holds a client's view of a
session to the transport's promises. Bytes and values in, bytes and values out; the trio shells
are ``reference_impl/peers/mcp_server.py`` and ``mcp_client.py``."""
