"""WSGI entry points and one paste filter, run by the *lab* python (the one with nova).

``stacklens lab up`` copies this file to ``<lab>/py/stacklens_lab_runtime.py`` and puts that
folder on ``PYTHONPATH`` of the gunicorn processes, so it must import nothing from stacklens and
nothing from OpenStack at module level (stacklens's own tests import it too).

Why it exists (``shared/docs/lab-notes.md``):

- WSGI servers pass their own command-line arguments through ``sys.argv``, which nova's config
  parser then rejects: each factory resets the argument list before importing the app.
- Under ``noauth2`` nova-api does not put the token into the request context, and its glance
  client then refuses to call glance ("No valid authentication is available", HTTP 500 on
  ``POST /servers``): :func:`token_filter_factory` copies the header into
  ``context.auth_token``.
"""

from __future__ import annotations

import sys

__all__ = ["glance_api", "nova_api", "placement_api", "token_filter_factory"]


def _reset_argv() -> None:
    sys.argv = sys.argv[:1]


def nova_api():
    """gunicorn factory ``stacklens_lab_runtime:nova_api()`` (config via OS_NOVA_CONFIG_*)."""
    _reset_argv()
    from nova.wsgi.osapi_compute import application

    return application


def placement_api():
    """gunicorn factory for placement-api (config via OS_PLACEMENT_CONFIG_DIR)."""
    _reset_argv()
    from placement.wsgi.api import application

    return application


def glance_api():
    """gunicorn factory for glance-api (config via OS_GLANCE_CONFIG_DIR)."""
    _reset_argv()
    from glance.wsgi.api import application

    return application


def token_filter_factory(global_conf, **local_conf):
    """Paste filter placed after ``noauth2``: ``X-Auth-Token`` -> ``nova.context.auth_token``."""

    def _filter(app):
        def wrapped(environ, start_response):
            ctx = environ.get("nova.context")
            token = environ.get("HTTP_X_AUTH_TOKEN")
            if ctx is not None and token and not getattr(ctx, "auth_token", None):
                ctx.auth_token = token
            return app(environ, start_response)

        return wrapped

    return _filter
