"""Properties of the redactor over generated data: a secret anywhere in any JSON value is gone after redaction, the
prefilter flags every value redaction changes, redacting twice changes nothing more, and a stream's chunks lose every
piece of a secret however the stream splits it."""

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.format.redact import REDACTED, Redactor
from tests.test_secrets_never_leak import FORMATS, SECRET_PARTS

ENV_SECRET = "Zq7-env-Secret-91xK"
REDACTOR = Redactor("default", [ENV_SECRET])
SECRETS = [*FORMATS.values(), ENV_SECRET]
filler = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
plain = st.text("abcdefghij klmnop.,:;-_=\n\"'", max_size=40)


@st.composite
def text_with_a_secret(draw, words=filler):
    secret_index = draw(st.integers(0, len(SECRETS) - 1))
    return draw(words) + " " + SECRETS[secret_index] + " " + draw(words), secret_index


def json_holding(leaf):
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(plain, inner, max_size=3),
                        max_leaves=6)


def pieces_of(index: int) -> list[str]:
    secret = ENV_SECRET if index == len(SECRETS) - 1 else list(SECRET_PARTS.values())[index]
    return [secret[start:start + 8] for start in range(len(secret) - 7)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_holding(text_with_a_secret().map(lambda drawn: drawn[0])), text_with_a_secret())
def test_a_secret_anywhere_in_a_json_value_is_gone_and_the_prefilter_saw_it(value, extra):
    text, index = extra
    value = {"note": text, "nested": value}
    serialized = orjson.dumps(value)
    assert REDACTOR.suspicious(serialized)
    kept = orjson.dumps(REDACTOR.redact(value))
    assert not [piece for piece in pieces_of(index) if piece.encode() in kept]
    assert REDACTOR.redact(orjson.loads(kept)) == orjson.loads(kept)


@settings(max_examples=200, deadline=None)
@given(json_holding(plain))
def test_what_the_prefilter_lets_through_redaction_leaves_as_it_is(value):
    if not REDACTOR.suspicious(orjson.dumps(value)):
        assert REDACTOR.redact(value) == value


@settings(max_examples=150, deadline=None)
@given(text_with_a_secret(plain), st.lists(st.integers(1, 15), min_size=1, max_size=40))
def test_every_piece_of_a_secret_split_across_stream_chunks_is_gone_and_the_chunks_add_up_to_the_redacted_text(
        drawn, sizes):
    text, index = drawn
    pieces, start = [], 0
    for size in sizes * (len(text) // sum(sizes) + 1):
        if start >= len(text):
            break
        pieces.append(text[start:start + size])
        start += size
    stream = [{"data": orjson.dumps({"choices": [{"delta": {"content": piece}}]}).decode()} for piece in pieces]
    data = {"provider": "openai", "ok": True, "stream": stream, "response": {"text": text}}
    kept = REDACTOR.redact_event("llm_response", data)
    joined = "".join(orjson.loads(chunk["data"])["choices"][0]["delta"]["content"] for chunk in kept["stream"])
    assert joined == REDACTOR.scrub_text(text) and REDACTED in joined
    written = orjson.dumps(kept)
    assert not [piece for piece in pieces_of(index) if piece.encode() in written]
