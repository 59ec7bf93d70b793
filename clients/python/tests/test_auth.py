"""A node with `[auth] enabled`: no key, a wrong key and a key without the right are refused."""

from __future__ import annotations

import pytest

from hindsight_client import HindsightClient, PermissionDenied, Unauthenticated


def test_a_node_with_auth_refuses_requests_without_a_key(auth_node, bank: str):
    with HindsightClient(auth_node.url, api_key="") as anonymous:
        with pytest.raises(Unauthenticated) as info:
            anonymous.write(bank, "Anyone can write here?", source="user")
        assert info.value.status == 401 and info.value.code == "unauthenticated"
        with pytest.raises(Unauthenticated):
            anonymous.recall(bank, "anything")
        with pytest.raises(Unauthenticated):
            anonymous.status()
        # Probes stay open so that an orchestrator can check the node without a key.
        assert anonymous.ready() is True


def test_a_wrong_key_is_refused(auth_node, bank: str):
    with HindsightClient(auth_node.url, api_key="hs_nobody_0123456789abcdef0123") as stranger:
        with pytest.raises(Unauthenticated):
            stranger.recall(bank, "anything")


def test_the_admin_key_is_accepted(auth_node, admin_key: str, bank: str):
    with HindsightClient(auth_node.url, api_key=admin_key) as admin:
        written = admin.write(bank, "The admin key opens every bank.", source="user")
        assert written.disposition == "created"
        assert admin.recall(bank, "What does the admin key open?").ids == [written.id]
        assert admin.status().ready


def test_the_key_is_read_from_the_environment(auth_node, admin_key: str, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_API_KEY", admin_key)
    with HindsightClient(auth_node.url) as client:
        assert client.status().ready


def test_a_read_only_key_cannot_write(auth_node, admin_key: str, bank: str):
    with HindsightClient(auth_node.url, api_key=admin_key) as admin:
        fact = admin.write(bank, "Reader keys may only recall.", source="user")
        created = admin.keys.create("reader", [f"{bank}=read"])
        assert created.key.startswith("hs_")
        assert created.info.principal == "reader"
        assert created.info.id in [k.id for k in admin.keys.list()]

        with HindsightClient(auth_node.url, api_key=created.key) as reader:
            assert reader.recall(bank, "What may reader keys do?").ids == [fact.id]
            with pytest.raises(PermissionDenied) as info:
                reader.write(bank, "Readers write too.", source="user")
            assert info.value.status == 403
            with pytest.raises(PermissionDenied):
                reader.recall(bank + "-elsewhere", "anything")

            revoked = admin.keys.revoke(created.info.id)
            assert revoked.revoked_at
            with pytest.raises(Unauthenticated):
                reader.recall(bank, "What may reader keys do?")

