"""Faust wiring of predigest: app, topics, agents, watcher, web views, CLI."""
