"""Training environments (issue 22): the Python prefixes tasks run in, apart from Argus's own.

``catalog``: the environments Argus ships a lock for; ``registry``: the ones a cluster has
(built or registered) on the shared filesystem; ``build``: making one from a lock;
``probe``: what one really holds (stdlib only, run by the environment's own interpreter).
"""
