"""Hosts reached over real ssh, for tests: one sshd (Debian's openssh-server) per
loopback address (127.0.0.2, 127.0.0.3, 127.0.0.4, port 2222), host and client keys
generated in a temporary directory, and an ssh config that names them nodeA, nodeB,
nodeC (and nodeD, a closed port). Root; the test process first moves into a network namespace of its own.

    with SshHosts() as hosts:
        subprocess.run(hosts.ssh_cmd + ["nodeA", "hostname"])

Teardown (even when a test fails): every process the sshds started is killed, then the
sshds; the directory removed.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from private_network import isolate_network  # noqa: E402
from processes import children_of  # noqa: E402

HOSTS = {"nodeA": "127.0.0.2", "nodeB": "127.0.0.3", "nodeC": "127.0.0.4"}
CLOSED = ("nodeD", "127.0.0.5")  # nothing listens there
PORT = 2222


class SshHosts:
    def __init__(self):
        self.dir = None
        self.daemons = []
        self.daemon_of = {}  # host name -> its sshd

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        for tool in ("sshd", "ssh", "ssh-keygen"):
            if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
                raise RuntimeError(f"{tool} not found: scripts/install_deps.sh installs "
                                   "openssh-server")
        if not isolate_network():
            raise RuntimeError("cannot create a network namespace (root needed)")
        self.dir = tempfile.mkdtemp(prefix="ddprun_ssh_")
        d = self.dir
        os.makedirs("/run/sshd", exist_ok=True)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(d, key)], check=True)
        shutil.copy(os.path.join(d, "client_key.pub"), os.path.join(d, "authorized_keys"))
        client = []
        for name, addr in [*HOSTS.items(), CLOSED]:
            client.append(f"""Host {name}
  HostName {addr}
  Port {PORT}
  User root
  IdentityFile {d}/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
""")
        with open(os.path.join(d, "ssh_config"), "w") as f:
            f.write("\n".join(client))
        self.ssh_cmd = ["ssh", "-F", os.path.join(d, "ssh_config")]
        for name, addr in HOSTS.items():
            conf = os.path.join(d, f"sshd_{name}.conf")
            with open(conf, "w") as f:
                f.write(f"""ListenAddress {addr}:{PORT}
HostKey {d}/host_key
PidFile {d}/sshd_{name}.pid
AuthorizedKeysFile {d}/authorized_keys
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
PrintMotd no
LogLevel ERROR
""")
            sshd = shutil.which("sshd") or "/usr/sbin/sshd"
            with open(os.path.join(d, f"sshd_{name}.log"), "ab") as log:
                self.daemons.append(subprocess.Popen([sshd, "-D", "-e", "-f", conf],
                                                     stdout=log, stderr=subprocess.STDOUT))
                self.daemon_of[name] = self.daemons[-1]
        deadline = time.monotonic() + 20
        for addr in HOSTS.values():
            while not self.accepts(addr):
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.daemons):
                    raise RuntimeError("sshd did not start:\n" + self.logs())
                time.sleep(0.05)

    @staticmethod
    def accepts(addr):
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((addr, PORT)) == 0

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out.append(f"--- {name}\n{f.read()[-3000:]}")
        return "\n".join(out)

    def remote_processes(self):
        """Every process an sshd started (sessions and what they run)."""
        return children_of({p.pid for p in self.daemons})

    def host_processes(self, name):
        """Every process host `name`'s sshd started."""
        return children_of({self.daemon_of[name].pid})

    def stop(self):
        for pid in self.remote_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for p in self.daemons:
            p.kill()
            p.wait()
        self.daemons = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
