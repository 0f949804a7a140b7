"""No common secret format reaches any byte wop writes or shows: the hostile cases of issue 35 as a real program under
`wop capture` (secrets in its environment, argv, tool results, state, prompts streamed back in pieces by the provider,
exception text), then every byte under the capture directory, the closing line, the HTML report and an OTel export."""

import base64
import gzip
import re
import sys
import textwrap

import orjson

from openwop_cli.format.redact import REDACTED
from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider
from tests.programs import OFFLINE_SDKS

# The 15 formats that leaked under the default profile (made-up values of each format's shape).
FORMATS = {
    "stripe": "sk_live_51HqLyjWDarjtT1zdp7dc0a9b8c7d6e5f4g3h2i1",
    "stripe_restricted": "rk_live_51HqLyjWDarjtT1zdp7dc9Z8Y7X",
    "huggingface": "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",
    "groq": "gsk_" + "q8W2e4R6t8Y0u2I4o6P8a0S2d4F6g8H0j2K4l6Z8x0C2v4B6n8M0",
    "xai": "xai-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7As9Df1Gh3Jk5Lz7Xc9Vb1Nm3Qw5Er7",
    "gitlab": "glpat-Xy9Zq8Wv7Ut6Sr5Qp4On3",
    "npm": "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Y",
    "sendgrid": "SG.Aq1Sw2De3Fr4Gt5Hy6Ju7K.Lo9Pa0Zs1Xd2Cf3Vg4Bh5Nj6Mk7Lp8Qo9Wi0Eu1Ry2Tz3Ux4Vw5",
    "slack_webhook": "https://hooks.slack.com/services/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Y",
    "discord_webhook": "https://discord.com/api/webhooks/112233445566778899/Hq7Wz2Lp9Kd4Ms1Nb6Vc3Xr8Tg5Yf0Ju_-Ai2Se7Dw",
    "azure_storage": "AccountKey=Qm9vYmFyQmF6UXV4Rm9vYmFy+/Zm9vYmFyQmF6UXV4Rm9vYmFyQmF6UXV4Rm9vYmFyQmF6UXV4Rm9vYmFyQmF6==",
    "basic_auth": "Authorization: Basic dXNlcjpTdW1tZXIyMDI0ISE=",
    "cookie": "Cookie: sessionid=f3a9c1e7b5d2; csrftoken=Q1w2E3r4T5y6",
    "private_key_id": '"private_key_id": "7c4d9e2f1a8b3c6d5e0f9a8b7c6d5e4f3a2b1c0d"',
    "telegram": "5812345678:AAF9dKq2LmNpQrStUvWxYz0123456789abc",
}
# The part of each that is the secret (what must not appear, whole or in pieces).
SECRET_PARTS = {name: value.split("=", 1)[-1].split("Basic ")[-1].split("sessionid=")[-1].split('": "')[-1]
                .rstrip('"').rsplit("/", 1)[-1] for name, value in FORMATS.items()}
AWS_ID, AWS_SECRET = "AKIAQ3EGRXZ7EXAMPLE1", "Kq8rT2vW9xY4zA7bC1dE5fG3hJ6kL0mN8pQ2rS4t"
ENV_SECRETS = {"DB_PASS": "Summer2024!db", "AZURE_OPENAI_KEY": "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
               "BILLING_SERVICE_KEY": "bsk-Lm4Np6Qr8St0Uv2W", "GITLAB_PAT": "pat9Hs7Gd5Fa3Jk1Lz"}
ARGV_SECRETS = {"--stripe-key": "sk_test_Zq9Xw8Ev7Rt6Yu5Io4Pa3", "--key": "argvKey-7Yh3Kd9Lq2", "-p": "Hunter2Pass!"}
EVERYTHING = "; ".join([*FORMATS.values(), f"aws {AWS_ID} {AWS_SECRET}", *ENV_SECRETS.values()])

PROGRAM = '''
import os, sys
import openai
import openwop_cli as wop

everything = os.environ["EVERYTHING"]

@wop.tool
def fetch_config(name):
    return {"config": everything, "note": "ok"}

fetch_config("prod")
wop.state.set("settings", {"dump": everything})
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-00000000000000000000")
stream = client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                        messages=[{"role": "user", "content": everything}])
print("streamed", len("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)))
raise RuntimeError("could not reach the billing API with " + everything)
'''


def secret_pieces() -> list[str]:
    """Every 8-character piece of every secret: a secret must not reach a byte whole or in part."""
    secrets = [*SECRET_PARTS.values(), AWS_SECRET, *ENV_SECRETS.values(), *ARGV_SECRETS.values()]
    return sorted({secret[start:start + 8] for secret in secrets for start in range(len(secret) - 7)})


def leaks(where: str, data: bytes) -> list[tuple[str, str]]:
    return [(where, piece) for piece in secret_pieces() if piece.encode() in data]


def exporting():
    """tests/export's fake OTLP collector (skipped without the otel extra)."""
    requires("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from tests.export.test_otel_export import FakeCollector

    return FakeCollector()


def exported_bytes(collector) -> bytes:
    """Every span the collector received, as the protobuf bytes that crossed the wire."""
    return b"".join(span.SerializeToString() for span in collector.spans)


def every_byte_under(path):
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_no_secret_of_the_hostile_program_reaches_the_capture_the_closing_line_the_report_or_an_export(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / "capture"
    argv = [item for flag, value in ARGV_SECRETS.items() for item in (flag, value)]
    with FakeProvider(piece=11) as provider:  # every secret comes back split across chunks
        done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), *argv, cwd=tmp_path,
                       env={**OFFLINE_SDKS, **ENV_SECRETS, "BASE": provider.url, "EVERYTHING": EVERYTHING})
    assert done.returncode == 1 and "RuntimeError" in done.stderr, done.stderr
    assert "streamed" in done.stdout

    closing_line = done.stderr.splitlines()[-1]  # what came before it is the program's own traceback
    assert closing_line.startswith("captured ")
    found = leaks("capture", every_byte_under(out)) + leaks("closing line", closing_line.encode())
    page = tmp_path / "report.html"
    assert run_wop("report", str(out), "-o", str(page)).returncode == 0
    html = page.read_text()
    data = re.search(r'<script id="wop-data" type="application/octet-stream">([^<]*)</script>', html).group(1)
    found += leaks("report", html.encode()) + leaks("report data", gzip.decompress(base64.b64decode(data)))
    with exporting() as collector:
        exported = run_wop("export", "otel", str(out), "--endpoint", collector.url)
    assert exported.returncode == 0, exported.stderr
    found += leaks("otel", exported_bytes(collector)) + leaks("export output", exported.stdout.encode())
    assert not found, found

    written = orjson.loads((out / "manifest.json").read_bytes())
    assert written["program"]["argv"][-6:] == ["--stripe-key", REDACTED, "--key", REDACTED, "-p", REDACTED]
    assert b"streamed" in every_byte_under(out) and collector.spans


def test_a_capture_an_older_wop_left_a_secret_in_shows_none_in_the_report_or_the_export(tmp_path):
    """The report and the export pass what they show through the capture's profile again."""
    from tests.conftest import write_capture
    from tests.format.test_hostile_captures import forge, lines_of

    capture = write_capture(tmp_path / "c", [("tool_call", {"name": "f", "args": {}, "callId": "t1"}),
                                             ("tool_result", {"callId": "t1", "ok": True, "result": "placeholder"})])
    lines = lines_of(capture)
    lines[1] = lines[1].replace(b"placeholder", FORMATS["stripe"].encode())  # as a wop without the pattern wrote it
    forge(capture, lines)
    page = tmp_path / "report.html"
    assert run_wop("report", str(capture), "-o", str(page)).returncode == 0
    data = re.search(r'<script id="wop-data" type="application/octet-stream">([^<]*)</script>', page.read_text()).group(1)
    found = leaks("report data", gzip.decompress(base64.b64decode(data)))
    with exporting() as collector:
        assert run_wop("export", "otel", str(capture), "--endpoint", collector.url).returncode == 0
    found += leaks("otel", exported_bytes(collector))
    assert not found and collector.spans, found
