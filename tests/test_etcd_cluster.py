"""The throwaway etcd cluster the etcd provider's tests share (tests/etcd_cluster.py)."""

from __future__ import annotations

import base64
from typing import Any

from etcd_cluster import MEMBERS, b64, post


def test_cluster_has_three_members_and_a_leader(etcd_cluster: Any) -> None:
    members = post(etcd_cluster.endpoints[0], "/v3/cluster/member/list", {})["members"]
    assert len(members) == MEMBERS
    if hasattr(etcd_cluster, "wait_leader"):
        assert etcd_cluster.wait_leader() in range(MEMBERS)


def test_a_write_on_one_member_reads_on_another(etcd_cluster: Any) -> None:
    first, *others = etcd_cluster.endpoints
    post(first, "/v3/kv/put", {"key": b64(b"smoke/k"), "value": b64(b"v")})
    for endpoint in others:
        kvs = post(endpoint, "/v3/kv/range", {"key": b64(b"smoke/k")})["kvs"]
        assert base64.b64decode(kvs[0]["value"]) == b"v"
    etcd_cluster.delete_prefix("smoke/")
