"""The sans-IO core: key names, script calls, message encoding and reply parsing.

Nothing here talks to Redis; the sync (`sbredis._sync`) and async (`sbredis.aio`) shells run what
this package builds.
"""
