"""The maintainers' web page (``docbuild ui``, ``tools/ui_mcp.sh``): every server's build report,
history, search playground, chunk browser, quality over time and live builds."""
