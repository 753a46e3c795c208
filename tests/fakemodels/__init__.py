"""Fake model APIs for the real-agent tests: scripted, stateless, 127.0.0.1 only.

A real agent CLI (Claude Code, Gemini CLI, Codex) is pointed at one of these servers instead
of its provider. Each answer is picked from a :class:`fakemodels.script.Script` by
reading the conversation the agent sends: the latest user text carrying a ``[[script:NAME]]``
marker names the script, and the number of tool results after it is the step. No state is
kept between requests, so retries and side calls cannot shift the script.

- :mod:`.script` — scripts, steps, and reading a conversation (no I/O).
- :mod:`.providers` — the three wire formats (Anthropic Messages, Gemini, OpenAI Responses).
- :mod:`.server` — the HTTP server (stdlib ``http.server`` on a free port, in a thread or
  ``cd tests && python -m fakemodels``).
"""
