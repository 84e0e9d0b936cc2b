"""A port for a test's agent to listen on."""
import random
import socket


def free_port():
    """A port free on 127.0.0.1 now, below Linux's ephemeral range (32768 and up): a port
    the kernel hands out would go to a concurrent test's outgoing connection as often as
    not, and an agent meant to listen there would then find it taken."""
    while True:
        port = random.randrange(10000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
