"""A contract OAR, built from OAR's public documentation, to test cigri's OAR adapters against.

- ``contract.OarState``: the cluster (resources, jobs, injected clock) in one JSON file.
- ``server.OarServer``: the OAR 2.5 "oarapi" or OAR 3 REST API on that state.
- ``fake_commands``: ``oarsub``, ``oarstat``, ``oardel`` on that state, for the ssh adapter.

Only the standard library is used here, so the fake commands run under any python3 (the user cigritest cannot
run the venv's python). Where each documented fact comes from: ``fixtures/README.md``.
"""
