"""MCP servers as tools of a Brim agent.

`hub.McpHub` holds one conversation's servers (each started at its first use, stopped with
the conversation); `listing_cache` keeps the tool list a server gave last, so a
conversation knows it without starting the server; `connection.McpConnection` is one
server over the official `mcp` SDK; `launch` starts a stdio server so that it never
outlives Brim; `catalog` turns a server's tools into Brim tools named `server__tool`;
`deferred` is the always-on `search_tools` and `call_tool` pair that keeps deferred
schemas out of the request; `joining` puts loaded tools into the tools block at a
compaction (or at once, for a model that misses `call_tool`); `probe` tests one server
for the agent editor; `errors` words what went wrong, by kind.
"""
