"""MCP servers as tools of a Brim agent.

`hub.McpHub` holds one conversation's servers (started lazily, stopped with the
conversation); `connection.McpConnection` is one server over the official `mcp` SDK;
`launch` starts a stdio server so that it never outlives Brim; `catalog` turns a server's
tools into Brim tools named `server__tool`; `deferred` is the always-on `search_tools` and
`call_tool` pair that keeps deferred schemas out of the request; `tiering` decides which
servers go eager; `faults` words what went wrong as error events.
"""
