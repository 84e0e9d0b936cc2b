"""A network namespace of the test process' own, for tests that start daemons (Slurm,
sshd): they can be reached from nowhere else, and fixed ports collide with nothing.
"""
import ctypes
import subprocess

CLONE_NEWNET = 0x40000000


def isolate_network():
    """True when this process now has a network namespace of its own (loopback only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return False
    # A veth pair with both ends inside (it reaches nothing) and an address: without any
    # address but loopback, getaddrinfo(AI_ADDRCONFIG) finds nothing and slurmd cannot bind.
    for cmd in (["ip", "link", "set", "lo", "up"],
                ["ip", "link", "add", "ddprun0", "type", "veth", "peer", "name", "ddprun1"],
                ["ip", "addr", "add", "10.253.0.1/32", "dev", "ddprun0"],
                ["ip", "link", "set", "ddprun0", "up"]):
        subprocess.run(cmd, check=True)
    return True
