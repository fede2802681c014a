"""``grid serve``: CiGri's REST API over the state file the almighty cycle uses (issue 25, items 1 and 2).

- :mod:`.identity`: who asks: the trusted proxy's header (only from the trusted addresses) or, on a Unix
  socket, the peer's credentials; anyone else is anonymous and may only read what the commands show anyone.
- :mod:`.http`: the HTTP edge: resources and their methods (the ``Allow`` header), JSON answers (``?pretty``,
  ``links``), and cigri's error tree mapped once to status codes and one-line messages.
- :mod:`.app`: the routes, each a thin call into the library the commands use (owner checks included).
- :mod:`.listen`: where it listens; :mod:`.server`: uvicorn there.

Starlette and uvicorn are the optional ``service`` extra: importing :mod:`.http`, :mod:`.app` or
:mod:`.server` without them raises ImportError, which ``grid serve`` turns into one line; :mod:`.identity`
and :mod:`.listen` need neither.
"""
