"""Runtimes for OpenFaaS python3-http functions (``handle(event, context)``).

The same handler file runs unchanged in each of Continuum's modes:

- ``server``: one long-lived HTTP server process that calls the handler for every request
  (the upstream of the ``http`` mode behind the Go watchdog, and the ``micro`` mode);
- ``flaskapp``: the same behind Flask + Waitress with one worker thread, the seed's
  microservice and OpenFaaS' own python3-http template server;
- ``classic``: one process per request, the request on stdin and the response on stdout, as
  the classic watchdog runs functions;
- ``zygote``: a process that has imported the handler once and forks ready instances.

What a handler receives and may return is in :mod:`continuum_functions.event` (the request
side in :mod:`continuum_functions.request`, the answer in :mod:`continuum_functions.response`).
"""
