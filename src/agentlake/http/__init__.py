"""The HTTP edge every door and client of agentlake shares.

One error shape and renderer with one status table (``errors``), one API-key parser, key ring
and scope rank (``keys``), one request-body reader with its size limit (``body``) and, for
outgoing calls, base-URL normalising and error-text extraction (``client``) and the one retry
policy (``retry``). The gateway (``agentlake.gateway``), the observer service
(``agentlake.observe.service``) and the HTTP clients of ``llm``, ``embed`` and ``observe`` use
these, so no package has to import another door to speak HTTP the same way. It owns no routes, no app and no key values.
"""
