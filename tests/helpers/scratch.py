"""Scratch directories for tests, removed when the test's process ends."""
import atexit
import shutil
import tempfile


def scratch_dir(prefix):
    """A fresh directory under the temporary directory, named `prefix` + random
    characters, removed with everything in it when the process ends."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
