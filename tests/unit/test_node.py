"""jsii's Node.js release banner is silenced with jsii's own variables, for the ``node`` that
runs it; a person's own setting stands."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ferry.core import node


@pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js here")
def test_the_banner_is_silenced_for_the_node_on_the_path():
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    environment: dict[str, str] = {}
    node.quiet_jsii(environment)
    assert environment == {
        node.END_OF_LIFE: version.strip().removeprefix("v").split(".")[0],
        node.DEPRECATED: "1",
    }


def test_a_setting_of_ones_own_is_kept():
    environment = {node.END_OF_LIFE: "18", node.DEPRECATED: ""}
    node.quiet_jsii(environment)
    assert environment == {node.END_OF_LIFE: "18", node.DEPRECATED: ""}


def test_without_node_nothing_is_set_but_the_deprecation_banner():
    environment = {"JSII_NODE": "no-such-node-binary"}
    node.quiet_jsii(environment)
    assert node.END_OF_LIFE not in environment
