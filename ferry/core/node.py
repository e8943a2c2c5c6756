"""Node.js as Ferry starts it: the AWS CDK's jsii runtime (the local runtime's synth, the
doctor's reading of the settings) runs in a ``node`` process of its own.

jsii prints an 11-line banner on every start when the Node.js release is past (or near) the
end of its support by jsii, whatever the command; Ferry's commands say what they did in one
line each, so Ferry silences that banner (and only it) before the CDK is first imported, with
jsii's own variables. A person who set them keeps their values. Node's and jsii's errors and
warnings of any other kind still reach stderr.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import MutableMapping
from functools import lru_cache

#: jsii's variables: the major Node.js versions whose end-of-life banner is not printed; any
#: value silences the banner of a version near its end.
END_OF_LIFE = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
DEPRECATED = "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION"


@lru_cache(maxsize=1)
def major_version(node: str = "node") -> str | None:
    """The major version of the ``node`` on the PATH (``20``), or None when there is none."""
    found = shutil.which(node)
    if found is None:
        return None
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    version = done.stdout.strip().removeprefix("v")
    return version.split(".", 1)[0] if done.returncode == 0 and version else None


def quiet_jsii(environ: MutableMapping[str, str] | None = None) -> None:
    """Silence jsii's Node.js release banner in ``environ`` (this process's environment,
    inherited by the ``node`` process the CDK starts); call before ``aws_cdk`` is imported."""
    environ = os.environ if environ is None else environ
    if END_OF_LIFE not in environ:
        major = major_version(environ.get("JSII_NODE", "node"))
        if major:
            environ[END_OF_LIFE] = major
    environ.setdefault(DEPRECATED, "1")
