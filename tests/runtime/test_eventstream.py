"""AWS event-stream frames: split for the record and encoded back byte for byte, so botocore parses a replay."""

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_cli.runtime.adapters.eventstream import assemble, frame_bytes, split_frames
from tests.fake_provider import event_stream_frame

names = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
typed = st.sampled_from([{"type": 0, "base64": ""}, {"type": 1, "base64": ""}]) | st.binary(max_size=30).map(
    lambda raw: {"type": 6, "base64": base64.b64encode(raw).decode()})
events = st.lists(st.fixed_dictionaries({"headers": st.dictionaries(names, st.text(max_size=40) | typed, max_size=4),
                                         "data": st.text(max_size=200)}), max_size=6)


@given(events)
def test_split_undoes_frame_bytes(recorded):
    assert split_frames(b"".join(frame_bytes(event) for event in recorded)) == recorded


@given(st.binary(max_size=300))
def test_split_never_fails_on_garbage(data):
    split_frames(data)


def test_a_recorded_stream_is_re_encoded_byte_for_byte():
    wire = [event_stream_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}),
            event_stream_frame("messageStop", {"stopReason": "end_turn"})]
    recorded = split_frames(b"".join(wire))
    assert [frame_bytes(event) for event in recorded] == wire
    assert split_frames(b"".join(wire)[:-3]) == recorded[:1]  # a frame cut off at the end is left out


def test_botocore_parses_the_re_encoded_frames():
    botocore_eventstream = pytest.importorskip("botocore.eventstream")
    recorded = [{"headers": {":event-type": "metadata", ":content-type": "application/json", ":message-type": "event",
                             "flag": {"type": 0, "base64": ""}}, "data": '{"usage": {"inputTokens": 1}}'},
                {"headers": {":event-type": "chunk"}, "dataBase64": "AAEC"}]
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(b"".join(frame_bytes(event) for event in recorded))
    messages = list(buffer)
    assert [message.headers.get(":event-type") for message in messages] == ["metadata", "chunk"]
    assert messages[0].headers["flag"] is True and messages[1].payload == b"\x00\x01\x02"
    damaged = bytearray(frame_bytes(recorded[0]))
    damaged[-1] ^= 1
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(bytes(damaged))
    with pytest.raises(botocore_eventstream.ChecksumMismatch):
        list(buffer)


def test_assemble_reads_converse_stream_events_and_invoke_model_chunks():
    def frame(kind, payload):
        return {"headers": {":event-type": kind}, "data": json.dumps(payload)}

    converse = [frame("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1",
                                                                                          "name": "lookup"}}}),
                frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi "}}),
                frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"id":'}}}),
                frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": ' 1}'}}}),
                frame("messageStop", {"stopReason": "tool_use"}), frame("metadata", {"usage": {"outputTokens": 3}})]
    assert assemble(converse) == {"text": "hi ", "toolCalls": [{"id": "t1", "name": "lookup", "arguments": '{"id": 1}'}],
                                  "stopReason": "tool_use", "usage": {"outputTokens": 3}}
    inner = [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "yo"}},
             {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}]
    chunks = [frame("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()}) for event in inner]
    assert assemble(chunks)["text"] == "yo" and assemble(chunks)["stopReason"] == "end_turn"
