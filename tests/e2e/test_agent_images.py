"""Images in ``submitTurn`` are checked before anything is stored: a bad one would be re-sent on every
later request and fail each, so it is refused with -32602 ``InvalidImage`` naming the field."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import agent_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@pytest.mark.parametrize(
    ("image", "words"),
    [
        ({"mimeType": "image/svg+xml", "data": PNG}, "images[0].mimeType"),
        ({"mimeType": "image/png", "data": "not base64 at all!"}, "not valid base64"),
        ({"mimeType": "image/jpeg", "data": PNG}, "not a image/jpeg image"),
        (
            {"mimeType": "image/png", "data": base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * (21 << 20)).decode()},
            "over",
        ),
    ],
)
async def test_a_bad_image_is_refused_before_anything_is_stored(agent, tmp_path: Path, image, words):
    agent.fake.reset()
    folder = tmp_path / "ws"
    folder.mkdir()
    sid = await agent.session(folder)
    with pytest.raises(RpcError) as refused:
        await agent.client.request("submitTurn", {"sessionId": sid, "text": "look", "images": [image]})
    assert refused.value.code == -32602 and words in refused.value.message, refused.value
    assert refused.value.data["code"] == "InvalidImage"
    assert await agent.transcript(sid) == [] and agent.chat_requests() == []


async def test_a_valid_image_reaches_the_provider(agent, tmp_path: Path):
    agent.fake.reset()
    agent.fake.push({"content": "a pixel"})
    folder = tmp_path / "ws"
    folder.mkdir()
    sid = await agent.session(folder)
    result = await agent.client.request(
        "submitTurn", {"sessionId": sid, "text": "look", "images": [{"mimeType": "image/png", "data": PNG}]}
    )
    assert result["stopReason"] == "endTurn"
    assert sent_image(agent.chat_requests()[-1]) == ("image/png", PNG)


def sent_image(record: dict) -> tuple[str, str] | None:
    """The (media type, base64 data) of the image in the request's last user turn, in its kind's own shape."""
    body = record["body"]
    if record["kind"] == "anthropic":  # {"type": "image", "source": {"type": "base64", "media_type", "data"}}
        blocks = [b for b in body["messages"][-1]["content"] if b.get("type") == "image"]
        return (blocks[0]["source"]["media_type"], blocks[0]["source"]["data"]) if blocks else None
    if record["kind"] == "openai-responses":  # {"type": "input_image", "image_url": "data:...;base64,..."}
        user = [i for i in body["input"] if i.get("role") == "user"][-1]
        urls = [p["image_url"] for p in user["content"] if p.get("type") == "input_image"]
    else:  # {"type": "image_url", "image_url": {"url": "data:...;base64,..."}}
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        urls = [p["image_url"]["url"] for p in user["content"] if p.get("type") == "image_url"]
    if not urls or not urls[0].startswith("data:"):
        return None
    media, _, data = urls[0][len("data:") :].partition(";base64,")
    return media, data
